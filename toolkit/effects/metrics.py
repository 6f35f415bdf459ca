"""Chapter 07: what to measure: tool evaluation counted from ordinary logs.

The chapter's list, each one a ratio with its numerator and denominator kept
(a rate without its counts cannot be checked):

* schema and precondition violation rates (per call);
* postcondition success (per call that ran);
* duplicate-side-effect rate (per logical operation that had an effect);
* rollback frequency (per call that ran);
* partial progress after failed calls (per failed call: did its task still
  move forward afterwards?);
* utility gain per call, under a fixed budget of calls.

``measure`` reads neutral ``CallRow``s; ``rows_from_audit`` builds them from
an ``AuditLog`` and ``rows_from_attempts`` from a host's attempt log.
``simulate_log`` produces the chapter's example: 200 seeded invoice calls,
6 of them malformed, run through a real host and a real audit log; the rate
is then *read back* from the log. ``drift`` shows the schema-violation rate
climbing window by window as a model's habits drift away from the schema.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from toolkit.core import LAYER_OF
from toolkit.core import Condition
from toolkit.core import FailureClass, Status, ToolFailure


@dataclass(frozen=True)
class Rate:
    """``hits`` out of ``total``; ``value`` is 0.0 when there is nothing to count."""

    hits: int
    total: int

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.hits}/{self.total} = {100 * self.value:.1f}%"


@dataclass(frozen=True)
class CallRow:
    """One call as the metrics see it.

    ``final`` is the record state the call stopped in; ``failures`` the failure
    classes logged for it (a rejection lists every failing test);
    ``effects`` names the logical operation of each durable side effect it
    caused (``("order-7",)``: one invoice for order 7).
    """

    call_id: str
    final: str
    task: str = ""
    tool: str = ""
    failures: tuple[str, ...] = ()
    retries: int = 0
    ran: bool = False
    effects: tuple[str, ...] = ()
    rolled_back: bool = False
    utility: float = 0.0


@dataclass(frozen=True)
class MetricsReport:
    """Every measure of the chapter for one log."""

    calls: int
    schema_violations: Rate
    precondition_violations: Rate
    postcondition_success: Rate
    duplicate_side_effects: Rate
    rollbacks: Rate
    progress_after_failure: Rate
    retries: int
    utility: float

    @property
    def utility_per_call(self) -> float:
        return self.utility / self.calls if self.calls else 0.0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls}
        for name in ("schema_violations", "precondition_violations", "postcondition_success",
                     "duplicate_side_effects", "rollbacks", "progress_after_failure"):
            out[name] = round(getattr(self, name).value, 6)
        out["retries"] = self.retries
        out["utility_per_call"] = round(self.utility_per_call, 6)
        return out

    def lines(self) -> list[str]:
        rows = [("calls", str(self.calls)),
                ("schema violation rate", str(self.schema_violations)),
                ("precondition violation rate", str(self.precondition_violations)),
                ("postcondition success", str(self.postcondition_success)),
                ("duplicate-side-effect rate", str(self.duplicate_side_effects)),
                ("rollback frequency", str(self.rollbacks)),
                ("progress after a failed call", str(self.progress_after_failure)),
                ("retries granted", str(self.retries)),
                ("utility gain per call", f"{self.utility_per_call:.3f}")]
        return [f"{name:<30} {value}" for name, value in rows]


FAILED_STATES = frozenset({"failed", "rejected", "timeout", "cancelled", "awaiting_human"})


def measure(rows: Sequence[CallRow]) -> MetricsReport:
    """Compute every measure from call rows (in the order the calls were made)."""
    rows = list(rows)
    n = len(rows)
    ran = [r for r in rows if r.ran]
    per_operation: dict[str, int] = {}
    for r in rows:
        for op in r.effects:
            per_operation[op] = per_operation.get(op, 0) + 1
    failed_then = 0
    failed = [i for i, r in enumerate(rows) if r.final in FAILED_STATES]
    for i in failed:
        task = rows[i].task
        failed_then += any(later.task == task and later.final == "succeeded" for later in rows[i + 1:])
    return MetricsReport(
        calls=n,
        schema_violations=Rate(sum("schema" in r.failures for r in rows), n),
        precondition_violations=Rate(sum("precondition" in r.failures for r in rows), n),
        postcondition_success=Rate(sum(r.final == "succeeded" for r in ran), len(ran)),
        duplicate_side_effects=Rate(sum(k > 1 for k in per_operation.values()), len(per_operation)),
        rollbacks=Rate(sum(r.rolled_back for r in ran), len(ran)),
        progress_after_failure=Rate(failed_then, len(failed)),
        retries=sum(r.retries for r in rows),
        utility=sum(r.utility for r in rows),
    )


def rows_from_audit(log: Any) -> list[CallRow]:
    """Rebuild call rows from an ``AuditLog``'s events.

    Marks the metrics read: ``task`` (note: the task id), ``effect`` (note: the
    logical operation), ``rollback``, and ``utility`` (value).
    """
    rows: dict[str, dict[str, Any]] = {}
    for e in log.events():
        row = rows.setdefault(e["call_id"], {"call_id": e["call_id"], "tool": e["tool"], "final": "requested",
                                             "failures": [], "effects": [], "ran": False, "retries": 0,
                                             "rolled_back": False, "utility": 0.0, "task": ""})
        if e["kind"] == "transition":
            row["final"] = e["target"]
            row["retries"] = max(row["retries"], e["retries"])
            row["ran"] |= e["target"] == "running"
            for klass in filter(None, e["failure"].split(",")):
                if klass not in row["failures"]:
                    row["failures"].append(klass)
        elif e["target"] == "task":
            row["task"] = e["note"]
        elif e["target"] == "effect":
            row["effects"].append(e["note"])
        elif e["target"] == "rollback":
            row["rolled_back"] = True
        elif e["target"] == "utility":
            row["utility"] += e["value"] or 0.0
    return [CallRow(**{**r, "failures": tuple(r["failures"]), "effects": tuple(r["effects"])})
            for r in rows.values()]


def rows_from_attempts(attempts: Iterable[Any], task_of: Any = None) -> list[CallRow]:
    """Call rows from a host's ``Attempt`` log (attempts with the same call id are one call).

    Effects, rollbacks and utility are not in a host log; they stay empty.
    """
    from toolkit.effects.records import FROM_STATUS

    grouped: dict[str, list[Any]] = {}
    for a in attempts:
        grouped.setdefault(a.call.call_id, []).append(a)
    rows = []
    for call_id, group in grouped.items():
        failures: list[str] = []
        for a in group:
            classes = [LAYER_OF[name].failure_class.value for name in a.verdict.blocked_by]
            if a.result.failure_class is not None:
                classes.append(a.result.failure_class.value)
            for klass in classes:
                if klass not in failures:
                    failures.append(klass)
        last = group[-1]
        rows.append(CallRow(call_id, FROM_STATUS[last.result.status].value,
                            task=task_of(last.call) if task_of else "", tool=last.call.name,
                            failures=tuple(failures), retries=len(group) - 1,
                            ran=any(a.verdict.legal for a in group)))
    return rows


# ------------------------------------------------------------------ the simulated billing log
@dataclass
class Billing:
    """A seeded billing service for ``create_invoice`` that honours idempotency keys.

    Per (order, attempt) it may answer normally, fail transiently
    (``rate_limited``, nothing created), time out *after* creating the invoice
    (the answer is lost, the effect is not), or create the invoice with a wrong
    amount (a broken postcondition, later voided). A repeated key returns the
    invoice already made for it.
    """

    seed: int = 7
    p_unapproved: float = 0.03
    faults: Mapping[str, float] = field(default_factory=lambda: {
        "rate_limited": 0.05, "timeout_after_effect": 0.03, "wrong_amount": 0.02})
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    invoices: list[dict[str, Any]] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)

    def open_order(self, order_id: str, amount: float) -> None:
        approved = random.Random(f"{self.seed}:approve:{order_id}").random() >= self.p_unapproved
        self.orders[order_id] = {"approved": approved, "amount": amount}

    def order(self, order_id: str) -> dict[str, Any] | None:
        return self.orders.get(order_id)

    def invoices_with_key(self, key: str) -> list[dict[str, Any]]:
        return [i for i in self.invoices if i["idempotency_key"] == key and not i["void"]]

    def live_invoices(self, order_id: str) -> list[dict[str, Any]]:
        return [i for i in self.invoices if i["order_id"] == order_id and not i["void"]]

    def fault(self, order_id: str, attempt: int) -> str:
        draw = random.Random(f"{self.seed}:fault:{order_id}:{attempt}").random()
        for name, p in self.faults.items():
            if draw < p:
                return name
            draw -= p
        return "ok"

    def create(self, arguments: dict, _world: Any = None) -> dict[str, Any]:
        order_id, key = arguments["order_id"], arguments["idempotency_key"]
        known = self.invoices_with_key(key)
        if known:                                       # the service recognises the key
            return {"invoice_id": known[0]["invoice_id"], "amount": known[0]["amount"], "replayed": True}
        attempt = self.attempts[order_id] = self.attempts.get(order_id, 0) + 1
        fault = self.fault(order_id, attempt)
        if fault == "rate_limited":
            raise ToolFailure(Status.RECOVERABLE_FAILURE, "rate_limited", "try again shortly")
        amount = arguments["amount"] * (10 if fault == "wrong_amount" else 1)
        invoice = {"invoice_id": f"INV-{len(self.invoices) + 9}", "order_id": order_id, "amount": amount,
                   "idempotency_key": key, "void": False}
        self.invoices.append(invoice)
        if fault == "timeout_after_effect":
            raise ToolFailure(Status.TIMEOUT, "no_answer", "the service did not answer in time",
                              FailureClass.TIMEOUT)
        return {"invoice_id": invoice["invoice_id"], "amount": amount,
                "evidence": {"invoice_id": invoice["invoice_id"], "ledger_entry": key}}

    def void(self, invoice_id: str) -> None:
        for invoice in self.invoices:
            if invoice["invoice_id"] == invoice_id:
                invoice["void"] = True


def _amount_matches(arguments: dict, output: Any, world: Any) -> bool:
    return isinstance(output, dict) and output.get("amount") == arguments["amount"]


def invoice_contract() -> Any:
    """``create_invoice`` with one more promise: the invoice bills the amount asked for."""
    from toolkit.worlds import CREATE_INVOICE

    return replace(CREATE_INVOICE, postconditions=CREATE_INVOICE.postconditions + (
        Condition("amount_matches", "the invoice bills the requested amount", _amount_matches),))


#: Ways a model's habits break the invoice schema (each is caught by the real validator).
MALFORMED = (
    ("amount as text", lambda a: {**a, "amount": str(a["amount"])}),
    ("currency missing", lambda a: {k: v for k, v in a.items() if k != "currency"}),
    ("stray field", lambda a: {**a, "note": "as discussed"}),
    ("lower-case currency", lambda a: {**a, "currency": a["currency"].lower()}),
    ("order id without prefix", lambda a: {**a, "order_id": a["order_id"].split("-")[1]}),
)


@dataclass
class Simulation:
    """What ``simulate_log`` leaves behind: the audit log, the world, and the injected positions."""

    log: Any
    world: Billing = field(repr=False)
    malformed_at: tuple[int, ...] = ()

    def report(self) -> MetricsReport:
        return measure(rows_from_audit(self.log))


class BlindRetry:
    """A retry 'controller' with no rules: always retry, at once, up to ``limit`` times per call."""

    def __init__(self, limit: int = 2):
        self.limit, self.used = limit, {}

    def decide(self, contract: Any, original: Any, result: Any, retry: Any = None, took: float = 0.0) -> Any:
        from toolkit.effects.backoff import Action, RetryDecision, RetryState

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
    the host, the controller and the simulated service. With ``guarded`` the
    host's ``RetryController`` decides retries (same key only); without it a
    blind retry resends after a timeout under a fresh key, which duplicates the
    invoice just as the duplicate-invoice trace did (there the key was kept,
    but the billing service ignored it).
    """
    from toolkit.effects.audit import AuditLog, run_audited
    from toolkit.effects.backoff import RetryPolicy, RetryController
    from toolkit.core import request
    from toolkit.core import Host, Tool
    from toolkit.core import Caller

    rng = random.Random(seed)
    world = Billing(seed=seed)
    contract = invoice_contract()
    host = Host.of([Tool(contract, world.create)], Caller("agent-427", frozenset({"billing.write"})), world)
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


# ------------------------------------------------------------------ drift
def drift(windows: int = 8, calls_per_window: int = 200, seed: int = 5, start: float = 0.01,
          growth: float = 0.015) -> list[dict[str, Any]]:
    """Schema-violation rate per window while a model's habits drift away from the schema.

    In window ``w`` each call is written in a stale habit (one of ``MALFORMED``)
    with probability ``start + growth * w``, drawn from a seeded generator; the
    real validator decides what is a violation and the rate is read from the
    host's log. Returns plain rows for a table or a plot.
    """
    from toolkit.core import request
    from toolkit.core import Host, Tool
    from toolkit.core import Caller

    rng = random.Random(seed)
    out = []
    for w in range(windows):
        world = Billing(seed=seed + w, p_unapproved=0.0, faults={})
        host = Host.of([Tool(invoice_contract(), world.create)],
                       Caller("agent-427", frozenset({"billing.write"})), world)
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


__all__ = ["Billing", "BlindRetry", "CallRow", "MALFORMED", "Rate", "MetricsReport", "Simulation", "drift",
           "invoice_contract", "measure", "rows_from_attempts", "rows_from_audit", "simulate_log"]
