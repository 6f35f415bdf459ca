"""Chapter 05: exercise 05's harness: real crashes and a real two-process race against the student's ledger.

The student writes ``create(conn, arguments, effect, record)``. ``attempts`` runs
it twice in child processes: the first attempt is killed with SIGKILL at a crash
point, the second retries. ``race_requests`` starts two processes with the same request
at the same moment; each one, after its first ``SELECT``, waits a little for the
other to have looked too, so a lookup made outside the transaction really is
made by both before either commits. A lookup inside ``with transaction(conn):``
is not: ``BEGIN IMMEDIATE`` makes the second process wait for the first to
commit. Every child is reaped and the temporary folder removed before a
function returns; what the student's function raised comes back as text
(``{"raised": "IntegrityError: ..."}``), so a check can explain it.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Callable

from toolkit.effects import connect, fingerprint, transaction
from toolkit.worlds import billing_service
from toolkit.worlds.children import process_context, reap
from toolkit.worlds.crash_agents import CRASH_POINTS, ORDER

LEDGER_TABLE = """CREATE TABLE IF NOT EXISTS ledger (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,          -- sha256 of the arguments' canonical JSON
    invoice     TEXT NOT NULL           -- the invoice this key produced, as JSON
)"""
KILLED = -signal.SIGKILL if hasattr(signal, "SIGKILL") else 137   # a child's exit code after the crash
RACE_PAUSE = 1.0      # seconds a racer waits, after its first lookup, for the other one to look too


def find(conn: Any, key: str) -> dict[str, Any] | None:
    """The ledger row for ``key`` as ``{"fingerprint": ..., "invoice": {...}}``, or None."""
    row = conn.execute("SELECT fingerprint, invoice FROM ledger WHERE key = ?", (key,)).fetchone()
    return {"fingerprint": row[0], "invoice": json.loads(row[1])} if row else None


class _RacingConnection:
    """A connection that, after its first SELECT, tells the other racer and waits briefly for its news."""

    def __init__(self, conn: sqlite3.Connection, mine: Any, theirs: Any) -> None:
        self._conn, self._mine, self._theirs = conn, mine, theirs

    def execute(self, sql: str, *args: Any) -> Any:
        cursor = self._conn.execute(sql, *args)
        if sql.lstrip().upper().startswith("SELECT") and not self._mine.is_set():
            self._mine.set()
            self._theirs.wait(RACE_PAUSE)
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _crash_here(point: str, crash_at: str) -> None:
    if point == crash_at:
        if hasattr(signal, "SIGKILL"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(137)


def _ledger_attempt(create: Callable, folder: str, arguments: dict, crash_at: str, number: int,
                    events: tuple) -> None:
    """One attempt, in a child process: it dies for real at ``crash_at``, and writes its answer to a file."""
    def effect(conn: Any, args: dict) -> dict[str, Any]:
        _crash_here("before_send", crash_at)
        return billing_service.issue_invoice(conn, args, honour_keys=False)

    def record(conn: Any, args: dict, invoice: dict) -> None:
        _crash_here("after_effect_before_ledger", crash_at)
        conn.execute("INSERT INTO ledger (key, fingerprint, invoice) VALUES (?, ?, ?)",
                     (args["idempotency_key"], fingerprint(args), json.dumps(invoice)))

    conn = connect(Path(folder) / "billing.db")
    handle = _RacingConnection(conn, *events) if events else conn
    try:
        answer = create(handle, arguments, effect, record)
    except Exception as exc:   # the check explains it; a child must not die with a traceback
        answer = {"raised": type(exc).__name__ + (f": {exc}" if str(exc) else "")}
    conn.close()
    _crash_here("after_ledger", crash_at)
    (Path(folder) / f"answer-{number}.json").write_text(json.dumps(answer, default=str))


def _books(folder: Path) -> None:
    conn = billing_service.open_books(folder / "billing.db")
    with transaction(conn):
        conn.execute(LEDGER_TABLE)
    conn.close()


def _outcome(folder: Path, count: int) -> tuple[list[str], list[Any]]:
    conn = connect(folder / "billing.db")
    invoices = [i["invoice_id"] for i in billing_service.list_invoices(conn)]
    conn.close()
    answers = []
    for number in range(1, count + 1):
        path = folder / f"answer-{number}.json"
        answers.append(json.loads(path.read_text()) if path.exists() else None)
    return invoices, answers


def _fork_context() -> Any:
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        raise RuntimeError("this harness needs fork to start its attempts, and this platform has none (Windows): "
                           "run the exercise under Linux, macOS, WSL or a Linux container")
    return process_context("fork")      # the child inherits the functions defined in the notebook


def attempts(create: Callable, crash_at: str, retry_arguments: dict = ORDER) -> dict[str, Any]:
    """Attempt 1 with ``ORDER`` dies at ``crash_at``; attempt 2 retries (by default the same request).

    Returns whether attempt 1 was killed, the invoices billing holds afterwards, and what each attempt answered.
    """
    ctx = _fork_context()
    folder = Path(tempfile.mkdtemp(prefix="exercise05-"))
    try:
        _books(folder)
        codes = []
        for number, (arguments, point) in enumerate(((ORDER, crash_at), (retry_arguments, "none")), start=1):
            child = ctx.Process(target=_ledger_attempt, args=(create, str(folder), arguments, point, number, ()))
            child.start()
            reap(child, 30)
            codes.append(child.exitcode)
        invoices, answers = _outcome(folder, 2)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"killed": codes[0] == KILLED, "invoices": invoices, "first": answers[0], "answer": answers[1]}


def crash_counts(create: Callable) -> dict[str, int]:
    """Invoices after the retry, for a crash at each point."""
    return {point: len(attempts(create, point)["invoices"]) for point in CRASH_POINTS}


def race_requests(create: Callable) -> dict[str, Any]:
    """Two processes send ``ORDER`` at the same moment; the invoices afterwards and both answers."""
    ctx = _fork_context()
    folder = Path(tempfile.mkdtemp(prefix="exercise05-race-"))
    children = []
    try:
        _books(folder)
        flags = (ctx.Event(), ctx.Event())
        for number in (1, 2):
            mine, theirs = flags[number - 1], flags[2 - number]
            children.append(ctx.Process(target=_ledger_attempt,
                                        args=(create, str(folder), ORDER, "none", number, (mine, theirs))))
        for child in children:
            child.start()
        for child in children:
            reap(child, 30)
        invoices, answers = _outcome(folder, 2)
    finally:
        for child in children:
            reap(child, 0)
        shutil.rmtree(folder, ignore_errors=True)
    return {"invoices": invoices, "answers": answers}


__all__ = ["attempts", "crash_counts", "find", "KILLED", "LEDGER_TABLE", "race_requests", "RACE_PAUSE"]
