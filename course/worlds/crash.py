"""Chapter 05: the duplicate-invoice trace, reproduced with a process that really dies.

The chapter's five lines::

    t0  agent sends create_invoice(order-431, key=invoice:order-431:v1)
    t1  billing service creates invoice INV-9
    t2  process crashes before local ledger records the key
    t3  agent retries without an external idempotency guarantee
    t4  billing service creates INV-10 for the same order

``run_scenario`` plays them for real. The agent (``course.worlds.crash_agents``)
runs in a child process that kills itself at a named crash point; a second
child retries. The billing service is a third process with its own SQLite
database. The trace is assembled from what each process wrote to a shared
event file, and the invoice count is read from billing's database.

``run_scenarios`` plays several runs side by side, each with its own folder
and processes: a run is a generator that yields whenever it waits for one of
its processes, and one loop moves every run on as soon as what it waits for
is over (``course.worlds.crash_designs`` builds the chapter's comparisons on it).
"""
from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from multiprocessing.connection import wait as mp_wait
from pathlib import Path
from typing import Any, Generator, Iterable

from toolkit.effects import DurableLedger, connect
from course.worlds import serve_child as _billing_child
from course.worlds import list_invoices, open_books
from course.worlds import CREATE_INVOICE
from course.worlds import in_one_child, process_context, reap
from course.worlds import CRASH_POINTS, KILLED, MODES, EventLog, agent


def run_scenario(mode: str = "naive", crash_at: str = "after_effect_before_ledger", *, durable: bool = True,
                 context: str | None = None) -> dict[str, Any]:
    """Play one attempt that crashes at ``crash_at``, then one retry; report what the world holds.

    ``durable`` off keeps the naive or keyed agent's ledger in its memory. Returns plain data:
    ``trace`` (the t-lines), ``invoice_count``, ``invoices`` and ``ledger`` at
    the end, ``after_crash`` (the same two just after the first attempt), and
    ``crashed`` (the first child was killed). Every process is ended and the
    temporary directory removed before it returns.
    """
    return run_scenarios([(mode, crash_at, durable)], context=context)[0]


def run_scenarios(settings: Iterable[tuple[str, str, bool]], *, context: str | None = None) -> list[dict[str, Any]]:
    """``run_scenario`` for each ``(mode, crash_at, durable)``, all played at the same time; outcomes in order.

    Each run has its own folder, its own billing process and its own agent
    processes, so the runs cannot see each other; playing them side by side
    only saves the time each would spend waiting for its processes. With fork,
    several runs are played from one child process (``in_one_child``).
    """
    ctx = process_context(context)
    checked = [_checked(*setting) for setting in settings]
    CREATE_INVOICE.validator  # compile the schema once, before forking children
    if any(mode != "atomic" for mode, _, _ in checked):   # billing's HTTP server: imported once
        import tornado.httpserver, tornado.web  # noqa: F401,E401  here, not in every billing child
    if len(checked) > 1 and ctx.get_start_method() == "fork":
        return in_one_child(_play_all, checked, ctx)     # every process of every run starts from one child
    return _play_all(checked, ctx)


def _play_all(settings: list[tuple[str, str, bool]], ctx: Any) -> list[dict[str, Any]]:
    return _drive([_play(*setting, ctx) for setting in settings])


def _checked(mode: str, crash_at: str, durable: bool = True) -> tuple[str, str, bool]:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    if crash_at not in CRASH_POINTS:
        raise ValueError(f"crash_at must be one of {tuple(CRASH_POINTS)}")
    if mode == "atomic" and not durable:
        raise ValueError("the atomic agent's ledger lives in billing's database; it cannot be kept in memory")
    return mode, crash_at, durable


@dataclass
class _Wait:
    """What a run waits for: its process to end, or to say it lived (``between``), or to write to ``ready``."""

    process: Any
    between: Any = None
    wait: float = 30
    ready: Any = None

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.wait

    def handles(self) -> list[Any]:
        return [self.process.sentinel] + ([self.ready] if self.ready is not None else [])

    def over(self) -> bool:
        return (not self.process.is_alive() or (self.between is not None and self.between[0].is_set())
                or (self.ready is not None and self.ready.poll()) or time.monotonic() >= self.deadline)


def _drive(plays: list[Generator[_Wait, None, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Advance every run whenever what it waits for is over; each run cleans up when it ends, or is closed."""
    results: list[dict[str, Any]] = [{} for _ in plays]
    waiting: dict[int, _Wait] = {}
    # Sentinels already readable: a process closes its pipe a few ms before its exit code is there,
    # and waiting on them again would spin until then; they are polled every millisecond instead.
    exiting: set[Any] = set()

    def advance(i: int) -> None:
        try:
            waiting[i] = plays[i].send(None)
        except StopIteration as done:
            results[i] = done.value
            waiting.pop(i, None)

    try:
        for i in range(len(plays)):
            advance(i)
        while waiting:
            ready = [i for i, wait in waiting.items() if wait.over()]
            if not ready:
                handles = [h for w in waiting.values() for h in w.handles()]
                exiting &= set(handles)
                pending = [h for h in handles if h not in exiting]
                found = mp_wait(pending, 0.001 if exiting else 0.005)
                exiting.update(h for h in found if isinstance(h, int))
            for i in ready:
                advance(i)
    finally:
        for play in plays:
            play.close()            # a run that did not finish ends its processes and removes its folder
    return results


def _play(mode: str, crash_at: str, durable: bool, ctx: Any) -> Generator[_Wait, None, dict[str, Any]]:
    """One run, as steps: it yields whenever it waits for one of its processes."""
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="invoice-trace-")))
        log = EventLog(str(work / "events.jsonl"))
        billing, port = None, None
        if mode == "atomic":
            open_books(work / "billing.db").close()
        else:
            receive, send = ctx.Pipe(duplex=False)
            billing = ctx.Process(target=_billing_child, args=(str(work / "billing.db"), mode == "keyed", log,
                                                                send, receive), daemon=True)
            billing.start()
            send.close()
            stack.callback(billing.close)
            stack.callback(reap, billing, 5, terminate=True)
            stack.callback(receive.close)
            yield _Wait(billing, ready=receive, wait=10)      # the service says its port once it listens
            try:
                if not receive.poll():
                    raise EOFError
                port = receive.recv()
            except (EOFError, OSError):
                raise RuntimeError("the billing service did not start") from None
        between = None if durable else (ctx.Event(), ctx.Event())
        point = None if crash_at == "none" else crash_at
        first = _child(stack, ctx, mode, point, str(work), port, 1, durable, between)
        yield _Wait(first, between)
        survived = between is not None and between[0].is_set()
        if not survived:
            reap(first, 0)
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
        yield _Wait(second)
        reap(second)
        if second.exitcode != 0:
            raise RuntimeError(f"the retry did not finish (exit code {second.exitcode})")
        final = _state(work, mode)
        events = log.read()
        if billing is not None:                        # stop billing while the other runs go on
            billing.terminate()
            yield _Wait(billing, wait=5)
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
        with DurableLedger(ledger_file) as ledger:
            out["ledger"] = [f"{e['key']} {e['state']}" + (f" {e['result']['invoice_id']}" if e["result"] else "")
                             for e in ledger.entries()]
    return out


def crash_main() -> None:
    """``python -m course.worlds.crash``: the naive trace, then the whole matrix."""
    from course.worlds import crash_matrix, matrix_table

    outcome = run_scenario("naive", "after_effect_before_ledger")
    print("\n".join(outcome["trace"]))
    print(f"invoices for order-431: {outcome['invoice_count']}\n")
    print(matrix_table(crash_matrix()))


__all__ = ["run_scenario", "run_scenarios"]


if __name__ == "__main__":
    crash_main()
