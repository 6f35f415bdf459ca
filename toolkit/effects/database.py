"""Chapter 05: the one way this package opens SQLite: WAL, a busy timeout, and transactions we write ourselves.

Every SQLite user here opens with ``connect`` and writes inside ``transaction``: no hidden BEGIN
(``transaction`` takes the write lock up front with ``BEGIN IMMEDIATE``), WAL, a 10 s busy
timeout and ``synchronous=FULL`` unless told otherwise. A failed ``COMMIT`` rolls back before it
raises, so "rolled back" is true. Whoever opens with ``check_same_thread=False`` serializes its
own use with a lock."""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_SYNC = ("OFF", "NORMAL", "FULL", "EXTRA")   # what ``PRAGMA synchronous`` accepts


def connect(path: str | Path, *, synchronous: str = "FULL", busy_timeout_ms: int = 10_000,
            check_same_thread: bool = True) -> sqlite3.Connection:
    """Open a SQLite file the way every ledger connection must be opened (the settings above)."""
    if not isinstance(synchronous, str) or synchronous.upper() not in _SYNC:
        raise ValueError(f"synchronous must be one of {_SYNC}")
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=busy_timeout_ms / 1000,
                           check_same_thread=check_same_thread)
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; any exception, a failed ``COMMIT`` included, rolls everything back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:   # SQLite may already have rolled back (e.g. after a full disk)
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:   # the first error says more; the connection is closed by its owner
                pass
        raise
