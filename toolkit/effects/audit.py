"""Chapter 07: an append-only audit log in SQLite: the complete replay of every call's states.

One query answers *who initiated this action, when, through how many retries, and where it
stopped*. The log is append-only (triggers), tamper-evident (``toolkit.effects.audit_chain``) and
secret-free (arguments redacted before anything is written); inside a caller's transaction its
rows join it, so a ledger commits its effect and its audit rows together."""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable

from toolkit.kernel import LAYER_OF
from toolkit._show import scrub, secret_values
from toolkit.effects import (AUDIT_COLUMNS, AUDIT_SCHEMA, GENESIS, Anchor, Verification,
                             chain_digest, chain_key, check_chain, schema_problems, connect,
                             transaction, ExecutionRecord, RecordState, Tick, Transition,
                             open_record)

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


class AuditLog:
    """Append-only, tamper-evident, secret-free record of every call's transitions."""

    def __init__(self, db: str | os.PathLike[str] | sqlite3.Connection = ":memory:",
                 clock: Callable[[], float] | None = None, *, key: bytes | str | None = None,
                 anchor: Anchor | None = None):
        """``key``: digests are HMACs under it (never written); ``anchor``: what the host kept."""
        if isinstance(db, sqlite3.Connection):
            self.conn, self._owns = db, False
        else:
            self.conn, self._owns = connect(os.fspath(db)), True   # WAL, busy timeout: as a ledger opens it
        self.clock = clock or Tick()
        self._secrets: set[str] = set()   # kept in memory only, to mask repeats; never written
        self._key = chain_key(key)
        existing = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name LIKE 'audit_events%'").fetchone()
        self._found_at_open = schema_problems(self.conn) if existing else []   # before the schema is repaired
        for statement in AUDIT_SCHEMA:
            self.conn.execute(statement)
        self._anchor = anchor if anchor is not None else self._head()
        self._pending: Anchor | None = None   # rows written inside a caller's transaction, not yet seen committed

    def __repr__(self) -> str:
        events = self.conn.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0]
        return f"AuditLog({events} events, {len(self.calls())} calls)"

    def track(self, call: Any, initiator: str, contract: Any = None) -> ExecutionRecord:
        """Open the execution record of ``call``; each of its transitions is logged as it happens."""
        secret_fields = getattr(contract, "secret_fields", ())
        from toolkit._json import parsed_arguments

        arguments = parsed_arguments(call.arguments)
        if isinstance(arguments, (str, bytes, bytearray)):      # text that does not parse: no fields to read
            arguments = None
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
            self._pending = self._append(row)
        else:
            current = self._known()
            with transaction(self.conn):
                moved = self._append(row)
            self._anchor = moved or current

    def _append(self, row: dict[str, Any]) -> Anchor | None:
        """Chain ``row`` to the last and insert it: the new anchor, or None if the head moved."""
        known = self._known()
        before = self._head()
        seq, prev = before.rows + 1, before.head
        full = {"seq": seq, **row, "prev": prev}
        full["digest"] = chain_digest(full, self._key)
        self.conn.execute(f"INSERT INTO audit_events ({', '.join(AUDIT_COLUMNS)}) "
                          f"VALUES ({', '.join('?' for _ in AUDIT_COLUMNS)})", [full[c] for c in AUDIT_COLUMNS])
        return Anchor(seq, full["digest"]) if before == known else None

    def _head(self) -> Anchor:
        last = self.conn.execute("SELECT seq, digest FROM audit_events ORDER BY seq DESC LIMIT 1").fetchone()
        return Anchor(last[0], last[1]) if last else Anchor(0, GENESIS)

    @property
    def anchor(self) -> Anchor:
        """Row count and last digest of what this log committed (or was given): keep it outside the file."""
        known = self._known()
        return self._anchor if self.conn.in_transaction else known

    def _known(self) -> Anchor:
        """The newest anchor the file still shows (rows of a caller's transaction once seen)."""
        if self._pending is not None:
            found = self.conn.execute("SELECT digest FROM audit_events WHERE seq = ?",
                                      (self._pending.rows,)).fetchone()
            if found is None or found[0] != self._pending.head:
                self._pending = None
            elif self.conn.in_transaction:
                return self._pending
            else:
                self._anchor, self._pending = self._pending, None
        return self._anchor

    def _clean(self, text: str) -> str:
        return scrub(str(text), self._secrets)

    def events(self, call_id: str | None = None) -> list[dict[str, Any]]:
        """Rows as plain dicts, in order (all calls, or one call id)."""
        query = f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit_events"
        cursor = (self.conn.execute(query + " WHERE call_id = ? ORDER BY seq", (str(call_id),))
                  if call_id is not None else self.conn.execute(query + " ORDER BY seq"))
        return [dict(zip(AUDIT_COLUMNS, row)) for row in cursor]

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

    def verify(self, anchor: Anchor | None = None) -> Verification:
        """Integrity, schema, digest chain and ``anchor`` (default: this log's); never raises."""
        return check_chain(self.conn, anchor or self._known(), self._key, self._found_at_open)

    def close(self) -> None:
        if self._owns:
            self.conn.close()

    def __enter__(self) -> "AuditLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_audited(host: Any, call: Any, log: AuditLog, initiator: str, controller: Any = None,
                ask: Callable[[Any, Any], Any] | None = None,
                sleep: Callable[[float], None] | None = None) -> ExecutionRecord:
    """Check and run ``call`` on ``host``, retrying under ``controller``, every move logged."""
    from toolkit.kernel import Action, RetryController, Status
    from toolkit.effects import run_with_retries

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
