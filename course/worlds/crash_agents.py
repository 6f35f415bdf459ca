"""Chapter 05: the agents of the duplicate-invoice trace: one create_invoice attempt that may really die.

Each attempt runs in a child process and kills itself (SIGKILL: no cleanup,
no flush, no goodbye) when it reaches the crash point it was given. Every
process writes its trace sentences to one shared ``EventLog``.

Three agents, and where each keeps its ledger:

``naive``   look up the local ledger, call billing (which ignores keys), then
            write the ledger in a separate step. A crash in between duplicates.
``atomic``  the invoice and the ledger row live in one database and commit in
            one transaction. A crash in between rolls both back.
``keyed``   billing honours the idempotency key; the local ledger goes
            pending -> done, and a retry that finds a pending key asks billing
            with the same key (an inquiry, not a new proposal).

The naive and keyed agents keep their ledger in a SQLite file, or, with
``durable`` off, in the process's memory: a killed process takes it along, and
a process that lived makes the retry itself, from the same memory.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.kernel import LedgerStatus, MemoryLedger
from toolkit.effects import DurableLedger
from course.worlds import BillingClient
from course.worlds import issue_invoice

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

#: How a child killed at its crash point shows up to its parent (multiprocessing's exit code).
KILLED = -signal.SIGKILL if hasattr(signal, "SIGKILL") else 137


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


def die_at(point: str, crash_at: str | None) -> None:
    """Kill this process for real when it reaches the chosen crash point."""
    if point != crash_at:
        return
    if hasattr(signal, "SIGKILL"):
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(137)  # pragma: no cover - platforms without SIGKILL


def agent(mode: str, crash_at: str | None, workdir: str, port: int | None, attempt: int,
          durable: bool = True, between: Any = None) -> None:
    """The agent's create_invoice step in a child process: attempt ``attempt``, dying at ``crash_at``.

    With ``durable`` off the ledger is this process's memory. ``between`` (a
    pair of events, or None) makes a process that survived its attempt say so
    (first event), wait for the word (second event), and retry itself.
    """
    work = Path(workdir)
    log = EventLog(str(work / "events.jsonl"))
    memory = None if durable else _MemoryBook()
    _one_attempt(mode, crash_at, work, port, attempt, log, memory)
    if between is not None:
        survived, retry_now = between
        survived.set()
        retry_now.wait(30)
        _one_attempt(mode, None, work, port, attempt + 1, log, memory)


def _one_attempt(mode: str, crash_at: str | None, work: Path, port: int | None, attempt: int, log: EventLog,
             memory: Any) -> None:
    arguments = dict(ORDER)
    log(f"agent sends create_invoice({arguments['order_id']}, key={arguments['idempotency_key']})"
        if attempt == 1 else RETRY_TEXT[mode])
    if mode == "atomic":
        _atomic(arguments, crash_at, work, log)
    else:
        steps = _naive if mode == "naive" else _keyed
        client = BillingClient(port or 0)
        if memory is not None:
            steps(arguments, crash_at, memory, client, log)
        else:
            with DurableLedger(work / "agent-ledger.db") as ledger:
                steps(arguments, crash_at, ledger, client, log)
    die_at("after_ledger", crash_at)


class _MemoryBook(MemoryLedger):
    """The agent's ledger in its own memory, with the two steps the naive agent takes on a
    ``DurableLedger``."""

    def lookup(self, key: str) -> dict[str, Any] | None:
        return {"key": key, "result": self.invoke(key, _never_runs, None)} if key in self else None

    def record(self, key: str, arguments: Any, result: Any, *, tool: str = "") -> None:
        self.invoke(key, lambda _arguments: result, arguments)     # a new key: record what billing returned


def _never_runs(_arguments: Any) -> Any:  # pragma: no cover - a known key never runs its effect
    raise AssertionError("a known key replays; it does not run")


def _replay_line(result: dict) -> str:
    return f"local ledger replays {result['invoice_id']}; billing is not called"


def _naive(arguments: dict, crash_at: str | None, ledger: Any, client: BillingClient, log: EventLog) -> None:
    entry = ledger.lookup(KEY)
    if entry is not None:
        log(_replay_line(entry["result"]))
        return
    die_at("before_send", crash_at)
    invoice = client.create_invoice(arguments)            # the effect, in another system
    die_at("after_effect_before_ledger", crash_at)       # t2: the gap between two separate steps
    ledger.record(KEY, arguments, invoice, tool="create_invoice")


def _keyed(arguments: dict, crash_at: str | None, ledger: Any, client: BillingClient, log: EventLog) -> None:
    def effect(args: dict) -> dict:
        die_at("before_send", crash_at)
        invoice = client.create_invoice(args)              # the key travels downstream in args
        die_at("after_effect_before_ledger", crash_at)
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
        die_at("before_send", crash_at)
        invoice = issue_invoice(conn, args, honour_keys=False)
        log(f"invoice {invoice['invoice_id']} is written inside the open transaction")
        die_at("after_effect_before_ledger", crash_at)
        return invoice

    with DurableLedger(work / "billing.db") as ledger:      # the ledger lives in billing's database
        answer = ledger.call_atomic(KEY, effect, arguments, tool="create_invoice")
    if answer.status is LedgerStatus.RAN:
        log(f"invoice {answer.result['invoice_id']} and its ledger entry commit in one transaction")
    elif answer.status is LedgerStatus.REPLAYED:
        log(_replay_line(answer.result))


__all__ = ["CRASH_POINTS", "KEY", "KILLED", "MODES", "ORDER", "EventLog", "agent", "die_at"]
