"""Leases on pending keys: an owner and an expiry, a reaper, and fenced completion.

A claim on a key is held by an owner until its lease expires (or, on this machine, until the owner's process is
gone). While the lease is live the owner may still finish: other callers are told to wait, and ``reconcile``
leaves the claim alone. Once it is dead the key is settled from the downstream record (``reconcile`` for one key,
``reap`` for all), and an owner that comes back late finds that it lost the claim: a conflict, never ``ran``.
"""
import multiprocessing
import os
import signal

import pytest

import toolkit as tk
from toolkit.kernel import LedgerStatus
from toolkit.effects import DurableLedger


class Clock:
    """A wall clock the test moves by hand (leases compare times across processes, so they use wall time)."""

    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


ARGS = {"order_id": "order-431", "amount": 100, "idempotency_key": "inv:431:v1"}
KEY = ARGS["idempotency_key"]


@pytest.fixture
def clock():
    return Clock()


def pair(tmp_path, clock, lease=5.0):
    """Two workers on one ledger file, named (not host/pid), so only the lease can tell whether one is alive."""
    path = tmp_path / "ledger.db"
    return (DurableLedger(path, lease_seconds=lease, clock=clock, owner="worker-a"),
            DurableLedger(path, lease_seconds=lease, clock=clock, owner="worker-b"))


def test_the_table_keeps_an_owner_and_a_lease(tmp_path, clock):
    a, b = pair(tmp_path, clock)
    columns = {row[1] for row in a.conn.execute("PRAGMA table_info(ledger)")}
    assert {"owner", "lease_until"} <= columns

    def look(arguments):
        (entry,) = b.pending()
        assert entry["owner"].startswith("worker-a/") and entry["lease_until"] == clock.now + 5
        assert entry["lease"] == "live"
        return {"ok": True}

    assert a.call(KEY, look, ARGS).status is LedgerStatus.RAN
    assert a.lookup(KEY)["owner"] is None and a.lookup(KEY)["lease"] == "", "a finished key holds no lease"


def test_a_slow_owner_is_waited_for_and_a_dead_one_is_reconciled(tmp_path, clock):
    a, b = pair(tmp_path, clock)
    asked = []

    def record(arguments):
        asked.append(arguments["idempotency_key"])
        return {"invoice_id": "INV-9"}

    def slow(arguments):
        waiting = b.call(KEY, record, ARGS)
        assert waiting.status is LedgerStatus.IN_PROGRESS and waiting.error.retryable
        assert waiting.to_result("c2").status is tk.Status.RECOVERABLE_FAILURE
        early = b.reconcile(KEY, ARGS, record)
        assert early.status is LedgerStatus.IN_PROGRESS and early.error.retryable and asked == [], \
            "a live lease is a slow owner: reconcile must not settle its key"
        clock.advance(5.5)                                  # the lease runs out while the owner still works
        stuck = b.call(KEY, record, ARGS)
        assert stuck.status is LedgerStatus.IN_PROGRESS and not stuck.error.retryable, \
            "a dead claim is not 'ask again': retrying would wait for ever"
        assert stuck.error.received == "lease expired"
        assert stuck.to_result("c3").status is tk.Status.TIMEOUT
        assert b.pending()[0]["lease"] == "lease expired"
        settled = b.reconcile(KEY, ARGS, record)
        assert settled.status is LedgerStatus.RECONCILED and asked == [KEY]
        return {"invoice_id": "INV-9"}

    late = a.call(KEY, slow, ARGS)
    assert late.status is LedgerStatus.CONFLICT and not late.ok, "the key was settled under the late owner"
    assert late.error.code == "idempotency_conflict" and "lost" in late.error.message
    assert late.to_result("c1").status is tk.Status.REJECTED
    assert b.call(KEY, record, ARGS).status is LedgerStatus.REPLAYED


def test_a_late_owner_whose_key_was_retaken_reports_a_conflict_not_ran(tmp_path, clock):
    """The measured failure: a slow owner released and retaken; before, both callers were told ``ran``."""
    a, b = pair(tmp_path, clock)
    effects, told = [], []

    def slow(arguments):
        effects.append("a")
        clock.advance(6)
        assert b.reconcile(KEY, ARGS, lambda args: None).status is LedgerStatus.FAILED   # the record shows nothing
        second = b.call(KEY, lambda args: effects.append("b") or {"by": "b"}, ARGS)
        told.append(second.status)
        return {"by": "a"}

    told.insert(0, a.call(KEY, slow, ARGS).status)
    assert told == [LedgerStatus.CONFLICT, LedgerStatus.RAN], "only the holder of the claim may say ran"
    assert b.lookup(KEY)["result"] == {"by": "b"} and b.lookup(KEY)["state"] == "done"
    assert effects == ["a", "b"], "fencing makes the answers honest; one effect needs a lease longer than the call"


def test_an_owner_that_gives_up_ends_its_lease(tmp_path, clock):
    a, b = pair(tmp_path, clock, lease=600)

    def lost(arguments):
        raise ConnectionResetError("peer went away")

    assert a.call(KEY, lost, ARGS).status is LedgerStatus.PENDING
    again = b.call(KEY, lost, ARGS)
    assert again.status is LedgerStatus.IN_PROGRESS and not again.error.retryable, \
        "nobody is finishing this call: waiting cannot help"
    assert b.reconcile(KEY, ARGS, lambda args: {"invoice_id": "INV-9"}).status is LedgerStatus.RECONCILED


def _claim_then_die(path: str, started) -> None:
    with DurableLedger(path, lease_seconds=600) as ledger:
        def effect(arguments):
            started.set()
            os.kill(os.getpid(), signal.SIGKILL)

        ledger.call(KEY, effect, ARGS)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_owners_claim_is_dead_at_once_on_this_machine(tmp_path):
    path = str(tmp_path / "ledger.db")
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    started = ctx.Event()
    worker = ctx.Process(target=_claim_then_die, args=(path, started))
    worker.start()
    worker.join(30)
    assert started.is_set() and worker.exitcode == -signal.SIGKILL
    with DurableLedger(path, lease_seconds=600) as ledger:
        (entry,) = ledger.pending()
        assert entry["lease"] == "owner gone" and entry["owner"].split("/")[1] == str(worker.pid)
        stuck = ledger.call(KEY, lambda a: {"twice": True}, ARGS)
        assert stuck.status is LedgerStatus.IN_PROGRESS and not stuck.error.retryable
        assert ledger.reconcile(KEY, ARGS, lambda a: None).status is LedgerStatus.FAILED
        assert ledger.call(KEY, lambda a: {"invoice_id": "INV-9"}, ARGS).status is LedgerStatus.RAN


def test_the_reaper_settles_dead_claims_and_leaves_live_ones(tmp_path, clock):
    a, b = pair(tmp_path, clock, lease=60)
    records = {"found": {"invoice_id": "INV-9"}}

    def boom(arguments):
        raise ConnectionResetError

    def find(key):
        if key == "dark":
            raise TimeoutError("the record is unreachable")
        return records.get(key)

    for key in ("found", "absent", "dark"):
        assert a.call(key, boom, {"key": key}).status is LedgerStatus.PENDING
    seen = {}

    def running(arguments):
        seen["reaped"] = {answer.key: answer.status for answer in b.reap(find)}
        return {"done": True}

    assert a.call("live", running, {}).status is LedgerStatus.RAN, "the reaper must not take a live claim"
    assert seen["reaped"] == {"found": LedgerStatus.RECONCILED, "absent": LedgerStatus.FAILED,
                              "dark": LedgerStatus.PENDING}
    assert b.lookup("found")["result"] == {"invoice_id": "INV-9"} and b.lookup("absent") is None
    assert [e["key"] for e in b.pending()] == ["dark"], "nothing could tell: it stays for a person"
    assert b.reap(find)[0].status is LedgerStatus.PENDING and b.reap(lambda key: None)[0].key == "dark"
    assert b.pending() == []


def test_a_late_owner_after_the_reaper_recorded_its_key(tmp_path, clock):
    a, b = pair(tmp_path, clock)

    def slow(arguments):
        clock.advance(10)
        assert [x.status for x in b.reap(lambda key: {"from": "record"})] == [LedgerStatus.RECONCILED]
        return {"from": "owner"}

    late = a.call(KEY, slow, ARGS)
    assert late.status is LedgerStatus.CONFLICT and b.lookup(KEY)["result"] == {"from": "record"}


def test_memory_ledger_says_an_unknown_outcome_is_not_worth_waiting_for():
    ledger = tk.MemoryLedger()
    assert ledger.call(KEY, lambda a: 1 / 0, ARGS).status is LedgerStatus.PENDING
    again = ledger.call(KEY, lambda a: 1, ARGS)
    assert again.status is LedgerStatus.IN_PROGRESS and not again.error.retryable


def test_lease_settings_are_checked(tmp_path):
    for bad in (0, -1, float("nan"), float("inf"), "5"):
        with pytest.raises(ValueError, match="lease_seconds"):
            DurableLedger(tmp_path / "l.db", lease_seconds=bad)
