"""Chapter 05: many processes, the same keys, one durable ledger: one effect per key.

``race`` starts several processes that claim the same keys against one ledger
at once (a SQLite file, or the PostgreSQL database ``url`` names) and counts
the effects each key got (the promise: one), how the final answers were spread
over ran / replayed, and how often a process was told to wait (``in_progress``)
before asking again. Every process is ended and the temporary directory removed
before it returns.
"""
from __future__ import annotations

import random
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from toolkit.kernel import LedgerStatus
from toolkit.effects import DurableLedger, transaction
from course.worlds import in_one_child, process_context, reap
from course.worlds import EventLog


def race(processes: int = 4, keys: int = 20, mode: str = "atomic", *, context: str | None = None,
         url: str | None = None) -> dict[str, Any]:
    """``processes`` processes call the same ``keys`` keys at once against one ledger: a new SQLite
    file, or ``url`` (a database of its own: no ledger or effects table yet).

    ``mode`` is ``atomic`` (the effect is a row in the same database) or
    ``external`` (the effect is a line in another file, bracketed by
    pending/done).
    """
    if mode not in ("atomic", "external"):
        raise ValueError("mode must be 'atomic' or 'external'")
    ctx = process_context(context)
    if ctx.get_start_method() == "fork":            # the racers start from one child process
        return in_one_child(_race, processes, keys, mode, ctx, url)
    return _race(processes, keys, mode, ctx, url)


def _race(processes: int, keys: int, mode: str, ctx: Any, url: str | None) -> dict[str, Any]:
    names = [f"k{i}" for i in range(keys)]
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ledger-race-")))
        path, effects = url or str(tmp / "ledger.db"), str(tmp / "effects.log")
        with DurableLedger(path) as ledger, transaction(ledger.conn):
            ledger.conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL, worker INTEGER)")
        go = ctx.Event()
        workers = [ctx.Process(target=_racer, args=(path, effects, mode, names, seed, go))
                   for seed in range(processes)]
        for worker in workers:
            worker.start()
            stack.callback(reap, worker, 5)
        go.set()
        for worker in workers:
            reap(worker, 60)
        if mode == "atomic":
            with DurableLedger(path) as ledger:
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


def _racer(path: str, effects: str, mode: str, keys: list[str], seed: int, go: Any) -> None:
    """One process calling every key, in its own shuffled order, until each gets a final answer."""
    go.wait(30)  # start together with the others
    order = list(keys)
    random.Random(seed).shuffle(order)
    effect_log = EventLog(effects)

    def atomic_effect(conn: Any, args: dict) -> dict:
        conn.execute("INSERT INTO effects (key, worker) VALUES (?, ?)", (args["key"], seed))
        return {"done_by": seed}

    def external_effect(args: dict) -> dict:
        effect_log(args["key"])
        time.sleep(0.001)  # widen the window in which another process can find the key pending
        return {"done_by": seed}

    with DurableLedger(path) as ledger:
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


__all__ = ["race"]
