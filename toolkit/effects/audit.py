"""Chapter 07: an append-only audit log in SQLite: the complete replay of every call's states.

"Audit is the complete replay of the states." For each call the log keeps
its id, who initiated it, when, a redacted argument summary, every state
transition, and the retry count, so that afterwards one query answers: *who
initiated this action, when, through how many retries, and where it stopped*.

Three promises, each enforced rather than hoped for:

* **Append-only.** The class has no update or delete method, and triggers
  make the database itself refuse ``UPDATE`` and ``DELETE`` on
  ``audit_events`` and any insert that is not the next sequence number (so
  ``INSERT OR REPLACE`` cannot overwrite a row).
* **Tamper-evident.** Each row carries the SHA-256 digest of its content and
  of the previous row's digest; ``verify()`` recomputes the chain, so an edit
  made behind the triggers' back (say, after dropping them) is detected.
* **No secrets.** Arguments are redacted field by field (the contract's
  ``secret_fields`` plus secret-looking names) *before* anything is written,
  and the values of those fields are masked again in every text column.

The log takes a path (opened by ``toolkit.effects.database.connect``, as a
ledger's file is) or an open ``sqlite3.Connection``, so it can share one
database file with a durable ledger (its tables are all prefixed ``audit_``).
When the connection is already inside a transaction, rows join that
transaction: a ledger can commit its effect and its audit rows together.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from toolkit.core import LAYER_OF, REDACTED, TOKEN_SHAPES, secret_values
from toolkit.effects.database import connect, transaction
from toolkit.effects.records import ExecutionRecord, RecordState, Tick, Transition, open_record

GENESIS = "0" * 64

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS audit_events (
        seq INTEGER NOT NULL UNIQUE,
        at REAL NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        initiator TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('transition', 'mark')),
        source TEXT,
        target TEXT,
        retries INTEGER NOT NULL,
        summary TEXT NOT NULL,
        note TEXT NOT NULL,
        failure TEXT NOT NULL,
        value REAL,
        prev TEXT NOT NULL,
        digest TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS audit_events_by_call ON audit_events (call_id, seq)",
    """CREATE TRIGGER IF NOT EXISTS audit_events_no_update BEFORE UPDATE ON audit_events
       BEGIN SELECT RAISE(ABORT, 'audit_events is append-only: UPDATE refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS audit_events_no_delete BEFORE DELETE ON audit_events
       BEGIN SELECT RAISE(ABORT, 'audit_events is append-only: DELETE refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS audit_events_in_order BEFORE INSERT ON audit_events
       WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM audit_events)
       BEGIN SELECT RAISE(ABORT, 'audit_events is append-only: rows go at the end'); END""",
)

_COLUMNS = ("seq", "at", "call_id", "tool", "initiator", "kind", "source", "target", "retries", "summary",
            "note", "failure", "value", "prev", "digest")

@dataclass(frozen=True)
class Story:
    """The audit's answer for one call id."""

    call_id: str
    tool: str
    initiator: str
    started_at: float
    ended_at: float
    retries: int
    stopped_at: str
    path: tuple[str, ...]
    summary: str

    def line(self) -> str:
        plural = "retry" if self.retries == 1 else "retries"
        return (f"{self.call_id}: {self.tool} initiated by {self.initiator} at t={self.started_at:g}; "
                f"{self.retries} {plural}; stopped at {self.stopped_at} (t={self.ended_at:g})")


@dataclass(frozen=True)
class Verification:
    """Result of recomputing the digest chain."""

    ok: bool
    rows: int
    broken_at: int | None = None


class AuditLog:
    """Append-only, tamper-evident, secret-free record of every call's transitions."""

    def __init__(self, db: str | os.PathLike[str] | sqlite3.Connection = ":memory:",
                 clock: Callable[[], float] | None = None):
        if isinstance(db, sqlite3.Connection):
            self.conn, self._owns = db, False
        else:
            self.conn, self._owns = connect(os.fspath(db)), True   # WAL, busy timeout: as a ledger opens it
        self.clock = clock or Tick()
        self._secrets: set[str] = set()   # kept in memory only, to mask repeats; never written
        for statement in _SCHEMA:
            self.conn.execute(statement)

    def __repr__(self) -> str:
        events = self.conn.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0]
        return f"AuditLog({events} events, {len(self.calls())} calls)"

    # --------------------------------------------------------------- writing
    def track(self, call: Any, initiator: str, contract: Any = None) -> ExecutionRecord:
        """Open the execution record of ``call``; each of its transitions is logged as it happens."""
        secret_fields = getattr(contract, "secret_fields", ())
        from toolkit.core import parse_arguments

        arguments = call.arguments
        if isinstance(arguments, (str, bytes, bytearray)):
            arguments, _ = parse_arguments(arguments)
        self._secrets |= secret_values(arguments or {}, secret_fields)
        return open_record(call, initiator, contract, clock=self.clock, listener=self._on_transition)

    def mark(self, record: ExecutionRecord, name: str, value: float | None = None, note: str = "") -> None:
        """Log a fact about a call that is not a state change (an effect, a rollback, a utility)."""
        self._write(record, "mark", None, name, note, "", value)

    def _on_transition(self, record: ExecutionRecord, t: Transition) -> None:
        self._write(record, "transition", t.source.value if t.source else None, t.target.value, t.note,
                    t.failure, None, at=t.at, retries=t.retry)

    def _write(self, record: ExecutionRecord, kind: str, source: str | None, target: str | None, note: str,
               failure: str, value: float | None, at: float | None = None, retries: int | None = None) -> None:
        first = kind == "transition" and source is None
        row = {"at": float(self.clock() if at is None else at), "call_id": self._clean(record.call_id),
               "tool": self._clean(record.tool), "initiator": self._clean(record.initiator), "kind": kind,
               "source": source, "target": target,
               "retries": record.retries if retries is None else retries,
               "summary": self._clean(record.summary) if first else "", "note": self._clean(note),
               "failure": self._clean(failure), "value": None if value is None else float(value)}
        if self.conn.in_transaction:      # the caller's transaction (a ledger's): the rows join it
            self._append(row)
        else:
            with transaction(self.conn):
                self._append(row)

    def _append(self, row: dict[str, Any]) -> None:
        """Chain ``row`` to the last one and insert it (inside a transaction, so nobody writes in between)."""
        last = self.conn.execute("SELECT seq, digest FROM audit_events ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
        full = {"seq": seq, **row, "prev": prev}
        full["digest"] = _digest(full)
        self.conn.execute(f"INSERT INTO audit_events ({', '.join(_COLUMNS)}) "
                          f"VALUES ({', '.join('?' for _ in _COLUMNS)})", [full[c] for c in _COLUMNS])

    def _clean(self, text: str) -> str:
        text = str(text)
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return TOKEN_SHAPES.sub(REDACTED, text)

    # --------------------------------------------------------------- reading
    def events(self, call_id: str | None = None) -> list[dict[str, Any]]:
        """Rows as plain dicts, in order (all calls, or one call id)."""
        query = f"SELECT {', '.join(_COLUMNS)} FROM audit_events"
        cursor = (self.conn.execute(query + " WHERE call_id = ? ORDER BY seq", (str(call_id),))
                  if call_id is not None else self.conn.execute(query + " ORDER BY seq"))
        return [dict(zip(_COLUMNS, row)) for row in cursor]

    def calls(self) -> list[str]:
        """Every call id, in the order the calls were requested."""
        rows = self.conn.execute("SELECT call_id FROM audit_events WHERE kind = 'transition' AND source IS NULL "
                                 "ORDER BY seq")
        return [r[0] for r in rows]

    def story(self, call_id: str) -> Story | None:
        """Who initiated this action, when, through how many retries, and where it stopped (None if unknown)."""
        moves = [e for e in self.events(call_id) if e["kind"] == "transition"]
        if not moves:
            return None
        first, last = moves[0], moves[-1]
        return Story(call_id, first["tool"], first["initiator"], first["at"], last["at"],
                     max(e["retries"] for e in moves), last["target"], tuple(e["target"] for e in moves),
                     first["summary"])

    def trail(self, call_id: str | None = None) -> list[str]:
        """The log replayed as text, one line per event."""
        lines = []
        for e in self.events(call_id):
            if e["kind"] == "transition" and e["source"] is None:
                text = f"{e['call_id']} {e['tool']} requested by {e['initiator']} args={e['summary']}"
            elif e["kind"] == "transition":
                detail = ": ".join(x for x in (e["failure"], e["note"]) if x)
                text = f"{e['call_id']} {e['source']} -> {e['target']}" + (f"  ({detail})" if detail else "")
            else:
                value = "" if e["value"] is None else f"={e['value']:g}"
                text = f"{e['call_id']} mark {e['target']}{value}" + (f"  ({e['note']})" if e["note"] else "")
            lines.append(f"#{e['seq']:<3} t={e['at']:<5g} {text}")
        return lines

    def replay(self, call_id: str | None = None, write: Callable[[str], Any] = print) -> list[str]:
        """Print the trail (of one call, or of everything) and return its lines."""
        lines = self.trail(call_id)
        for line in lines:
            write(line)
        return lines

    def verify(self) -> Verification:
        """Recompute the digest chain; the first row whose digest does not match breaks it."""
        prev, count = GENESIS, 0
        for e in self.events():
            count += 1
            if e["prev"] != prev or _digest(e) != e["digest"]:
                return Verification(False, count, e["seq"])
            prev = e["digest"]
        return Verification(True, count)

    def close(self) -> None:
        if self._owns:
            self.conn.close()

    def __enter__(self) -> "AuditLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _digest(row: Mapping[str, Any]) -> str:
    content = [row[c] for c in _COLUMNS if c != "digest"]
    return hashlib.sha256(json.dumps(content, separators=(",", ":")).encode()).hexdigest()


# ------------------------------------------------------------------ running a call under audit
def run_audited(host: Any, call: Any, log: AuditLog, initiator: str, controller: Any = None,
                ask: Callable[[Any, Any], Any] | None = None,
                sleep: Callable[[float], None] | None = None) -> ExecutionRecord:
    """Check and run ``call`` on ``host``, retrying under ``controller``, with every move logged.

    Without a controller a failure is final. The model's wish to retry is
    ``ask(call, result)`` (default: always ask); the controller decides, and
    ``sleep`` receives each granted wait (default: none is slept). A refused
    retry is logged as a mark; an escalation moves the record to
    ``awaiting_human``. Returns the call's execution record.
    """
    from toolkit.core import Status
    from toolkit.effects.backoff import Action, RetryController
    from toolkit.effects.retries import run_with_retries

    contract = host.contract(call.name)
    record = log.track(call, initiator, contract)
    verdict = host.check(call)
    if not verdict.legal:
        result = host.execute(call, verdict)
        blocked = ",".join(LAYER_OF[name].failure_class.value for name in verdict.blocked_by) or _klass(result)
        record.move(RecordState.REJECTED, result.reason, blocked)
        return record
    if contract is not None and contract.needs_approval:
        record.move(RecordState.AWAITING_HUMAN, "needs approval")
    record.move(RecordState.APPROVED)
    if controller is None:                    # no controller: nobody may grant a retry
        controller, ask = RetryController(budget=0), (lambda c, r: None)

    granted = [""]   # the note for the next move into running ("retry 1 after 2s")

    def on_try(attempt: Any) -> None:
        result, decision = attempt.result, attempt.decision
        if result.status is Status.REJECTED and record.state is not RecordState.APPROVED:   # a retry now refused
            log.mark(record, "retry_rejected", note=result.reason)
            return
        record.move(RecordState.RUNNING, granted[0])
        record.settle(result.status, result.reason, _klass(result))
        if decision is None:
            return
        if decision.action is Action.RETRY:
            granted[0] = f"retry {decision.state.n} after {decision.wait:g}s"
        elif decision.action is Action.ESCALATE and record.can(RecordState.AWAITING_HUMAN):
            record.move(RecordState.AWAITING_HUMAN, decision.reason)
        else:
            log.mark(record, "retry_refused", note=decision.reason)

    run_with_retries(host, call, controller, ask=ask, on_try=on_try, sleep=sleep)
    return record


def _klass(result: Any) -> str:
    return result.failure_class.value if result.failure_class is not None else ""


__all__ = ["AuditLog", "GENESIS", "Story", "Verification", "run_audited"]
