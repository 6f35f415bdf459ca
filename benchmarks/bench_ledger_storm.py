"""A crash storm on one durable ledger: worker processes killed mid-call, a restart, and one effect per key.

    python benchmarks/bench_ledger_storm.py [--workers 8] [--keys 600] [--kills 40] [--lease 2.0] [--seed 0]
        [--url postgresql://...]

The ledger is a SQLite file in a temporary folder, or the database ``--url`` names (default:
``COURSE_DATABASE_URL`` if set): give a PostgreSQL database of its own, with no ledger table yet.

``workers`` processes call the same ``keys`` keys, each in its own shuffled
order, through ``DurableLedger.call`` (the effect lives elsewhere: one line per
effect appended to an effect log, the downstream system's own record). While
they run, the parent SIGKILLs a random worker at random moments, ``kills``
times, and starts a fresh worker in its place, so kills land inside calls:
after a claim and before its effect, between the effect and its done row, in
the middle of a commit. Then it kills every survivor at once, as a crash of
the whole machine would. Workers name their claims (``storm-worker-N``), so only
a lease can say that a killed worker's claim is dead: a live worker that meets
one is told to wait, and reconciles the key from the effect log once the lease
has run out.

Then the restart: every worker is gone; the parent waits out the last lease,
runs the reaper (``DurableLedger.reap``, settling each dead claim from the
effect log) and retries every key once (a key nobody reached runs now). It reports, as ``RESULT`` lines:

* kills, how many landed inside a call (the victim held a claim) and how many
  of those after its effect (the result must come from the record, not from a
  second run); dead claims and orphaned effects the restart found;
* effects per key (the promise: exactly 1 for every key);
* lost results: keys whose recorded result is not the effect the log holds;
* stuck keys: keys still pending after the restart, once every lease has expired.

Aims: effects per key exactly 1, 0 lost, 0 stuck. ``tests/test_ledger_storm.py``
runs the same storm on SQLite and on a throwaway PostgreSQL cluster (tests marked slow, which CI
runs) and asserts them.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

from toolkit.kernel import LedgerStatus
from toolkit.effects import DurableLedger, URL_VARIABLE, connect
from course.worlds import process_context, reap

TOOL = "touch"


class EffectLog:
    """The downstream system: one JSON line per effect, appended with a single write (a kill cannot split it)."""

    def __init__(self, path: str):
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        try:
            text = Path(self.path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.split("\n")[:-1] if line]   # only whole lines count

    def find(self, key: str) -> dict[str, Any] | None:
        """The record of ``key``'s effect, or None: what a reconciler asks the downstream system."""
        return next((r for r in self.records() if r["key"] == key), None)


def _effect(log: EffectLog, worker: str, rng: random.Random):
    def effect(arguments: dict[str, Any]) -> dict[str, Any]:
        time.sleep(rng.uniform(0, 0.002))              # a window between the claim and the effect
        record = {"key": arguments["key"], "worker": worker, "effect": os.urandom(6).hex()}
        log.append(record)
        time.sleep(rng.uniform(0, 0.002))              # a window between the effect and its done row
        return record
    return effect


def settle_key(ledger: DurableLedger, log: EffectLog, key: str, effect: Any,
               patience: int = 40) -> Any:
    """Call ``key`` until it has a final answer: wait while a live owner holds it, reconcile a dead claim."""
    arguments = {"key": key}
    answer = None
    for _ in range(patience):
        answer = ledger.call(key, effect, arguments, tool=TOOL)
        if answer.status is LedgerStatus.IN_PROGRESS and not answer.error.retryable:
            answer = ledger.reconcile(key, arguments, lambda args: log.find(args["key"]), tool=TOOL)
            if answer.status is LedgerStatus.RECONCILED:
                return answer
            continue                                   # released (nothing happened): call again
        if answer.status is LedgerStatus.IN_PROGRESS or (answer.status is LedgerStatus.FAILED
                                                         and answer.error.retryable):
            time.sleep(0.005)
            continue
        return answer
    return answer


def _worker(path: str, log_path: str, keys: list[str], name: str, seed: int, lease: float, go: Any) -> None:
    go.wait(30)
    rng = random.Random(seed)
    order = list(keys)
    rng.shuffle(order)
    log = EffectLog(log_path)
    with DurableLedger(path, lease_seconds=lease, owner=name) as ledger:
        effect = _effect(log, name, rng)
        for key in order:
            settle_key(ledger, log, key, effect, patience=20)
    # done: stay alive until the storm kills it, so a slow parent always has a worker to kill (a plain sleep:
    # a multiprocessing Event waited on by a process that is then SIGKILLed would hang the parent's set())
    time.sleep(60)


def storm(workers: int = 8, keys: int = 600, kills: int = 40, lease: float = 2.0, seed: int = 0,
          timeout: float = 120.0, url: str | None = None) -> dict[str, Any]:
    """Run the storm and the restart on a SQLite file, or on the database ``url`` names; return
    the figures (see the module docstring)."""
    names = [f"k{i:04d}" for i in range(keys)]
    rng = random.Random(seed)
    ctx = process_context(None)
    began = time.perf_counter()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ledger-storm-")))
        path, log = url or str(tmp / "ledger.db"), EffectLog(str(tmp / "effects.log"))
        DurableLedger(path).close()                    # the table exists before the workers race
        go, started, procs, named = ctx.Event(), 0, [], {}
        view = stack.enter_context(closing(connect(path)))   # the parent's look at the claims a kill left

        def launch() -> None:
            nonlocal started
            name = f"storm-worker-{started}"
            process = ctx.Process(target=_worker, args=(path, log.path, names, name, seed * 1000 + started,
                                                        lease, go))
            process.start()
            stack.callback(reap, process, 5)
            procs.append(process)
            named[process.pid] = name
            started += 1

        for _ in range(workers):
            launch()
        go.set()
        done_kills, mid_call, after_effect, deadline = 0, 0, 0, time.monotonic() + timeout

        def kill(victim: Any) -> None:
            nonlocal done_kills, mid_call, after_effect
            os.kill(victim.pid, signal.SIGKILL)
            victim.join(10)
            done_kills += 1
            held = [k for (k,) in view.execute("SELECT key FROM ledger WHERE state = 'pending' AND owner LIKE ?",
                                               (named[victim.pid] + "/%",))]
            mid_call += bool(held)
            after_effect += bool(held) and log.find(held[0]) is not None

        while done_kills < kills and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.002, 0.02))
            alive = [p for p in procs if p.is_alive()]
            if not alive:
                break
            kill(rng.choice(alive))
            launch()
        for victim in [p for p in procs if p.is_alive()]:   # then the machine dies: every survivor at once
            kill(victim)
        figures = {"workers_started": started, "keys": keys, "kills": done_kills, "kills_mid_call": mid_call,
                   "kills_after_effect": after_effect, "storm_seconds": round(time.perf_counter() - began, 2)}
        return {**figures, **_restart(path, log, names, lease, began)}


def _restart(path: str, log: EffectLog, names: list[str], lease: float, began: float) -> dict[str, Any]:
    """Every worker is gone: wait out the leases, reap, retry every key once, and count."""
    with DurableLedger(path, lease_seconds=lease, owner="storm-restart") as ledger:
        left = ledger.pending()
        logged = {r["key"] for r in log.records()}
        orphans = sum(1 for e in left if e["key"] in logged)
        last = max((e["lease_until"] or 0.0 for e in left), default=0.0)
        time.sleep(max(0.0, last - time.time()) + 0.05)
        reaped = Counter(a.status.value for a in ledger.reap(log.find))
        effect = _effect(log, "restart", random.Random(0))
        answers = Counter(settle_key(ledger, log, key, effect).status.value for key in names)
        rows = {e["key"]: e for e in ledger.entries()}
        stuck = [e["key"] for e in ledger.pending()]
    effects = Counter(r["key"] for r in log.records())
    first = {}
    for record in log.records():
        first.setdefault(record["key"], record)
    lost = [k for k in names if k not in rows or rows[k]["result"] != first.get(k)]
    return {"dead_claims_at_restart": len(left),
            "orphan_effects_at_restart": orphans, "reaped": dict(reaped), "answers_after_restart": dict(answers),
            "effects": sum(effects.values()),
            "effects_per_key": sorted(set(effects[k] for k in names)), "duplicate_effects":
                sum(max(0, effects[k] - 1) for k in names), "lost_results": len(lost), "stuck_keys": len(stuck),
            "seconds": round(time.perf_counter() - began, 2),
            "keys_per_second": round(len(names) / (time.perf_counter() - began), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--keys", type=int, default=600)
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--lease", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", default=os.environ.get(URL_VARIABLE),
                        help="a database of its own (default: a SQLite file)")
    options = parser.parse_args()
    found = storm(options.workers, options.keys, options.kills, options.lease, options.seed,
                  url=options.url)
    print(f"{options.workers} workers x {found['keys']} keys, lease {options.lease:g} s: {found['kills']} SIGKILLs "
          f"({found['kills_mid_call']} inside a call, {found['kills_after_effect']} of them after the effect), "
          f"{found['workers_started']} workers started; storm {found['storm_seconds']} s, "
          f"all {found['seconds']} s ({found['keys_per_second']} keys/s); "
          f"{found['effects']} effects")
    print(f"restart: {found['dead_claims_at_restart']} dead claims ({found['orphan_effects_at_restart']} with their "
          f"effect made), reaped {found['reaped']}, then every key: {found['answers_after_restart']}")
    per_key = ",".join(map(str, found["effects_per_key"]))
    for name, value, aim, ok in (
            ("keys", found["keys"], f"=={options.keys}", found["keys"] == options.keys),
            ("kills", found["kills"], f">={options.kills}", found["kills"] >= options.kills),
            ("kills_inside_a_call", found["kills_mid_call"], ">=1", found["kills_mid_call"] >= 1),
            ("effects_per_key", per_key, "==1", per_key == "1"),
            ("lost_results", found["lost_results"], "==0", found["lost_results"] == 0),
            ("stuck_keys", found["stuck_keys"], "==0", found["stuck_keys"] == 0)):
        print(f"RESULT ledger_storm_{name} {value} aim{aim} {'ok' if ok else 'missed'}")


if __name__ == "__main__":
    main()
