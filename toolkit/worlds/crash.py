"""Chapter 05: the duplicate-invoice trace, reproduced with a process that really dies.

The chapter's five lines::

    t0  agent sends create_invoice(order-431, key=invoice:order-431:v1)
    t1  billing service creates invoice INV-9
    t2  process crashes before local ledger records the key
    t3  agent retries without an external idempotency guarantee
    t4  billing service creates INV-10 for the same order

``run_scenario`` plays them for real. The agent runs in a child process that
kills itself (SIGKILL: no cleanup, no flush, no goodbye) at a named crash
point; a second child retries. The billing service is a third process with its
own SQLite database. The trace is assembled from what each process wrote to a
shared event file, and the invoice count is read from billing's database.

Three ways to run the agent:

``naive``   look up the local ledger, call billing (which ignores keys), then
            write the ledger in a separate step. A crash in between duplicates.
``atomic``  the invoice and the ledger row live in one database and commit in
            one transaction. A crash in between rolls both back.
``keyed``   billing honours the idempotency key; the local ledger goes
            pending -> done, and a retry that finds a pending key asks billing
            with the same key (an inquiry, not a new proposal).

``crash_matrix`` runs every crash point against every mode and counts
invoices. ``race`` starts several processes that claim the same keys against
one SQLite file at once and counts effects per key.
"""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.worlds import billing_service
from toolkit.effects import LedgerStatus, SqliteLedger, connect, transaction

KEY = "invoice:order-431:v1"
ORDER: dict[str, Any] = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", "idempotency_key": KEY}
MODES = ("naive", "atomic", "keyed")

#: Where the first attempt dies, and the sentence the trace shows for it.
CRASH_POINTS: dict[str, str | None] = {
    "before_send": "process crashes before billing receives the request",
    "after_effect_before_ledger": "process crashes before local ledger records the key",
    "after_ledger": "process crashes after local ledger records the key, before it replies",
    "none": None,
}

RETRY_TEXT = {
    "naive": "agent retries without an external idempotency guarantee",
    "atomic": "agent retries with the same key; invoice and ledger share one database",
    "keyed": "agent retries with the same key; billing honours idempotency keys",
}


@dataclass(frozen=True)
class EventLog:
    """An append-only file of trace sentences shared by several processes.

    Each sentence is one ``os.write`` to a file opened with O_APPEND, so lines
    from different processes never interleave, and a line written just before
    a SIGKILL is already in the file.
    """

    path: str

    def __call__(self, text: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(text) + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def read(self) -> list[str]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]


#: How a child killed at its crash point shows up to its parent (multiprocessing's exit code).
KILLED = -signal.SIGKILL if hasattr(signal, "SIGKILL") else 137


def _die_at(point: str, crash_at: str | None) -> None:
    """Kill this process for real when it reaches the chosen crash point."""
    if point != crash_at:
        return
    if hasattr(signal, "SIGKILL"):
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(137)  # pragma: no cover - platforms without SIGKILL


def _send_line(arguments: dict) -> str:
    return f"agent sends create_invoice({arguments['order_id']}, key={arguments['idempotency_key']})"


def agent(mode: str, crash_at: str | None, workdir: str, port: int | None, attempt: int) -> None:
    """One attempt of the agent's create_invoice step (runs in a child process)."""
    work = Path(workdir)
    log = EventLog(str(work / "events.jsonl"))
    arguments = dict(ORDER)
    log(_send_line(arguments) if attempt == 1 else RETRY_TEXT[mode])
    if mode == "atomic":
        _atomic(arguments, crash_at, work, log)
    else:
        client = billing_service.BillingClient(port or 0)
        with SqliteLedger(work / "agent-ledger.db") as ledger:
            (_naive if mode == "naive" else _keyed)(arguments, crash_at, ledger, client, log)
    _die_at("after_ledger", crash_at)


def _replay_line(result: dict) -> str:
    return f"local ledger replays {result['invoice_id']}; billing is not called"


def _naive(arguments: dict, crash_at: str | None, ledger: SqliteLedger, client: billing_service.BillingClient,
           log: EventLog) -> None:
    entry = ledger.lookup(KEY)
    if entry is not None:
        log(_replay_line(entry["result"]))
        return
    _die_at("before_send", crash_at)
    invoice = client.create_invoice(arguments)            # the effect, in another system
    _die_at("after_effect_before_ledger", crash_at)       # t2: the gap between two separate steps
    ledger.record(KEY, arguments, invoice, tool="create_invoice")


def _keyed(arguments: dict, crash_at: str | None, ledger: SqliteLedger, client: billing_service.BillingClient,
           log: EventLog) -> None:
    def effect(args: dict) -> dict:
        _die_at("before_send", crash_at)
        invoice = client.create_invoice(args)              # the key travels downstream in args
        _die_at("after_effect_before_ledger", crash_at)
        return invoice

    answer = ledger.call(KEY, effect, arguments, tool="create_invoice")
    if answer.status is LedgerStatus.REPLAYED:
        log(_replay_line(answer.result))
    elif answer.status is LedgerStatus.IN_PROGRESS:         # a pending claim left by the crash
        # Billing honours the key, so sending the same key again is an inquiry:
        # it returns the invoice made for this key, or makes the one that never arrived.
        ledger.reconcile(KEY, arguments, client.create_invoice, tool="create_invoice")


def _atomic(arguments: dict, crash_at: str | None, work: Path, log: EventLog) -> None:
    def effect(conn: sqlite3.Connection, args: dict) -> dict:
        _die_at("before_send", crash_at)
        invoice = billing_service.issue_invoice(conn, args, honour_keys=False)
        log(f"invoice {invoice['invoice_id']} is written inside the open transaction")
        _die_at("after_effect_before_ledger", crash_at)
        return invoice

    with SqliteLedger(work / "billing.db") as ledger:      # the ledger lives in billing's database
        answer = ledger.call_atomic(KEY, effect, arguments, tool="create_invoice")
    if answer.status is LedgerStatus.RAN:
        log(f"invoice {answer.result['invoice_id']} and its ledger entry commit in one transaction")
    elif answer.status is LedgerStatus.REPLAYED:
        log(_replay_line(answer.result))


# --------------------------------------------------------------------------- running it

def _context(context: str | None) -> Any:
    import multiprocessing

    return multiprocessing.get_context(context or billing_service.default_start_method())


def _run_child(ctx: Any, *args: Any) -> int:
    process = ctx.Process(target=agent, args=args)
    process.start()
    process.join(30)
    if process.is_alive():  # pragma: no cover - a hung child is a bug; do not leave it behind
        process.kill()
        process.join()
    return process.exitcode


def _state(work: Path, mode: str) -> dict[str, Any]:
    """Invoices and ledger rows as they are on disk right now."""
    out: dict[str, Any] = {"invoices": [], "ledger": []}
    books = work / "billing.db"
    if books.exists():
        conn = connect(books)
        try:
            out["invoices"] = [f"{i['invoice_id']} {i['order_id']}" for i in billing_service.list_invoices(conn)]
        finally:
            conn.close()
    ledger_file = work / ("billing.db" if mode == "atomic" else "agent-ledger.db")
    if ledger_file.exists():
        with SqliteLedger(ledger_file) as ledger:
            out["ledger"] = [f"{e['key']} {e['state']}" + (f" {e['result']['invoice_id']}" if e["result"] else "")
                             for e in ledger.entries()]
    return out


def run_scenario(mode: str = "naive", crash_at: str = "after_effect_before_ledger", *,
                 context: str | None = None) -> dict[str, Any]:
    """Play one attempt that crashes at ``crash_at``, then one retry; report what the world holds.

    Returns plain data: ``trace`` (the t-lines), ``invoice_count``,
    ``invoices`` and ``ledger`` at the end, ``after_crash`` (the same two just
    after the first attempt died), and ``crashed`` (the first child was
    killed). Everything happens in a temporary directory that is removed.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    if crash_at not in CRASH_POINTS:
        raise ValueError(f"crash_at must be one of {tuple(CRASH_POINTS)}")
    ctx = _context(context)
    billing_service.CREATE_INVOICE.validator  # compile the schema once, before forking children
    with tempfile.TemporaryDirectory(prefix="invoice-trace-") as tmp:
        work = Path(tmp)
        log = EventLog(str(work / "events.jsonl"))
        if mode == "atomic":
            billing_service.open_books(work / "billing.db").close()
            service = None
        else:
            service = billing_service.start(work / "billing.db", honour_keys=(mode == "keyed"), notify=log, context=ctx)
        try:
            port = service.port if service else None
            point = None if crash_at == "none" else crash_at
            first = _run_child(ctx, mode, point, str(work), port, 1)
            crashed = first == KILLED
            if first not in (0, KILLED):
                raise RuntimeError(f"the first attempt failed on its own (exit code {first})")
            after_crash = _state(work, mode)
            if crashed:
                text = CRASH_POINTS[crash_at] or "process crashes"
                if mode == "atomic" and crash_at == "after_effect_before_ledger" and not after_crash["invoices"]:
                    text += "; the open transaction rolls back, invoice included"
                log(text)
            second = _run_child(ctx, mode, None, str(work), port, 2)
            if second != 0:
                raise RuntimeError(f"the retry did not finish (exit code {second})")
            final = _state(work, mode)
            events = log.read()
        finally:
            if service:
                service.stop()
    return {"mode": mode, "crash_at": crash_at, "crashed": crashed,
            "trace": [f"t{i}  {text}" for i, text in enumerate(events)],
            "invoice_count": len(final["invoices"]), "invoices": final["invoices"], "ledger": final["ledger"],
            "after_crash": after_crash}


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


# --------------------------------------------------------------------------- many processes, same keys

def _racer(path: str, effects: str, mode: str, keys: list[str], seed: int, go: Any) -> None:
    """One process calling every key, in its own shuffled order, until each gets a final answer."""
    import time

    go.wait(30)  # start together with the others
    order = list(keys)
    random.Random(seed).shuffle(order)
    effect_log = EventLog(effects)

    def atomic_effect(conn: sqlite3.Connection, args: dict) -> dict:
        conn.execute("INSERT INTO effects (key, worker) VALUES (?, ?)", (args["key"], seed))
        return {"done_by": seed}

    def external_effect(args: dict) -> dict:
        effect_log(args["key"])
        time.sleep(0.001)  # widen the window in which another process can find the key pending
        return {"done_by": seed}

    with SqliteLedger(path) as ledger:
        for key in order:
            for _ in range(2000):
                if mode == "atomic":
                    answer = ledger.call_atomic(key, atomic_effect, {"key": key}, tool="touch")
                else:
                    answer = ledger.call(key, external_effect, {"key": key}, tool="touch")
                if answer.status is not LedgerStatus.IN_PROGRESS and answer.status is not LedgerStatus.FAILED:
                    break
                EventLog(effects + ".waits")(answer.status.value)
                time.sleep(0.001)
            EventLog(effects + ".answers")(answer.status.value)


def race(processes: int = 4, keys: int = 20, mode: str = "atomic", *, context: str | None = None) -> dict[str, Any]:
    """``processes`` processes call the same ``keys`` keys at once against one SQLite file.

    ``mode`` is ``atomic`` (the effect is a row in the same database) or
    ``external`` (the effect is a line in another file, bracketed by
    pending/done). Returns how many effects each key got (the promise: one),
    how the final answers were spread over ran / replayed, and how often a
    process was told to wait (``in_progress``) before asking again.
    """
    if mode not in ("atomic", "external"):
        raise ValueError("mode must be 'atomic' or 'external'")
    ctx = _context(context)
    names = [f"k{i}" for i in range(keys)]
    with tempfile.TemporaryDirectory(prefix="ledger-race-") as tmp:
        path, effects = str(Path(tmp) / "ledger.db"), str(Path(tmp) / "effects.log")
        with SqliteLedger(path) as ledger, transaction(ledger.conn):
            ledger.conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL, worker INTEGER)")
        go = ctx.Event()
        workers = [ctx.Process(target=_racer, args=(path, effects, mode, names, seed, go))
                   for seed in range(processes)]
        for worker in workers:
            worker.start()
        go.set()
        for worker in workers:
            worker.join(60)
        if mode == "atomic":
            with SqliteLedger(path) as ledger:
                done = [k for (k,) in ledger.conn.execute("SELECT key FROM effects")]
        else:
            done = EventLog(effects).read()
        answers = EventLog(effects + ".answers").read()
        waits = EventLog(effects + ".waits").read()
        exit_codes = [w.exitcode for w in workers]
    per_key = {k: done.count(k) for k in names}
    return {"processes": processes, "keys": keys, "mode": mode, "calls": len(answers),
            "effects": len(done), "effects_per_key": sorted(set(per_key.values())),
            "answers": {s: answers.count(s) for s in sorted(set(answers))},
            "waited": {s: waits.count(s) for s in sorted(set(waits))}, "exit_codes": exit_codes}


def crash_main() -> None:
    """``python -m toolkit.worlds.crash``: the naive trace, then the whole matrix."""
    outcome = run_scenario("naive", "after_effect_before_ledger")
    print("\n".join(outcome["trace"]))
    print(f"invoices for order-431: {outcome['invoice_count']}\n")
    print(matrix_table(crash_matrix()))


__all__ = ["CRASH_POINTS", "KEY", "MODES", "ORDER", "EventLog", "agent", "crash_matrix", "matrix_table", "race",
           "run_scenario"]


if __name__ == "__main__":
    crash_main()
