"""Chapter 05: the durable ledger: the ledger rule kept in one SQLite file, so a key survives a crash.

``SqliteLedger`` gives the same answers as ``MemoryLedger.call``
(``toolkit.effects.ledger``), one row per (principal, key), opened and written
the one way this package opens SQLite (``toolkit.effects.database``: WAL, a
busy timeout, ``BEGIN IMMEDIATE``). Where the effect lives decides the path:

* an effect in the same database commits in one transaction with its ledger
  row (``call_atomic``): exactly once;
* an effect in another system is bracketed by a *pending* row and a *done*
  row (``call``), so a crash in between leaves a visible pending entry to
  ``reconcile`` from the downstream system's own record, never a blind re-run.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from toolkit.core import FailureClass, Status, ToolError, ToolFailure, ToolResult
from toolkit.effects.database import connect, transaction
from toolkit.effects.ledger import Answer, LedgerStatus, check_call, run_effect

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
    principal   TEXT NOT NULL,
    key         TEXT NOT NULL,
    tool        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,                           -- sha256 of canonical JSON arguments
    state       TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    result      TEXT,                                    -- JSON, once done
    PRIMARY KEY (principal, key)
)"""


class SqliteLedger:
    """A durable ledger: one SQLite file, WAL, one row per (principal, key).

    Use ``call_atomic`` when the effect writes to this same database (the
    effect and the ledger row commit together: exactly once). Use ``call``
    when the effect lives elsewhere: the key is passed downstream in the
    arguments, and the row goes pending -> done around the effect.
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL", busy_timeout_ms: int = 10_000):
        self.path = Path(path)
        self.conn = connect(self.path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)
        with transaction(self.conn):
            self.conn.execute(LEDGER_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "SqliteLedger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------
    def __len__(self) -> int:
        """Finished entries (a pending claim is not yet an entry)."""
        return self.conn.execute("SELECT count(*) FROM ledger WHERE state = 'done'").fetchone()[0]

    def __contains__(self, key: object) -> bool:
        """True for a finished key (principal "")."""
        entry = self.lookup(key) if isinstance(key, str) else None
        return entry is not None and entry["state"] == "done"

    def lookup(self, key: str, principal: str = "") -> dict[str, Any] | None:
        """The row for a key as plain data, or None."""
        row = self.conn.execute("SELECT principal, key, tool, state, result FROM ledger "
                                "WHERE principal = ? AND key = ?", (principal, key)).fetchone()
        return _row(row) if row else None

    def entries(self) -> list[dict[str, Any]]:
        """Every row, oldest first."""
        rows = self.conn.execute("SELECT principal, key, tool, state, result FROM ledger ORDER BY rowid")
        return [_row(r) for r in rows]

    def pending(self) -> list[dict[str, Any]]:
        """Claims whose outcome nobody has recorded: the reconciliation worklist."""
        return [e for e in self.entries() if e["state"] == "pending"]

    def _existing(self, row: tuple, key: str, tool: str, digest: str) -> Answer:
        before_tool, before, state, text = row
        if before_tool != tool:
            return Answer.conflict(key, "tool", before_tool, tool)
        if before != digest:
            return Answer.conflict(key, "arguments", before[:12], digest[:12])
        if state == "pending":
            return Answer.in_progress(key)
        return Answer(LedgerStatus.REPLAYED, key, decode_result(text))

    def _select(self, principal: str, key: str) -> tuple | None:
        return self.conn.execute("SELECT tool, fingerprint, state, result FROM ledger "
                                 "WHERE principal = ? AND key = ?", (principal, key)).fetchone()

    def _claim(self, key: str, arguments: Any, tool: str, principal: str,
               write: Callable[[str], Any]) -> tuple[Answer | None, Any]:
        """Check the input, then in ONE transaction: answer from the key's row, or ``write(digest)`` a new one.

        Returns ``(answer, None)`` when the ledger answers by itself (a refusal,
        a conflict, a replay, in progress), else ``(None, what write returned)``.
        """
        refused, digest = check_call(key, arguments, tool, principal)
        if refused:
            return refused, None
        with transaction(self.conn):
            row = self._select(principal, key)
            if row:
                return self._existing(row, key, tool, digest), None
            return None, write(digest)

    # -- effect in this database: one transaction ----------------------------
    def call_atomic(self, key: str, effect: Callable[[sqlite3.Connection, Any], Any], arguments: Any, *,
                    tool: str = "", principal: str = "") -> Answer:
        """Run ``effect(conn, arguments)`` and write the ledger row in ONE transaction.

        The effect must write only through ``conn`` and must not commit. A
        crash, an exception or a result JSON cannot hold rolls back both: the
        effect happened together with its ledger row, or not at all.
        """
        def effect_and_row(digest: str) -> str:
            value = effect(self.conn, arguments)
            try:
                text = encode_result(value, strict=True)
            except (TypeError, ValueError):
                raise _NotStorable from None
            self.conn.execute("INSERT INTO ledger (principal, key, tool, fingerprint, state, result) "
                              "VALUES (?, ?, ?, ?, 'done', ?)", (principal, key, tool, digest, text))
            return text

        try:
            answer, text = self._claim(key, arguments, tool, principal, effect_and_row)
        except ToolFailure as failure:
            return Answer.failed(key, failure.reason, failure.message, failure.status is Status.RECOVERABLE_FAILURE)
        except _NotStorable:
            return Answer.failed(key, "not_serializable", "the result is not JSON, so nothing was committed", False)
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                return Answer.failed(key, "busy", "the database stayed locked past the busy timeout", True)
            return Answer.failed(key, "execution_failed", "the effect's SQL failed; rolled back", False)
        except Exception as exc:
            return Answer.failed(key, "execution_failed", f"the effect raised {type(exc).__name__}; rolled back",
                                 True)
        return answer or Answer(LedgerStatus.RAN, key, decode_result(text))

    # -- effect elsewhere: pending, then done -----------------------------------
    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "") -> Answer:
        """Claim the key (pending), run ``effect(arguments)``, record done.

        The claim commits before the effect starts, so a crash after the
        effect leaves a pending row, which the next caller sees as in
        progress: it must ``reconcile``, not re-run.
        """
        def pending_row(digest: str) -> None:
            self.conn.execute("INSERT INTO ledger (principal, key, tool, fingerprint, state) "
                              "VALUES (?, ?, ?, ?, 'pending')", (principal, key, tool, digest))

        try:
            answer, _ = self._claim(key, arguments, tool, principal, pending_row)
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
            return Answer.failed(key, "busy", "the database stayed locked past the busy timeout", True)
        if answer:
            return answer
        verdict, value, error = run_effect(effect, arguments)
        if verdict == "pending":
            return Answer.unknown(key, error.message if error else "the effect timed out; its outcome is unknown",
                                  value)
        try:
            with transaction(self.conn):
                if verdict == "release":
                    self.conn.execute("DELETE FROM ledger WHERE principal = ? AND key = ? AND state = 'pending'",
                                      (principal, key))
                else:
                    text = encode_result(value)
                    self.conn.execute("UPDATE ledger SET state = 'done', result = ? "
                                      "WHERE principal = ? AND key = ? AND state = 'pending'",
                                      (text, principal, key))
        except sqlite3.OperationalError:
            return Answer.unknown(key, "the effect ran but its outcome could not be recorded")
        if verdict == "release":
            return Answer(LedgerStatus.FAILED, key, value, error)
        return Answer(LedgerStatus.RAN, key, decode_result(text))

    def invoke(self, key: str, effect: Callable[[Any], Any], arguments: Any) -> Any:
        """The rule's own form, on disk. Returns the result; a refusal comes back as a ``ToolResult``
        keyed by the idempotency key (prefer ``call(...).to_result(call_id)`` to keep the caller's id)."""
        answer = self.call(key, effect, arguments)
        if answer.ok or isinstance(answer.result, ToolResult):
            return answer.result
        return answer.to_result(key if isinstance(key, str) else "")

    # -- after a crash -----------------------------------------------------------
    def record(self, key: str, arguments: Any, result: Any, *, tool: str = "", principal: str = "") -> Answer:
        """Write a result obtained elsewhere as the key's outcome.

        A new key becomes done (RAN); a pending claim with the same fingerprint
        is settled (RECONCILED); a done key keeps its first result (REPLAYED).
        """
        refused, digest = check_call(key, arguments, tool, principal)
        if refused:
            return refused
        text = encode_result(result)
        with transaction(self.conn):
            row = self._select(principal, key)
            if row is None:
                self.conn.execute("INSERT INTO ledger (principal, key, tool, fingerprint, state, result) "
                                  "VALUES (?, ?, ?, ?, 'done', ?)", (principal, key, tool, digest, text))
                return Answer(LedgerStatus.RAN, key, decode_result(text))
            answer = self._existing(row, key, tool, digest)
            if answer.status is not LedgerStatus.IN_PROGRESS:
                return answer
            self.conn.execute("UPDATE ledger SET state = 'done', result = ? WHERE principal = ? AND key = ?",
                              (text, principal, key))
        return Answer(LedgerStatus.RECONCILED, key, decode_result(text))

    def release(self, key: str, principal: str = "") -> bool:
        """Drop a pending claim once the downstream record proves nothing happened."""
        with transaction(self.conn):
            gone = self.conn.execute("DELETE FROM ledger WHERE principal = ? AND key = ? AND state = 'pending'",
                                     (principal, key)).rowcount
        return gone == 1

    def reconcile(self, key: str, arguments: Any, inquire: Callable[[Any], Any], *,
                  tool: str = "", principal: str = "") -> Answer:
        """Settle a pending key from the downstream system's own record, never by a blind re-run.

        ``inquire(arguments)`` asks the downstream system about this key (the
        key travels in the arguments): it returns the recorded outcome, or
        None when the system has no trace of the key. None releases the claim
        (FAILED: the same key may now be used again); an exception leaves the
        key pending (PENDING: ask a human).
        """
        refused, digest = check_call(key, arguments, tool, principal)
        if refused:
            return refused
        row = self._select(principal, key)
        if row is None:
            return Answer.failed(key, "not_found", "no claim for this key", False)
        answer = self._existing(row, key, tool, digest)
        if answer.status is not LedgerStatus.IN_PROGRESS:
            return answer
        try:
            found = inquire(arguments)
        except Exception as exc:
            return Answer.unknown(key, f"the downstream check raised {type(exc).__name__}; "
                                       "the outcome is still unknown")
        if found is None:
            self.release(key, principal)
            return Answer.failed(key, "not_applied", "the downstream system has no record of this key", True)
        return self.record(key, arguments, found, tool=tool, principal=principal)


# --------------------------------------------------------------------------- stored results

def encode_result(value: Any, strict: bool = False) -> str:
    """A result as stored JSON. ``ToolResult`` keeps every field; other values JSON
    cannot hold are stored as text unless ``strict`` (then ``TypeError``)."""
    if isinstance(value, ToolResult):
        data = asdict(value)
        data["status"] = value.status.value
        data["failure_class"] = value.failure_class.value if value.failure_class else None
        value = {"__tool_result__": data}
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=not strict,
                      default=None if strict else str)


def decode_result(text: str | None) -> Any:
    """The inverse of ``encode_result``."""
    if text is None:
        return None
    value = json.loads(text)
    if isinstance(value, dict) and set(value) == {"__tool_result__"}:
        data = dict(value["__tool_result__"])
        data["status"] = Status(data["status"])
        data["failure_class"] = FailureClass(data["failure_class"]) if data["failure_class"] else None
        data["errors"] = tuple(ToolError(**e) for e in data["errors"])
        return ToolResult(**data)
    return value


class _NotStorable(Exception):
    """An atomic effect returned a value JSON cannot hold."""


def _busy(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED") or "locked" in str(exc)


def _row(row: tuple) -> dict[str, Any]:
    principal, key, tool, state, text = row
    return {"principal": principal, "key": key, "tool": tool, "state": state, "result": decode_result(text)}


__all__ = ["SqliteLedger", "decode_result", "encode_result"]
