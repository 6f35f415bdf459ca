"""Chapter 05: the ledger rule: retries are unavoidable; duplicate side effects are optional.

    invoke(f, x, k, L) = (L, L[k])               if k in dom(L)
                         (L ∪ {k ↦ y}, y)         if k not in dom(L), y = f_k(x)

``invoke`` is the rule as a pure function over a dict. ``MemoryLedger`` is the
same rule as an object with state, for the first explanation. ``SqliteLedger``
keeps the rule on a file on disk, so a key survives a crash, and adds what a
real ledger needs:

* a key is claimed together with the tool, the principal and a fingerprint of
  the arguments (sha256 of their canonical JSON); the same key with different
  arguments is a *conflict*, never a silent replay of someone else's result;
* a finished key *replays* its stored result; a key still in flight answers
  *in progress* instead of running twice;
* an effect in the same database commits in one transaction with its ledger
  row (``call_atomic``); an effect in another system is bracketed by a
  *pending* row and a *done* row (``call``), so a crash in between leaves a
  visible pending entry to reconcile, never a blind re-run.

Every answer is an ``Answer``: plain data with a status, the result, and a
structured ``ToolError`` when the ledger refused. Nothing here raises on bad
keys or arguments.
"""
from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, TypeVar, runtime_checkable

from toolkit.core import ToolError, pointer_for
from toolkit.core import FailureClass, Status, ToolFailure, ToolResult

Y = TypeVar("Y")

#: The longest idempotency key accepted (keys are names, not payloads).
MAX_KEY_LENGTH = 200
#: How deep canonical JSON may nest before it is refused.
MAX_DEPTH = 32


def invoke(f: Callable[[Any], Y], x: Any, k: str, L: Mapping[str, Y]) -> tuple[dict[str, Y], Y]:
    """The chapter's two branches, literally: replay a known key, or run once and record."""
    if k in L:
        return dict(L), L[k]
    y = f(x)
    return {**L, k: y}, y


# --------------------------------------------------------------------------- fingerprints

class _NotJson(Exception):
    def __init__(self, path: tuple, found: str, why: str):
        super().__init__(why)
        self.path, self.found, self.why = path, found, why


def _canonical(value: Any, path: tuple = ()) -> Any:
    """Equal JSON values get equal Python values: integral floats become ints, tuples lists."""
    if len(path) > MAX_DEPTH:
        raise _NotJson(path, "deeper nesting", f"nests deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(path, repr(value), "NaN and infinities are not JSON")
        return int(value) if value.is_integer() else value
    if isinstance(value, (list, tuple)):
        return [_canonical(v, path + (i,)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _NotJson(path, type(k).__name__, "object keys must be strings")
            out[k] = _canonical(v, path + (k,))
        return out
    raise _NotJson(path, type(value).__name__, f"a {type(value).__name__} is not a JSON value")


def canonical_json(arguments: Any) -> str:
    """One text per JSON value: sorted keys, no spaces, ``100.0`` written as ``100``.

    Raises ``ValueError`` for anything JSON cannot hold (``check_arguments``
    turns that into a structured error).
    """
    try:
        value = _canonical(arguments)
    except _NotJson as exc:
        raise ValueError(f"{pointer_for(exc.path)}: {exc.why}") from None
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(arguments: Any) -> str:
    """sha256 of the canonical JSON of the arguments (hex)."""
    return hashlib.sha256(canonical_json(arguments).encode("utf-8")).hexdigest()


def check_key(key: Any) -> ToolError | None:
    """A usable idempotency key is a short, non-empty, printable string."""
    if not isinstance(key, str):
        return ToolError("invalid_key", "$.idempotency_key", "idempotency key must be a string",
                         expected="a non-empty string", received=type(key).__name__,
                         hint="name the logical attempt, e.g. invoice:order-431:v1", retryable=False)
    if not key.strip():
        return ToolError("invalid_key", "$.idempotency_key", "idempotency key is empty",
                         expected="a non-empty string", received="empty string",
                         hint="name the logical attempt, e.g. invoice:order-431:v1", retryable=False)
    if len(key) > MAX_KEY_LENGTH or not key.isprintable():
        return ToolError("invalid_key", "$.idempotency_key",
                         f"idempotency key must be printable and at most {MAX_KEY_LENGTH} characters",
                         expected=f"printable text, at most {MAX_KEY_LENGTH} characters",
                         received=f"{len(key)} characters", retryable=False)
    return None


def check_arguments(arguments: Any) -> ToolError | None:
    """Arguments must be JSON values, or they cannot be fingerprinted (or stored)."""
    try:
        _canonical(arguments)
    except _NotJson as exc:
        return _not_json(exc)
    return None


def _not_json(exc: _NotJson) -> ToolError:
    return ToolError("not_serializable", pointer_for(exc.path), exc.why,
                     expected="JSON values only (object, array, string, finite number, true/false, null)",
                     received=exc.found, hint="send plain JSON values", retryable=False)


# --------------------------------------------------------------------------- answers

class LedgerStatus(str, Enum):
    """What the ledger did with one call."""

    RAN = "ran"                  # new key: the effect ran once and its result is recorded
    REPLAYED = "replayed"        # finished key: the stored result; nothing ran
    RECONCILED = "reconciled"    # a pending key was settled from the downstream system's record
    CONFLICT = "conflict"        # the key was used before with another tool or other arguments
    IN_PROGRESS = "in_progress"  # the key is claimed and unfinished: wait, or reconcile
    PENDING = "pending"          # this call's outcome is unknown; its claim stays for reconciliation
    FAILED = "failed"            # the effect did not happen; nothing recorded, the key is free again
    INVALID = "invalid"          # bad key or arguments; nothing was touched


_RESULT_STATUS = {
    LedgerStatus.CONFLICT: (Status.REJECTED, FailureClass.PRECONDITION),
    LedgerStatus.INVALID: (Status.REJECTED, FailureClass.SCHEMA),
    LedgerStatus.IN_PROGRESS: (Status.RECOVERABLE_FAILURE, FailureClass.EXECUTION),
    LedgerStatus.PENDING: (Status.TIMEOUT, FailureClass.TIMEOUT),
    LedgerStatus.FAILED: (Status.FAILED, FailureClass.EXECUTION),
}


@dataclass(frozen=True)
class Answer:
    """The ledger's answer to one call: a status, the (stored) result, or the reason it refused."""

    status: LedgerStatus
    key: str
    result: Any = None
    error: ToolError | None = None

    @property
    def ok(self) -> bool:
        """True when ``result`` is the outcome of the key (first run, replay, or reconciliation)."""
        return self.status in (LedgerStatus.RAN, LedgerStatus.REPLAYED, LedgerStatus.RECONCILED)

    def line(self) -> str:
        """One printable line, e.g. ``invoice-431: replayed -> {"invoice_id":"INV-9"}``."""
        if self.ok:
            shown = self.result.to_dict() if isinstance(self.result, ToolResult) else self.result
            return f"{self.key}: {self.status.value} -> {json.dumps(shown, sort_keys=True, default=str)}"
        return f"{self.key}: {self.status.value} ({self.error.line() if self.error else ''})"

    def to_dict(self) -> dict[str, Any]:
        result = self.result.to_dict() if isinstance(self.result, ToolResult) else self.result
        return {"status": self.status.value, "key": self.key, "result": result,
                "error": self.error.to_dict() if self.error else None}

    def to_result(self, call_id: str) -> ToolResult:
        """The ``ToolResult`` a model is shown for this answer, paired with ``call_id``."""
        if isinstance(self.result, ToolResult):  # the tool's own result says it best
            return replace(self.result, call_id=call_id)
        if self.ok:
            return ToolResult(call_id, Status.SUCCEEDED, output=self.result,
                              evidence={"idempotency_key": self.key, "ledger": self.status.value})
        status, failure_class = _RESULT_STATUS[self.status]
        if self.status is LedgerStatus.FAILED and self.error is not None and self.error.retryable:
            status = Status.RECOVERABLE_FAILURE
        errors = (self.error,) if self.error else ()
        return ToolResult(call_id, status, failure_class=failure_class,
                          reason=self.error.code if self.error else self.status.value, errors=errors)


def _conflict(key: str, what: str, before: str, now: str) -> Answer:
    return Answer(LedgerStatus.CONFLICT, key, error=ToolError(
        "idempotency_conflict", "$.idempotency_key",
        "key already used for another tool" if what == "tool" else "key already used with other arguments",
        expected=before, received=now,
        hint="repeat the original call to ask about it, or use a new key for a new action", retryable=False))


def _in_progress(key: str) -> Answer:
    return Answer(LedgerStatus.IN_PROGRESS, key, error=ToolError(
        "in_progress", "$.idempotency_key", "an earlier call with this key has not finished",
        hint="wait and ask again with the same key; a key that stays pending needs reconciliation",
        retryable=True))


def _unknown(key: str, why: str, result: Any = None) -> Answer:
    return Answer(LedgerStatus.PENDING, key, result, error=ToolError(
        "outcome_unknown", "$.idempotency_key", why,
        hint="do not re-run: check the downstream record for this key, or ask a human", retryable=False))


def _failed(key: str, code: str, message: str, retryable: bool) -> Answer:
    return Answer(LedgerStatus.FAILED, key, error=ToolError(
        code, "$.idempotency_key", message,
        hint="nothing was recorded; the same key may be used again" if retryable else "", retryable=retryable))


def _prepare(key: Any, arguments: Any, tool: Any, principal: Any) -> tuple[Answer | None, str]:
    """Check the input every ledger call shares and fingerprint the arguments (one pass).

    Returns ``(refusal, "")`` for bad input (an INVALID answer; nothing is
    touched), else ``(None, digest)``.
    """
    shown = key if isinstance(key, str) else repr(key)[:40]
    for name, value in (("tool", tool), ("principal", principal)):
        if not isinstance(value, str):
            return Answer(LedgerStatus.INVALID, shown, error=ToolError(
                "wrong_type", f"$.{name}", f"{name} must be a string", expected="string",
                received=type(value).__name__, retryable=False)), ""
    error = check_key(key)
    if error:
        return Answer(LedgerStatus.INVALID, shown, error=error), ""
    try:
        text = json.dumps(_canonical(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except _NotJson as exc:
        return Answer(LedgerStatus.INVALID, shown, error=_not_json(exc)), ""
    return None, hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- effects and their outcomes

def _settle(effect: Callable[[Any], Any], arguments: Any) -> tuple[str, Any, ToolError | None]:
    """Run an external effect once and say what the ledger should do: ``done``, ``release`` or ``pending``.

    A returned value is done, except a ``ToolResult`` that says nothing happened
    (rejected, recoverable failure: release) or that nobody knows (timeout:
    pending). A raised ``ToolFailure`` is the tool's own word; any other
    exception leaves the outcome unknown.
    """
    try:
        value = effect(arguments)
    except ToolFailure as failure:
        error = ToolError(failure.reason, "$.idempotency_key", failure.message,
                          retryable=failure.status is Status.RECOVERABLE_FAILURE)
        return ("pending" if failure.status is Status.TIMEOUT else "release"), None, error
    except Exception as exc:  # the effect may or may not have happened
        return "pending", None, ToolError("outcome_unknown", "$.idempotency_key",
                                          f"the effect raised {type(exc).__name__}; its outcome is unknown",
                                          retryable=False)
    if isinstance(value, ToolResult):
        if value.status is Status.TIMEOUT:
            return "pending", value, None
        if value.status in (Status.REJECTED, Status.RECOVERABLE_FAILURE, Status.CANCELLED):
            return "release", value, None
    return "done", value, None


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


# --------------------------------------------------------------------------- the interface

@runtime_checkable
class Ledger(Protocol):
    """What the interpreter needs from a ledger, durable or not."""

    def invoke(self, key: str, effect: Callable[[Any], Any], arguments: Any) -> Any:
        """The ledger rule: the effect's result, run at most once per key."""
        ...

    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "") -> Answer:
        """The rule with fingerprints: run, replay, or refuse, as an ``Answer``."""
        ...

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...


class MemoryLedger:
    """The ledger rule with state. Not durable: a crash forgets every key.

    ``invoke`` is the ledger rule exactly (a known key replays, whatever the
    arguments). ``call`` adds the fingerprint check and the in-progress answer
    the durable ledger gives, so both can be compared cell by cell.
    """

    def __init__(self) -> None:
        self.entries: dict[Any, Any] = {}                 # key (or (principal, key)) -> result
        self._claims: dict[Any, tuple[str, str]] = {}     # same slots -> (tool, fingerprint)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def invoke(self, key: str, effect: Callable[[Any], Y], arguments: Any) -> Y:
        """The rule as written: a known key returns its stored result; a new one runs once and is recorded."""
        self.entries, result = invoke(effect, arguments, key, self.entries)
        return result

    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "") -> Answer:
        """Run, replay, or refuse: the same key with other arguments is a conflict, never a replay."""
        refused, digest = _prepare(key, arguments, tool, principal)
        if refused:
            return refused
        slot: Any = key if not principal else (principal, key)
        if slot in self._claims:
            before_tool, before = self._claims[slot]
            if before_tool != tool:
                return _conflict(key, "tool", before_tool, tool)
            if before != digest:
                return _conflict(key, "arguments", before[:12], digest[:12])
            if slot in self.entries:
                return Answer(LedgerStatus.REPLAYED, key, self.entries[slot])
            return _in_progress(key)
        if slot in self.entries:  # recorded by ``invoke``, which keeps no fingerprint
            return Answer(LedgerStatus.REPLAYED, key, self.entries[slot])
        self._claims[slot] = (tool, digest)
        verdict, value, error = _settle(effect, arguments)
        if verdict == "done":
            self.entries[slot] = value
            return Answer(LedgerStatus.RAN, key, value)
        if verdict == "release":
            del self._claims[slot]
            return Answer(LedgerStatus.FAILED, key, value, error)
        return _unknown(key, error.message if error else "the effect timed out; its outcome is unknown", value)

    def pending(self) -> list[Any]:
        """Keys claimed but not finished (kept until the process ends: memory has nothing to reconcile with)."""
        return [slot for slot in self._claims if slot not in self.entries]


# --------------------------------------------------------------------------- SQLite

_SYNC = ("OFF", "NORMAL", "FULL", "EXTRA")

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


def connect(path: str | Path, *, synchronous: str = "FULL", busy_timeout_ms: int = 10_000) -> sqlite3.Connection:
    """Open a SQLite file the way every ledger connection must be opened.

    ``isolation_level=None``: Python issues no hidden BEGIN; we write
    ``BEGIN IMMEDIATE`` ourselves, which takes the write lock up front (a
    deferred read that later upgrades to a write is not retried by SQLite and
    fails under contention). WAL persists in the file; ``synchronous`` and
    ``busy_timeout`` are per connection, so they are set on every one.
    """
    if synchronous.upper() not in _SYNC:
        raise ValueError(f"synchronous must be one of {_SYNC}")
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=busy_timeout_ms / 1000)
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; any exception rolls everything back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


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
            return _conflict(key, "tool", before_tool, tool)
        if before != digest:
            return _conflict(key, "arguments", before[:12], digest[:12])
        if state == "pending":
            return _in_progress(key)
        return Answer(LedgerStatus.REPLAYED, key, decode_result(text))

    def _select(self, principal: str, key: str) -> tuple | None:
        return self.conn.execute("SELECT tool, fingerprint, state, result FROM ledger "
                                 "WHERE principal = ? AND key = ?", (principal, key)).fetchone()

    # -- effect in this database: one transaction ----------------------------
    def call_atomic(self, key: str, effect: Callable[[sqlite3.Connection, Any], Any], arguments: Any, *,
                    tool: str = "", principal: str = "") -> Answer:
        """Run ``effect(conn, arguments)`` and write the ledger row in ONE transaction.

        The effect must write only through ``conn`` and must not commit. A
        crash, an exception or a result JSON cannot hold rolls back both: the
        effect happened together with its ledger row, or not at all.
        """
        refused, digest = _prepare(key, arguments, tool, principal)
        if refused:
            return refused
        try:
            with transaction(self.conn):
                row = self._select(principal, key)
                if row:
                    return self._existing(row, key, tool, digest)
                value = effect(self.conn, arguments)
                try:
                    text = encode_result(value, strict=True)
                except (TypeError, ValueError):
                    raise _NotStorable from None
                self.conn.execute("INSERT INTO ledger (principal, key, tool, fingerprint, state, result) "
                                  "VALUES (?, ?, ?, ?, 'done', ?)", (principal, key, tool, digest, text))
        except ToolFailure as failure:
            return _failed(key, failure.reason, failure.message, failure.status is Status.RECOVERABLE_FAILURE)
        except _NotStorable:
            return _failed(key, "not_serializable", "the result is not JSON, so nothing was committed", False)
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                return _failed(key, "busy", "the database stayed locked past the busy timeout", True)
            return _failed(key, "execution_failed", "the effect's SQL failed; rolled back", False)
        except Exception as exc:
            return _failed(key, "execution_failed", f"the effect raised {type(exc).__name__}; rolled back", True)
        return Answer(LedgerStatus.RAN, key, decode_result(text))

    # -- effect elsewhere: pending, then done -----------------------------------
    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "") -> Answer:
        """Claim the key (pending), run ``effect(arguments)``, record done.

        The claim commits before the effect starts, so a crash after the
        effect leaves a pending row, which the next caller sees as in
        progress: it must ``reconcile``, not re-run.
        """
        refused, digest = _prepare(key, arguments, tool, principal)
        if refused:
            return refused
        try:
            with transaction(self.conn):
                row = self._select(principal, key)
                if row:
                    return self._existing(row, key, tool, digest)
                self.conn.execute("INSERT INTO ledger (principal, key, tool, fingerprint, state) "
                                  "VALUES (?, ?, ?, ?, 'pending')", (principal, key, tool, digest))
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
            return _failed(key, "busy", "the database stayed locked past the busy timeout", True)
        verdict, value, error = _settle(effect, arguments)
        if verdict == "pending":
            return _unknown(key, error.message if error else "the effect timed out; its outcome is unknown", value)
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
            return _unknown(key, "the effect ran but its outcome could not be recorded")
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
        refused, digest = _prepare(key, arguments, tool, principal)
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
        refused, digest = _prepare(key, arguments, tool, principal)
        if refused:
            return refused
        row = self._select(principal, key)
        if row is None:
            return _failed(key, "not_found", "no claim for this key", False)
        answer = self._existing(row, key, tool, digest)
        if answer.status is not LedgerStatus.IN_PROGRESS:
            return answer
        try:
            found = inquire(arguments)
        except Exception as exc:
            return _unknown(key, f"the downstream check raised {type(exc).__name__}; the outcome is still unknown")
        if found is None:
            self.release(key, principal)
            return _failed(key, "not_applied", "the downstream system has no record of this key", True)
        return self.record(key, arguments, found, tool=tool, principal=principal)


class _NotStorable(Exception):
    """An atomic effect returned a value JSON cannot hold."""


def _busy(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED") or "locked" in str(exc)


def _row(row: tuple) -> dict[str, Any]:
    principal, key, tool, state, text = row
    return {"principal": principal, "key": key, "tool": tool, "state": state, "result": decode_result(text)}


__all__ = ["Answer", "Ledger", "LedgerStatus", "MemoryLedger", "SqliteLedger", "canonical_json", "check_arguments",
           "check_key", "connect", "decode_result", "encode_result", "fingerprint", "invoke", "transaction"]
