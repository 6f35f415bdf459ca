"""Chapter 07: how the audit log proves it was not changed: the table's guards, the digest chain, the anchor.

Each row's digest covers its content and the digest before it. Whoever can rewrite the file can
recompute them all, so the proof leans on what the file does not hold: an **anchor** (row count
and last digest, kept by the host) and optionally a **key** (HMAC-SHA256, never written).
``check_chain`` and ``verify_audit_file`` never raise: integrity, chain, anchor, then the table."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from toolkit.effects import columns

GENESIS = "0" * 64

#: The table, its index and its guards. ``seq`` is the rowid itself, so the only
#: uniqueness a conflict clause could act on is ``seq``, and the order trigger
#: refuses every insert that is not the next number: ``INSERT OR REPLACE`` has
#: no row to replace.
AUDIT_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS audit_events (
        seq INTEGER PRIMARY KEY,
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

AUDIT_COLUMNS = ("seq", "at", "call_id", "tool", "initiator", "kind", "source", "target", "retries", "summary",
                 "note", "failure", "value", "prev", "digest")


def _normal_sql(sql: str) -> str:
    return " ".join(re.sub(r"\bIF NOT EXISTS\s+", "", sql, flags=re.I).split())


_EXPECTED = {re.search(r"EXISTS (\w+)", s).group(1): _normal_sql(s) for s in AUDIT_SCHEMA}


def chain_key(key: bytes | str | None) -> bytes | None:
    """A key as bytes (text is taken as UTF-8); None stays None."""
    return key.encode("utf-8") if isinstance(key, str) else (bytes(key) if key is not None else None)


def chain_digest(row: Mapping[str, Any], key: bytes | str | None = None) -> str:
    """The digest of one row: SHA-256 of its columns (digest aside) as compact JSON, or their HMAC under ``key``."""
    key = chain_key(key)
    payload = json.dumps([row[c] for c in AUDIT_COLUMNS if c != "digest"], separators=(",", ":")).encode()
    if key is None:
        return hashlib.sha256(payload).hexdigest()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Anchor:
    """What the host keeps outside the file: how many rows the log had, and the digest of the last one."""

    rows: int
    head: str = GENESIS

    def line(self) -> str:
        return f"{self.rows} rows, head {self.head[:12]}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verification:
    """Result of checking a log: ok, how many rows were read, the first row that breaks it, and why."""

    ok: bool
    rows: int
    broken_at: int | None = None
    reason: str = ""

    def line(self) -> str:
        if self.ok:
            return f"ok: {self.rows} rows" + (f" ({self.reason})" if self.reason else "")
        where = f" at row {self.broken_at}" if self.broken_at is not None else ""
        return f"NOT ok{where}: {self.reason}"


def schema_problems(conn: sqlite3.Connection) -> list[str]:
    """What differs between the file's audit objects and the log's definition (missing, changed, or extra)."""
    found = {name: (kind, table, sql) for kind, name, table, sql in conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name LIKE 'audit_events%' "
        "OR tbl_name = 'audit_events'")}
    problems = []
    for name, sql in _EXPECTED.items():
        if name not in found:
            problems.append(f"{name} is missing")
        elif _normal_sql(found[name][2] or "") != sql:
            problems.append(f"{name} is not the log's definition (on table {found[name][1]})")
    problems += [f"unexpected {kind} {name} on {table}" for name, (kind, table, _) in found.items()
                 if name not in _EXPECTED and not name.startswith("sqlite_")]
    return problems


def _integrity_problems(conn: sqlite3.Connection) -> list[str]:
    try:
        rows = conn.execute("PRAGMA integrity_check(audit_events)").fetchall()
    except sqlite3.OperationalError:          # SQLite before 3.33: check the whole file
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    return [] if [r[0] for r in rows] == ["ok"] else [r[0] for r in rows]


def walk_chain(rows: Iterable[Mapping[str, Any]], key: bytes | None = None) -> Verification:
    """Recompute the chain over ``rows`` (in order): numbers 1, 2, 3, ..., each ``prev`` the digest before it."""
    prev, count = GENESIS, 0
    for count, e in enumerate(rows, start=1):
        if e["seq"] != count:
            return Verification(False, count, e["seq"], f"row {count} is numbered {e['seq']}: a row is missing")
        if e["prev"] != prev:
            return Verification(False, count, e["seq"], f"row {e['seq']} is not chained to the row before it")
        if chain_digest(e, key) != e["digest"]:
            why = "does not carry the key's HMAC" if key is not None else "does not match its content"
            return Verification(False, count, e["seq"], f"row {e['seq']}'s digest {why}")
        prev = e["digest"]
    return Verification(True, count, None, "")


def check_chain(conn: sqlite3.Connection, anchor: Anchor | None = None, key: bytes | None = None,
                found_at_open: Iterable[str] = ()) -> Verification:
    """Every check, in order; never raises. ``found_at_open``: schema problems seen before the log repaired them."""
    key = chain_key(key)
    try:
        damage = _integrity_problems(conn)
        if damage:
            return Verification(False, 0, None, "integrity_check: " + "; ".join(damage[:3]))
        current = schema_problems(conn)
        problems = [p for p in found_at_open if p not in current] + current
        if "audit_events is missing" in current:
            return Verification(False, 0, 1 if anchor and anchor.rows else None, "there is no audit_events table")
        names = columns(conn, "audit_events")
        rows = (dict(zip(names, r)) for r in conn.execute("SELECT * FROM audit_events ORDER BY seq"))
        result = walk_chain(rows, key)
    except (sqlite3.Error, KeyError, TypeError, ValueError) as error:
        return Verification(False, 0, None, f"the file is not a readable audit log: {error}")
    if result.ok and anchor is not None:
        result = against_anchor(conn, result.rows, anchor)
    if not result.ok:                     # what happened to the rows first; a missing guard after
        return result
    if problems:
        return Verification(False, result.rows, None, "schema: " + "; ".join(problems))
    if anchor is None and key is None:
        return Verification(True, result.rows, None, "no anchor: a rewrite that recomputes every digest would pass")
    return result


def against_anchor(conn: sqlite3.Connection, rows: int, anchor: Anchor) -> Verification:
    """Does a valid chain of ``rows`` rows end exactly where the host's anchor says it does?"""
    if rows != anchor.rows:
        first = min(rows, anchor.rows) + 1
        return Verification(False, rows, first, f"the file holds {rows} rows; the anchor says {anchor.rows}")
    head = conn.execute("SELECT digest FROM audit_events ORDER BY seq DESC LIMIT 1").fetchone()
    if (head[0] if head else GENESIS) != anchor.head:
        return Verification(False, rows, rows or None, "the last digest is not the anchor's head: history was "
                                                       "rewritten")
    return Verification(True, rows, None, "")


def verify_audit_file(path: str | os.PathLike[str], anchor: Anchor | None = None,
                      key: bytes | str | None = None) -> Verification:
    """Check an audit file without changing it: nothing created or put back (``query_only``)."""
    if not os.path.isfile(path):
        empty = anchor is not None and anchor.rows == 0
        return Verification(empty, 0, None, f"{os.path.basename(path)} does not exist")
    try:
        uri = Path(os.path.abspath(path)).as_uri() + "?mode=rw"      # rw: never create the file
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as error:
        return Verification(False, 0, None, f"the file cannot be opened: {error}")
    try:
        conn.execute("PRAGMA query_only = ON")
        return check_chain(conn, anchor, chain_key(key))
    except sqlite3.Error as error:
        return Verification(False, 0, None, f"the file is not a readable database: {error}")
    finally:
        conn.close()
