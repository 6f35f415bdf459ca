"""Chapter 05: exercise 05's harness: real crashes and a real two-process race against the student's ledger.

The student writes ``fingerprint_of(arguments)`` (the SHA-256 of one canonical
text of the arguments) and ``create(conn, arguments, effect, record)``. Every
function below takes the student's ``fingerprint`` (the toolkit's by default):
``record`` writes it into the ledger row, so the row holds what the student's
own comparison expects. ``attempts`` runs
it twice in child processes: the first attempt is killed with SIGKILL at a crash
point, the second retries. ``crash_counts`` and ``attempts_at_every_point`` play
every crash point at once, each in its own folder with its own two processes.
``race_requests`` starts two processes with the same request at the same moment;
each one, after its first ``SELECT``, waits for the other to have looked too, so
a lookup made outside the transaction really is made by both before either
commits. A lookup inside
``with transaction(conn):`` is not: ``BEGIN IMMEDIATE`` makes the second process
wait for the first to commit, so the first stops waiting as soon as it sees the
other one asking for the lock while it holds it (and after ``RACE_PAUSE`` at
most). Every child is reaped and the temporary folder removed before a
function returns; what the student's function raised comes back as text
(``{"raised": "IntegrityError: ..."}``), so a check can explain it; an
unwritten stub (``NotImplementedError``) is raised again in the caller, so the
check says the part is not done yet.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from toolkit.effects import connect, transaction
from toolkit._json import fingerprint
from course.worlds import billing_service
from course.worlds import in_one_child, process_context, reap
from course.worlds import CRASH_POINTS, KILLED, ORDER, die_at

LEDGER_TABLE = """CREATE TABLE IF NOT EXISTS ledger (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,          -- sha256 of the arguments' canonical JSON
    invoice     TEXT NOT NULL           -- the invoice this key produced, as JSON
)"""
RACE_PAUSE = 1.0      # seconds at most a racer waits, after its first lookup, for news of the other one


def find(conn: Any, key: str) -> dict[str, Any] | None:
    """The ledger row for ``key`` as ``{"fingerprint": ..., "invoice": {...}}``, or None."""
    row = conn.execute("SELECT fingerprint, invoice FROM ledger WHERE key = ?", (key,)).fetchone()
    return {"fingerprint": row[0], "invoice": json.loads(row[1])} if row else None


class _RacingConnection:
    """A connection that, after its first SELECT, waits until the other racer has looked too, or is blocked.

    ``mine`` and ``theirs`` are pairs of events: (asked for the write lock, looked the key up). The other
    racer is blocked when it asked for the lock while this one holds it (this one is inside a transaction):
    ``BEGIN IMMEDIATE`` then keeps it waiting until this one commits, so there is nothing to wait for.
    """

    def __init__(self, conn: sqlite3.Connection, mine: tuple, theirs: tuple) -> None:
        self._conn, self._mine, self._theirs = conn, mine, theirs

    def execute(self, sql: str, *args: Any) -> Any:
        statement = sql.lstrip().upper()
        if statement.startswith("BEGIN"):
            self._mine[0].set()
        cursor = self._conn.execute(sql, *args)
        if statement.startswith("SELECT") and not self._mine[1].is_set():
            self._mine[1].set()
            self._wait_for_the_other()
        return cursor

    def _wait_for_the_other(self) -> None:
        asked_lock, looked = self._theirs
        deadline = time.monotonic() + RACE_PAUSE
        while not looked.wait(0.002) and time.monotonic() < deadline:
            if asked_lock.is_set() and self._conn.in_transaction:
                return

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _ledger_attempt(create: Callable, folder: str, arguments: dict, crash_at: str, number: int,
                    events: tuple, fingerprint_of: Callable = fingerprint) -> None:
    """One attempt, in a child process: it dies for real at ``crash_at``, and writes its answer to a file."""
    def effect(conn: Any, args: dict) -> dict[str, Any]:
        die_at("before_send", crash_at)
        return billing_service.issue_invoice(conn, args, honour_keys=False)

    def record(conn: Any, args: dict, invoice: dict) -> None:
        die_at("after_effect_before_ledger", crash_at)
        conn.execute("INSERT INTO ledger (key, fingerprint, invoice) VALUES (?, ?, ?)",
                     (args["idempotency_key"], fingerprint_of(args), json.dumps(invoice)))

    conn = connect(Path(folder) / "billing.db")
    handle = _RacingConnection(conn, *events) if events else conn
    try:
        answer = create(handle, arguments, effect, record)
    except Exception as exc:   # the check explains it; a child must not die with a traceback
        answer = {"raised": type(exc).__name__ + (f": {exc}" if str(exc) else "")}
    conn.close()
    die_at("after_ledger", crash_at)
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


def _unwritten(answers: list[Any]) -> None:
    """Raise ``NotImplementedError`` here, in the notebook, when an attempt met the stub."""
    stub = "NotImplementedError"
    if any(isinstance(a, dict) and str(a.get("raised", "")).startswith(stub) for a in answers):
        raise NotImplementedError("the function the attempts ran is not written yet")


def _fork_context() -> Any:
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        raise RuntimeError("this harness needs fork to start its attempts, and this platform has none (Windows): "
                           "run the exercise under Linux, macOS, WSL or a Linux container")
    return process_context("fork")      # the child inherits the functions defined in the notebook


def attempts_at_every_point(create: Callable, points: Any = tuple(CRASH_POINTS),
                            retry_arguments: dict = ORDER,
                            fingerprint: Callable = fingerprint) -> dict[str, dict[str, Any]]:
    """``attempts`` at each of ``points``, all played at the same time (each in its own folder): point -> outcome."""
    ctx = _fork_context()
    if len(points) > 1:                # every attempt starts from one child process
        outcomes = in_one_child(_attempts_side_by_side, create, tuple(points), retry_arguments, ctx,
                                fingerprint)
    else:
        outcomes = _attempts_side_by_side(create, tuple(points), retry_arguments, ctx, fingerprint)
    _unwritten([outcome[which] for outcome in outcomes.values() for which in ("first", "answer")])
    return outcomes


def _attempts_side_by_side(create: Callable, points: tuple, retry_arguments: dict, ctx: Any,
                           fingerprint_of: Callable) -> dict[str, Any]:
    folders: dict[str, Path] = {}
    firsts: dict[str, Any] = {}
    retries: dict[str, Any] = {}
    try:
        for point in points:
            folders[point] = Path(tempfile.mkdtemp(prefix="exercise05-"))
            _books(folders[point])
            firsts[point] = _attempt_child(ctx, create, folders[point], ORDER, point, 1,
                                           fingerprint_of)
        for point in points:                      # each retry starts as soon as its own first attempt is over
            reap(firsts[point], 30)
            retries[point] = _attempt_child(ctx, create, folders[point], retry_arguments, "none", 2,
                                            fingerprint_of)
        outcomes = {}
        for point in points:
            reap(retries[point], 30)
            invoices, answers = _outcome(folders[point], 2)
            outcomes[point] = {"killed": firsts[point].exitcode == KILLED, "invoices": invoices,
                               "first": answers[0], "answer": answers[1]}
    finally:
        for child in (*firsts.values(), *retries.values()):
            reap(child, 0)
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    return outcomes


def _attempt_child(ctx: Any, create: Callable, folder: Path, arguments: dict, point: str,
                   number: int, fingerprint_of: Callable) -> Any:
    child = ctx.Process(target=_ledger_attempt,
                        args=(create, str(folder), arguments, point, number, (), fingerprint_of))
    child.start()
    return child


def attempts(create: Callable, crash_at: str, retry_arguments: dict = ORDER,
             fingerprint: Callable = fingerprint) -> dict[str, Any]:
    """Attempt 1 with ``ORDER`` dies at ``crash_at``; attempt 2 retries (by default the same request).

    Returns whether attempt 1 was killed, the invoices billing holds afterwards, and what each attempt answered.
    """
    return attempts_at_every_point(create, (crash_at,), retry_arguments, fingerprint)[crash_at]


def naive_create_invoice(conn: Any, arguments: dict, effect: Callable, record: Callable) -> Any:
    """The chapter's naive agent in the exercise's setting: look up, then two transactions (the red cell)."""
    found = find(conn, arguments["idempotency_key"])
    if found:
        return found["invoice"]
    with transaction(conn):
        invoice = effect(conn, arguments)
    with transaction(conn):
        record(conn, arguments, invoice)
    return invoice


def crash_counts(create: Callable) -> dict[str, int]:
    """Invoices after the retry, for a crash at each point (the points played at the same time)."""
    return {point: len(outcome["invoices"]) for point, outcome in attempts_at_every_point(create).items()}


def race_requests(create: Callable, fingerprint: Callable = fingerprint) -> dict[str, Any]:
    """Two processes send ``ORDER`` at the same moment; the invoices afterwards and both answers."""
    ctx = _fork_context()
    folder = Path(tempfile.mkdtemp(prefix="exercise05-race-"))
    children = []
    try:
        _books(folder)
        flags = ((ctx.Event(), ctx.Event()), (ctx.Event(), ctx.Event()))   # per racer: asked the lock, looked
        for number in (1, 2):
            mine, theirs = flags[number - 1], flags[2 - number]
            children.append(ctx.Process(target=_ledger_attempt,
                                        args=(create, str(folder), ORDER, "none", number,
                                              (mine, theirs), fingerprint)))
        for child in children:
            child.start()
        for child in children:
            reap(child, 30)
        invoices, answers = _outcome(folder, 2)
        _unwritten(answers)
    finally:
        for child in children:
            reap(child, 0)
        shutil.rmtree(folder, ignore_errors=True)
    return {"invoices": invoices, "answers": answers}


__all__ = ["attempts", "attempts_at_every_point", "crash_counts", "find", "LEDGER_TABLE", "naive_create_invoice",
           "race_requests", "RACE_PAUSE"]
