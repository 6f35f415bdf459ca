"""What does the durable ledger cost? Keyed calls vs. a bare INSERT per committed transaction.

    python benchmarks/bench_ledger.py [--calls 3000] [--batch 100] [--rounds 5] [--synchronous FULL]

Every variant uses the same connection settings (WAL, the chosen
``synchronous``, ``BEGIN IMMEDIATE`` ... ``COMMIT`` per call), each on its own
file, so the ratio shows what the ledger adds on top of one durable commit:

* bare          one INSERT per committed transaction (the floor)
* call_atomic   a new key: claim + result in one transaction, no-op effect
* call_atomic+  a new key whose effect INSERTs a row (two rows per commit)
* call          a new key, effect elsewhere: a pending commit, then a done commit
* replay        a finished key asked again (no write, so no fsync)

The variants run in interleaved batches (bare, then each keyed variant, on the
same key range, again and again), and the reported ratio is the median of the
per-batch ratios: a busy disk slows a whole stretch of time, and pairing
batches keeps that from landing on one variant only.

The whole measurement is repeated in ``--rounds`` rounds on fresh files, and the
aim is judged on the median of the rounds' ratios (the spread is printed too), so
one noisy stretch cannot decide it.

The aim, for the default synchronous=FULL: call_atomic <= 1.3x bare. There
the commit's fsync dominates and the ledger's own work (a fingerprint, one
SELECT, JSON in and out) must stay small beside it. With synchronous=NORMAL
there is no fsync to hide behind, and the ratio shows that Python work plainly.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from toolkit.effects import DurableLedger, connect, transaction

AIM = 1.3  # keyed call_atomic at most 1.3x the time of a bare INSERT per committed transaction


def _with_rows(ledger: DurableLedger) -> DurableLedger:
    with transaction(ledger.conn):
        ledger.conn.execute("CREATE TABLE rows (key TEXT PRIMARY KEY, value INTEGER)")
    return ledger


def _insert_row(conn, args):
    conn.execute("INSERT INTO rows (key, value) VALUES (?, ?)", (f"k{args['i']}", args["i"]))
    return args


def variants(folder: Path, synchronous: str) -> dict[str, Callable[[int], object]]:
    """One step function per variant, each bound to its own fresh file."""
    bare = connect(folder / "bare.db", synchronous=synchronous)
    with transaction(bare):
        bare.execute("CREATE TABLE rows (key TEXT PRIMARY KEY, value INTEGER)")

    def bare_step(i: int) -> None:
        bare.execute("BEGIN IMMEDIATE")
        bare.execute("INSERT INTO rows (key, value) VALUES (?, ?)", (f"k{i}", i))
        bare.execute("COMMIT")

    atomic = DurableLedger(folder / "atomic.db", synchronous=synchronous)
    with_row = _with_rows(DurableLedger(folder / "atomic_row.db", synchronous=synchronous))
    external = DurableLedger(folder / "external.db", synchronous=synchronous)
    return {
        "bare": bare_step,
        "call_atomic": lambda i: atomic.call_atomic(f"k{i}", lambda conn, args: args, {"i": i}, tool="bench"),
        "call_atomic+": lambda i: with_row.call_atomic(f"k{i}", _insert_row, {"i": i}, tool="bench"),
        "call": lambda i: external.call(f"k{i}", lambda args: args, {"i": i}, tool="bench"),
        "replay": lambda i: atomic.call_atomic(f"k{i}", lambda conn, args: args, {"i": i}, tool="bench"),
    }


def measure(calls: int = 3000, batch: int = 100, synchronous: str = "FULL") -> dict[str, dict[str, float]]:
    """Per variant: median seconds per batch and median ratio to the bare batch run just before it."""
    seconds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        steps = variants(Path(tmp), synchronous)
        for name in steps:
            seconds[name] = []
        for start in range(0, calls, batch):
            for name, step in steps.items():  # replay runs after call_atomic wrote the same keys
                began = time.perf_counter()
                for i in range(start, start + batch):
                    step(i)
                seconds[name].append(time.perf_counter() - began)
    out = {}
    for name, times in seconds.items():
        ratios = [t / b for t, b in zip(times, seconds["bare"])]
        out[name] = {"per_second": batch / statistics.median(times), "ratio": statistics.median(ratios)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--synchronous", default="FULL", choices=["OFF", "NORMAL", "FULL", "EXTRA"])
    options = parser.parse_args()
    rounds = [measure(options.calls, options.batch, options.synchronous) for _ in range(options.rounds)]
    found = {name: {key: statistics.median(r[name][key] for r in rounds) for key in ("per_second", "ratio")}
             for name in rounds[0]}
    spread = sorted(r["call_atomic"]["ratio"] for r in rounds)
    print(f"{options.calls} calls per variant in batches of {options.batch}, synchronous={options.synchronous}, "
          f"median of {options.rounds} rounds")
    print(f"{'variant':<14}{'calls/s':>10}{'vs bare':>10}")
    for name, row in found.items():
        print(f"{name:<14}{row['per_second']:>10.0f}{row['ratio']:>9.2f}x")
    ratio = found["call_atomic"]["ratio"]
    print(f"call_atomic / bare per round: {', '.join(f'{r:.2f}' for r in spread)}")
    print(f"keyed call_atomic / bare = {ratio:.2f}x ({'within' if ratio <= AIM else 'over'} the {AIM}x aim); "
          f"{found['call_atomic']['per_second']:.0f} keyed invocations/s")
    print(f"RESULT ledger_keyed_vs_bare_insert {ratio:.2f} aim<={AIM} {'ok' if ratio <= AIM else 'missed'}")


if __name__ == "__main__":
    main()
