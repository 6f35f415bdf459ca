"""Chapter 05: the duplicate-invoice trace, reproduced with a process that really dies.

The chapter's five lines::

    t0  agent sends create_invoice(order-431, key=invoice:order-431:v1)
    t1  billing service creates invoice INV-9
    t2  process crashes before local ledger records the key
    t3  agent retries without an external idempotency guarantee
    t4  billing service creates INV-10 for the same order

``run_scenario`` plays them for real. The agent (``toolkit.worlds.crash_agents``)
runs in a child process that kills itself at a named crash point; a second
child retries. The billing service is a third process with its own SQLite
database. The trace is assembled from what each process wrote to a shared
event file, and the invoice count is read from billing's database.

``crash_matrix`` runs every crash point against every agent and counts
invoices. ``guarded_run`` says which run a choice of guards plays (durable
key, atomic ledger, billing that honours keys): the chapter's panel shows it.
"""
from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.effects import SqliteLedger, connect
from toolkit.worlds.billing_http import start
from toolkit.worlds.billing_service import list_invoices, open_books
from toolkit.worlds.catalog import CREATE_INVOICE
from toolkit.worlds.children import process_context, reap
from toolkit.worlds.crash_agents import CRASH_POINTS, KILLED, MODES, EventLog, agent

#: What each agent does, in the scenario's words, with its ledger on disk (True) or in memory (False).
AGENT_TEXT: dict[tuple[str, bool], str] = {
    ("naive", True): "invoice first, then the ledger row in a separate step; billing ignores keys",
    ("atomic", True): "invoice and ledger row in one SQLite transaction, in billing's database",
    ("keyed", True): "ledger row pending -> done around the call; billing recognizes the key",
    ("naive", False): "invoice first, then the key in the agent's memory; billing ignores keys",
    ("keyed", False): "key pending -> done in the agent's memory around the call; billing recognizes the key",
}


def run_scenario(mode: str = "naive", crash_at: str = "after_effect_before_ledger", *, durable: bool = True,
                 context: str | None = None) -> dict[str, Any]:
    """Play one attempt that crashes at ``crash_at``, then one retry; report what the world holds.

    ``durable`` off keeps the naive or keyed agent's ledger in its memory. Returns plain data:
    ``trace`` (the t-lines), ``invoice_count``, ``invoices`` and ``ledger`` at
    the end, ``after_crash`` (the same two just after the first attempt), and
    ``crashed`` (the first child was killed). Every process is ended and the
    temporary directory removed before it returns.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    if crash_at not in CRASH_POINTS:
        raise ValueError(f"crash_at must be one of {tuple(CRASH_POINTS)}")
    if mode == "atomic" and not durable:
        raise ValueError("the atomic agent's ledger lives in billing's database; it cannot be kept in memory")
    ctx = process_context(context)
    CREATE_INVOICE.validator  # compile the schema once, before forking children
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="invoice-trace-")))
        log = EventLog(str(work / "events.jsonl"))
        if mode == "atomic":
            open_books(work / "billing.db").close()
            port = None
        else:
            port = stack.enter_context(start(work / "billing.db", honour_keys=(mode == "keyed"), notify=log,
                                             context=ctx)).port
        between = None if durable else (ctx.Event(), ctx.Event())
        point = None if crash_at == "none" else crash_at
        first = _child(stack, ctx, mode, point, str(work), port, 1, durable, between)
        survived = _first_attempt_over(first, between)
        after_crash = _state(work, mode)
        if survived:                                   # a living process retries from its own memory
            between[1].set()
            crashed, second = False, first
        else:
            crashed = first.exitcode == KILLED
            if first.exitcode not in (0, KILLED):
                raise RuntimeError(f"the first attempt failed on its own (exit code {first.exitcode})")
            if crashed:
                log(_crash_sentence(mode, crash_at, durable, after_crash))
            second = _child(stack, ctx, mode, None, str(work), port, 2, durable, None)
        reap(second)
        if second.exitcode != 0:
            raise RuntimeError(f"the retry did not finish (exit code {second.exitcode})")
        final = _state(work, mode)
        events = log.read()
    return {"mode": mode, "crash_at": crash_at, "crashed": crashed,
            "trace": [f"t{i}  {text}" for i, text in enumerate(events)],
            "invoice_count": len(final["invoices"]), "invoices": final["invoices"], "ledger": final["ledger"],
            "after_crash": after_crash}


def _crash_sentence(mode: str, crash_at: str, durable: bool, after_crash: dict[str, Any]) -> str:
    text = CRASH_POINTS[crash_at] or "process crashes"
    if mode == "atomic" and crash_at == "after_effect_before_ledger" and not after_crash["invoices"]:
        text += "; the open transaction rolls back, invoice included"
    if not durable:
        text += "; the ledger it kept in memory died with the process"
    return text


# --------------------------------------------------------------------------- child processes

def _child(stack: ExitStack, ctx: Any, *args: Any) -> Any:
    """Start one agent process; ``stack`` ends it (killing it if it hangs) however the run ends."""
    process = ctx.Process(target=agent, args=args)
    process.start()
    stack.callback(reap, process)
    return process


def _first_attempt_over(process: Any, between: Any, wait: float = 30) -> bool:
    """Wait for the first attempt; True if its process lived and now waits to retry (memory ledger only)."""
    if between is None:
        reap(process, wait)
        return False
    deadline = time.monotonic() + wait
    while process.is_alive() and not between[0].wait(0.02) and time.monotonic() < deadline:
        pass
    if between[0].is_set():
        return True
    reap(process, 0)
    return False


def _state(work: Path, mode: str) -> dict[str, Any]:
    """Invoices and ledger rows as they are on disk right now."""
    out: dict[str, Any] = {"invoices": [], "ledger": []}
    books = work / "billing.db"
    if books.exists():
        conn = connect(books)
        try:
            out["invoices"] = [f"{i['invoice_id']} {i['order_id']}" for i in list_invoices(conn)]
        finally:
            conn.close()
    ledger_file = work / ("billing.db" if mode == "atomic" else "agent-ledger.db")
    if ledger_file.exists():
        with SqliteLedger(ledger_file) as ledger:
            out["ledger"] = [f"{e['key']} {e['state']}" + (f" {e['result']['invoice_id']}" if e["result"] else "")
                             for e in ledger.entries()]
    return out


# --------------------------------------------------------------------------- the matrix

def crash_matrix(modes: tuple[str, ...] = MODES, points: tuple[str, ...] = tuple(CRASH_POINTS), *,
                 context: str | None = None) -> list[dict[str, Any]]:
    """Every crash point x every mode -> invoices for order-431 after the retry.

    One row per crash point: ``{"crash_at": ..., "naive": n, "atomic": n, "keyed": n}``.
    """
    return [{"crash_at": point, **{mode: run_scenario(mode, point, context=context)["invoice_count"]
                                   for mode in modes}} for point in points]


def matrix_table(rows: list[dict[str, Any]]) -> str:
    """The matrix as aligned text, ready to print."""
    modes = [k for k in rows[0] if k != "crash_at"] if rows else []
    width = max([len("crash point")] + [len(r["crash_at"]) for r in rows])
    lines = [f"{'crash point':<{width}}  " + "  ".join(f"{m:>6}" for m in modes)]
    lines += [f"{r['crash_at']:<{width}}  " + "  ".join(f"{r[m]:>6}" for m in modes) for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- guards -> run

@dataclass(frozen=True)
class GuardedRun:
    """The run a choice of guards plays: the agent, the crash point, where its ledger lives, and notes."""

    mode: str
    crash_at: str
    durable: bool = True
    notes: tuple[str, ...] = ()

    @property
    def agent(self) -> str:
        """What this run's agent does, in the scenario's words."""
        return AGENT_TEXT[(self.mode, self.durable)]


def guarded_run(durable: bool, atomic: bool, honours: bool, crash_at: str) -> GuardedRun:
    """Which run plays a durable key, an atomic ledger and a billing service that honours keys (each on or off).

    An atomic ledger plays the atomic agent: its ledger lives in billing's
    database, so it is on disk whatever ``durable`` says, and billing's key
    check plays no part. Otherwise billing honouring keys plays the keyed
    agent, else the naive one, with its ledger on disk or (``durable`` off) in
    its memory.
    """
    if crash_at not in CRASH_POINTS:
        raise ValueError(f"crash point must be one of {tuple(CRASH_POINTS)}, not {crash_at!r}")
    if not atomic:
        return GuardedRun("keyed" if honours else "naive", crash_at, durable)
    notes = []
    if not durable:
        notes.append("an atomic ledger lives in billing's database, so the key is on disk anyway")
    if honours:
        notes.append("billing's own key check plays no part: the invoice and the key commit together")
    return GuardedRun("atomic", crash_at, True, tuple(notes))


def crash_main() -> None:
    """``python -m toolkit.worlds.crash``: the naive trace, then the whole matrix."""
    outcome = run_scenario("naive", "after_effect_before_ledger")
    print("\n".join(outcome["trace"]))
    print(f"invoices for order-431: {outcome['invoice_count']}\n")
    print(matrix_table(crash_matrix()))


__all__ = ["AGENT_TEXT", "GuardedRun", "crash_matrix", "guarded_run", "matrix_table", "run_scenario"]


if __name__ == "__main__":
    crash_main()
