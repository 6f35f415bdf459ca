"""Chapter 07: the invoice log the chapter measures: 200 seeded create_invoice calls, 6 of them malformed.

``simulate_log`` runs seeded ``create_invoice`` calls through a real host and
a real audit log against ``Books`` with its faults turned on (rate limits,
timeouts after the effect, wrong amounts); the rates are then *read back* from
the log by ``course.worlds.metrics``. With ``guarded`` the host's
``RetryController`` decides retries (same key only); without it
``BlindRetry`` resends after a timeout under a fresh key, which duplicates the
invoice. ``drift`` shows the schema-violation rate climbing window by window
as a model's habits (``MALFORMED``) drift away from the schema.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from toolkit.kernel import Caller, Host, Retry, Status, Tool, request
from toolkit.kernel import Action, RetryController, RetryDecision, RetryPolicy, RetryState
from toolkit.effects import AuditLog, run_audited
from course.worlds.metrics import MetricsReport, measure, rows_from_attempts, rows_from_audit
from course.worlds import LOG_FAULTS, Books
from course.worlds import invoice_contract

#: Ways a model's habits break the invoice schema (each is caught by the real validator).
MALFORMED = (
    ("amount as text", lambda a: {**a, "amount": str(a["amount"])}),
    ("currency missing", lambda a: {k: v for k, v in a.items() if k != "currency"}),
    ("stray field", lambda a: {**a, "note": "as discussed"}),
    ("lower-case currency", lambda a: {**a, "currency": a["currency"].lower()}),
    ("order id without prefix", lambda a: {**a, "order_id": a["order_id"].split("-")[1]}),
)

#: The agent whose calls make up the log.
BILLING_AGENT = Caller("agent-427", frozenset({"billing.write"}))


def log_books(seed: int = 7, p_unapproved: float = 0.03, faults: Any = None) -> Books:
    """The billing service of the log: it honours keys, approves most orders, and fails now and then."""
    return Books(honour_keys=True, seed=seed, p_unapproved=p_unapproved,
                 faults=dict(LOG_FAULTS if faults is None else faults))


@dataclass
class Simulation:
    """What ``simulate_log`` leaves behind: the audit log, the world, and the injected positions."""

    log: Any
    world: Books = field(repr=False)
    malformed_at: tuple[int, ...] = ()

    def report(self) -> MetricsReport:
        return measure(rows_from_audit(self.log))


class BlindRetry:
    """A retry 'controller' with no rules: always retry, at once, up to ``limit`` times per call."""

    def __init__(self, limit: int = 2):
        self.limit, self.used = limit, {}

    def decide(self, contract: Any, original: Any, result: Any, retry: Any = None, took: float = 0.0) -> Any:
        n = self.used.get(original.call_id, 0)
        if result.status in (Status.REJECTED, Status.CANCELLED, Status.SUCCEEDED) or n >= self.limit:
            return RetryDecision(Action.REFUSE, RetryState(n, 0.0), 0.0, "blind retry limit")
        self.used[original.call_id] = n + 1
        return RetryDecision(Action.RETRY, RetryState(n + 1, 0.0), 0.0, "blind retry")


def simulate_log(calls: int = 200, schema_errors: int = 6, seed: int = 7, guarded: bool = True,
                 task_size: int = 5, db: Any = ":memory:") -> Simulation:
    """Run ``calls`` seeded ``create_invoice`` calls through a host and an audit log.

    ``schema_errors`` calls, at seeded positions, are written the malformed
    way a model's habit produces them; everything else about the log (which
    calls are rejected, retried, time out, fail a postcondition) comes from
    the host, the controller and the simulated service. Without ``guarded``
    a timed-out call is resent under a fresh key, and the contract wrongly
    declares ``create_invoice`` safe to resend (so the host's chapter 06 rule,
    which refuses a new key while an outcome is unknown, is not asked): that
    duplicates the invoice just as the duplicate-invoice trace did (there the
    key was kept, but the billing service ignored it).
    """
    rng = random.Random(seed)
    world = log_books(seed)
    contract = invoice_contract() if guarded else replace(invoice_contract(), retry=Retry.SAFE)
    host = Host.of([Tool(contract, world.issue)], BILLING_AGENT, world)
    log = AuditLog(db)
    malformed_at = tuple(sorted(rng.sample(range(calls), schema_errors)))
    controller = (RetryController(RetryPolicy(d0=1, beta=2, n_max=4), budget=None, seed=seed) if guarded
                  else BlindRetry())
    fresh = iter(range(1, 10**9))

    def ask(call: Any, result: Any) -> Any:
        if guarded or result.status is not Status.TIMEOUT:
            return call
        key = f"{call.arguments['idempotency_key']}:retry{next(fresh)}"   # "it did not answer: send it again"
        return replace(call, arguments={**call.arguments, "idempotency_key": key})

    for i in range(calls):
        order_id = f"order-{i + 1}"
        amount = float(rng.randrange(20, 500))
        world.open_order(order_id, amount)
        arguments = {"order_id": order_id, "amount": amount, "currency": rng.choice(["EUR", "USD", "GBP"]),
                     "idempotency_key": f"invoice:{order_id}:v1"}
        if i in malformed_at:
            arguments = MALFORMED[malformed_at.index(i) % len(MALFORMED)][1](arguments)
        call = request("create_invoice", arguments, call_id=f"call_{i + 1}")
        before = len(world.invoices)
        record = run_audited(host, call, log, "agent-427", controller, ask=ask)
        log.mark(record, "task", note=f"task-{i // task_size + 1}")
        for invoice in world.invoices[before:]:
            log.mark(record, "effect", note=invoice["order_id"])
        if record.state.value == "failed" and "postcondition" in {t.failure for t in record.transitions}:
            for invoice in world.invoices[before:]:      # compensate: void what the broken call created
                world.void(invoice["invoice_id"])
            log.mark(record, "rollback", note="voided the wrong invoice")
        billed = len(world.live_invoices(order_id))
        if billed:
            log.mark(record, "utility", value=1.0 - (billed - 1), note=f"{billed} live invoice(s)")
    return Simulation(log, world, malformed_at)


def drift(windows: int = 8, calls_per_window: int = 200, seed: int = 5, start: float = 0.01,
          growth: float = 0.015) -> list[dict[str, Any]]:
    """Schema-violation rate per window while a model's habits drift away from the schema.

    In window ``w`` each call is written in a stale habit (one of ``MALFORMED``)
    with probability ``start + growth * w``, drawn from a seeded generator; the
    real validator decides what is a violation and the rate is read from the
    host's log. Returns plain rows for a table or a plot.
    """
    rng = random.Random(seed)
    out = []
    for w in range(windows):
        world = log_books(seed + w, p_unapproved=0.0, faults={})
        host = Host.of([Tool(invoice_contract(), world.issue)], BILLING_AGENT, world)
        habit = start + growth * w
        for i in range(calls_per_window):
            order_id = f"order-{w}{i:04d}"
            world.open_order(order_id, 100.0)
            arguments = {"order_id": order_id, "amount": 100.0, "currency": "EUR",
                         "idempotency_key": f"invoice:{order_id}:v1"}
            if rng.random() < habit:
                arguments = rng.choice(MALFORMED)[1](arguments)
            host.execute(request("create_invoice", arguments, call_id=f"w{w}_call_{i + 1}"))
        report = measure(rows_from_attempts(host.log))
        out.append({"window": w + 1, "calls": report.calls, "schema_violations": report.schema_violations.hits,
                    "rate": round(report.schema_violations.value, 4), "habit": round(habit, 4)})
    return out


__all__ = ["BILLING_AGENT", "BlindRetry", "MALFORMED", "Simulation", "drift", "log_books", "simulate_log"]
