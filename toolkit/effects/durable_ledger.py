"""Chapter 05: the durable ledger: the ledger rule kept in a database, so a key survives a crash.

The same answers as ``MemoryLedger.call``, one row per (principal, key), in a SQLite file or on a
PostgreSQL server (``database.connect``: a path or a URL). A call first claims its key (``CLAIM``:
an insert the unique key lets through once; whoever comes second reads the first one's row). An
effect in the same database commits with its row (``call_atomic``): exactly once. An effect
elsewhere is bracketed by a *pending* and a *done* row (``call``); a crash between leaves a leased
claim that ``reconcile`` or ``reap`` settle from the downstream record. Every method answers
instead of raising."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from toolkit.kernel import Answer, invoke_effect, LedgerStatus, Status, ToolFailure, ToolResult
from toolkit._json import check_call
from toolkit._show import scrub, secret_values
from toolkit.effects import (as_sent, columns, connect, transaction, LIVE, claim_owner,
                             existing_answer, lease_length, lease_state, settle_row,
                             storage_failure, decode_result, encode_result)

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger ({rowid}
    principal   TEXT NOT NULL,
    key         TEXT NOT NULL,
    tool        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,                           -- sha256 of canonical JSON arguments
    state       TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    result      TEXT,                                    -- JSON, once done
    owner       TEXT,                                    -- who holds a pending claim (host/pid/claim)
    lease_until DOUBLE PRECISION,                        -- when that claim runs out (unix seconds)
    PRIMARY KEY (principal, key)
)"""
_COLUMNS = "tool, fingerprint, state, result, owner, lease_until"
#: The claim: the unique key (principal, key) lets one insert through; the others insert nothing.
CLAIM = ("INSERT INTO ledger (principal, key, tool, fingerprint, state, owner, lease_until) "
         "VALUES (?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (principal, key) DO NOTHING")
#: The row a claim met (locked till the transaction ends, where the dialect locks rows).
FIND = f"SELECT {_COLUMNS} FROM ledger WHERE principal = ? AND key = ?{{lock_row}}"


class DurableLedger:
    """A durable ledger in a database (a SQLite path, or a URL; None: ``COURSE_DATABASE_URL``);
    ``owner`` holds a claim for ``lease_seconds``."""

    def __init__(self, where: str | Path | None = None, *, synchronous: str = "FULL",
                 busy_timeout_ms: int = 10_000, lease_seconds: float = 60.0,
                 owner: str | None = None, clock: Callable[[], float] = time.time):
        self.lease_seconds, self.owner, self.clock = lease_length(lease_seconds), owner, clock
        self._lock = threading.RLock()
        self.conn = connect(where, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms,
                            check_same_thread=False)
        self._find = as_sent(self.conn, FIND)
        with transaction(self.conn, serial=True):
            self.conn.execute(as_sent(self.conn, LEDGER_SCHEMA))
            have = columns(self.conn, "ledger")
            for column, kind in (("owner", "TEXT"), ("lease_until", "REAL")):   # a file from before leases
                if column not in have:
                    self.conn.execute(f"ALTER TABLE ledger ADD COLUMN {column} {kind}")

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> "DurableLedger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        """Finished entries (a pending claim is not yet an entry)."""
        with self._lock:
            return self.conn.execute("SELECT count(*) FROM ledger WHERE state = 'done'").fetchone()[0]

    def __contains__(self, key: object) -> bool:
        """True for a finished key (principal "")."""
        entry = self.lookup(key) if isinstance(key, str) else None
        return entry is not None and entry["state"] == "done"

    def lookup(self, key: str, principal: str = "") -> dict[str, Any] | None:
        """The row for a key as plain data, or None."""
        with self._lock:
            row = self.conn.execute(f"SELECT principal, key, {_COLUMNS} FROM ledger WHERE principal = ? AND key = ?",
                                    (principal, key)).fetchone()
        return self._entry(row) if row else None

    def entries(self) -> list[dict[str, Any]]:
        """Every row, oldest first, with ``lease``: ``"live"``, why a claim is dead, or ``""``."""
        with self._lock:
            rows = self.conn.execute(f"SELECT principal, key, {_COLUMNS} FROM ledger ORDER BY rowid").fetchall()
        return [self._entry(r) for r in rows]

    def pending(self) -> list[dict[str, Any]]:
        """Claims whose outcome nobody has recorded: the reconciliation worklist (``lease`` tells dead from live)."""
        return [e for e in self.entries() if e["state"] == "pending"]

    def _entry(self, row: tuple) -> dict[str, Any]:
        principal, key, tool, _digest, state, text, owner, until = row
        lease = lease_state(owner, until, self.clock()) if state == "pending" else ""
        return {"principal": principal, "key": key, "tool": tool, "state": state, "result": decode_result(text),
                "owner": owner, "lease_until": until, "lease": lease}

    def _select(self, principal: str, key: str) -> tuple | None:
        return self.conn.execute(self._find, (principal, key)).fetchone()

    def _claim(self, principal: str, key: str, tool: str, digest: str, owner: str) -> tuple | None:
        """Claim the key (None), or the row already there. On a server the row a claim met may be
        deleted before it is read (a released key): then the key is free, so claim it again."""
        for _ in range(100):
            row = (principal, key, tool, digest, owner, self.clock() + self.lease_seconds)
            if self.conn.execute(CLAIM, row).rowcount == 1:
                return None
            row = self._select(principal, key)
            if row:
                return row
        raise self.conn.Error("the key's row kept vanishing between a claim and its read")

    @contextmanager
    def _opening(self, key: str, arguments: Any, tool: str, principal: str) -> Iterator[tuple]:
        """Check the call, claim its key; the block runs in the claim's transaction with
        ``(answer, parsed arguments, owner)``: an answer (invalid, or the row met) is returned."""
        error, arguments, digest = check_call(key, arguments, tool, principal)   # parsed once
        if error:
            yield Answer.invalid(key, error), arguments, ""
            return
        owner = claim_owner(self.owner)
        with self._lock, transaction(self.conn):
            row = self._claim(principal, key, tool, digest, owner)
            yield row and existing_answer(row, key, tool, digest, self.clock()), arguments, owner

    def call_atomic(self, key: str, effect: Callable[[Any, Any], Any], arguments: Any, *,
                    tool: str = "", principal: str = "", secret_fields: Iterable[str] = ()) -> Answer:
        """Run ``effect(conn, arguments)`` and write its row in ONE transaction: both or neither."""
        try:
            with self._opening(key, arguments, tool, principal) as (answer, arguments, owner):
                if answer:
                    return answer
                value = effect(self.conn, arguments)
                try:
                    text = encode_result(value, strict=True)
                except (TypeError, ValueError):
                    raise _NotStorable from None
                settle_row(self.conn, principal, key, owner, text)
        except ToolFailure as failure:
            secrets = secret_values(arguments, secret_fields)
            return Answer.refusal("failed", key, scrub(failure.message, secrets), code=scrub(failure.reason, secrets),
                                  retryable=failure.status is Status.RECOVERABLE_FAILURE)
        except _NotStorable:
            return Answer.refusal("failed", key, "the result is not JSON, so nothing was committed",
                                  code="not_serializable")
        except self.conn.Error as exc:
            return storage_failure(key, exc, "rolled back", secret_values(arguments, secret_fields))
        except Exception as exc:
            return Answer.refusal("failed", key, f"the effect raised {type(exc).__name__}; rolled back",
                                  code="execution_failed", retryable=True)
        return Answer(LedgerStatus.RAN, key, decode_result(text))

    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "", secret_fields: Iterable[str] = ()) -> Answer:
        """Claim the key (pending, with a lease; committed before the effect starts), run
        ``effect(arguments)``, record done if the claim still holds. An unknown outcome ends the
        lease at once; a claim settled or retaken meanwhile answers CONFLICT."""
        try:
            with self._opening(key, arguments, tool, principal) as (answer, arguments, owner):
                if answer:
                    return answer
        except self.conn.Error as exc:
            return storage_failure(key, exc, "nothing was run", secret_values(arguments, secret_fields))
        # The claim found no row for the key: k is not in dom(L), so the rule runs f once.
        _, verdict, value, error = invoke_effect(effect, arguments, key, {}, secret_fields)
        fence = (principal, key, owner)
        try:
            with self._lock, transaction(self.conn):
                if verdict == "pending":       # nobody will finish this call: end the lease now
                    self.conn.execute("UPDATE ledger SET lease_until = ? WHERE principal = ? "
                                      "AND key = ? AND state = 'pending' AND owner = ?",
                                      (self.clock(), *fence))
                else:                          # done, or released: the effect did not happen
                    text = None if verdict == "release" else encode_result(value)
                    held = settle_row(self.conn, *fence, text)
        except self.conn.Error:
            if verdict == "release":
                return Answer(LedgerStatus.FAILED, key, value, error)
            return Answer.refusal("unknown", key, "the effect ran but its outcome could not be recorded")
        if verdict == "pending":
            return Answer.refusal("unknown", key, error.message if error else "the effect timed out; its outcome is unknown",
                                  value)
        if verdict == "release":
            return Answer(LedgerStatus.FAILED, key, value, error)
        if held != 1:
            return Answer.refusal("lost", key)
        return Answer(LedgerStatus.RAN, key, decode_result(text))

    def invoke(self, key: str, effect: Callable[[Any], Any], arguments: Any) -> Any:
        """The rule's own form, on disk: the result, or a refusal as a ``ToolResult``."""
        answer = self.call(key, effect, arguments)
        if answer.ok or isinstance(answer.result, ToolResult):
            return answer.result
        return answer.to_result(key if isinstance(key, str) else "")

    def record(self, key: str, arguments: Any, result: Any, *, tool: str = "", principal: str = "") -> Answer:
        """Write a result obtained elsewhere: RAN, RECONCILED (pending claim) or REPLAYED (done)."""
        error, arguments, digest = check_call(key, arguments, tool, principal)   # parsed once
        if error:
            return Answer.invalid(key, error)
        text, owner = encode_result(result), claim_owner(self.owner)
        try:
            with self._lock, transaction(self.conn):
                row = self._claim(principal, key, tool, digest, owner)
                if row is None:
                    settle_row(self.conn, principal, key, owner, text)
                    return Answer(LedgerStatus.RAN, key, decode_result(text))
                answer = existing_answer(row, key, tool, digest, self.clock())
                if answer.status is not LedgerStatus.IN_PROGRESS:
                    return answer
                settle_row(self.conn, principal, key, row[4], text)   # the row is locked: ours
        except self.conn.Error as exc:
            return storage_failure(key, exc, "nothing was recorded")
        return Answer(LedgerStatus.RECONCILED, key, decode_result(text))

    def reconcile(self, key: str, arguments: Any, inquire: Callable[[Any], Any], *,
                  tool: str = "", principal: str = "") -> Answer:
        """Settle a dead claim on ``key`` from ``inquire(arguments)``, the downstream record: its
        outcome RECONCILED, None FAILED ``not_applied`` (the key is free), an exception PENDING.
        A live lease is left."""
        error, arguments, digest = check_call(key, arguments, tool, principal)   # parsed once
        if error:
            return Answer.invalid(key, error)
        try:
            with self._lock:
                row = self._select(principal, key)
        except self.conn.Error as exc:
            return storage_failure(key, exc, "nothing was settled")
        if row is None:
            return Answer.refusal("failed", key, "no claim for this key", code="not_found")
        answer = existing_answer(row, key, tool, digest, self.clock())
        if answer.status is not LedgerStatus.IN_PROGRESS or answer.error.retryable:
            return answer               # finished, a conflict, or a live lease: its owner may still finish
        return self._settle(principal, key, row[4], tool, digest, inquire, arguments)

    def reap(self, find: Callable[[str], Any]) -> list[Answer]:
        """``reconcile`` every dead claim, oldest first; ``find(key)`` is the downstream record."""
        try:
            with self._lock:
                rows = self.conn.execute("SELECT principal, key, tool, fingerprint, owner, lease_until FROM ledger "
                                         "WHERE state = 'pending' ORDER BY rowid").fetchall()
        except self.conn.Error as exc:
            return [storage_failure("", exc, "nothing was reaped")]
        now, answers = self.clock(), []
        for principal, key, tool, digest, owner, until in rows:
            if lease_state(owner, until, now) == LIVE:
                continue
            answers.append(self._settle(principal, key, owner, tool, digest, find, key))
        return answers

    def _settle(self, principal: str, key: str, owner: str | None, tool: str, digest: str,
                ask: Callable[[Any], Any], question: Any) -> Answer:
        """Ask the downstream record (``ask(question)``), write its verdict, fenced by the dead
        claim's owner; if the row moved on, answer from it."""
        try:
            found = ask(question)
        except Exception as exc:
            return Answer.refusal("unknown", key, f"the downstream check raised {type(exc).__name__}; "
                                                   "the outcome is still unknown")
        try:
            text = None if found is None else encode_result(found)
            with self._lock, transaction(self.conn):
                moved = settle_row(self.conn, principal, key, owner, text)
                row = None if moved == 1 else self._select(principal, key)
        except self.conn.Error as exc:
            return storage_failure(key, exc, "the claim is unchanged")
        if moved == 1:
            if found is None:
                return Answer.refusal("failed", key, "the downstream system has no record of this key",
                                      code="not_applied", retryable=True)
            return Answer(LedgerStatus.RECONCILED, key, decode_result(text))
        if row is None:
            return Answer.refusal("failed", key, "another caller released the claim; the key is free",
                                  code="not_applied", retryable=True)
        return existing_answer(row, key, tool, digest, self.clock())   # settled or retaken meanwhile

    def release(self, key: str, principal: str = "") -> bool:
        """Drop a pending claim once the downstream record proves nothing happened (False if there was none)."""
        try:
            with self._lock, transaction(self.conn):
                gone = self.conn.execute("DELETE FROM ledger WHERE principal = ? AND key = ? AND state = 'pending'",
                                         (principal, key)).rowcount
        except self.conn.Error:
            return False
        return gone == 1


class _NotStorable(Exception):
    """An atomic effect returned a value JSON cannot hold."""
