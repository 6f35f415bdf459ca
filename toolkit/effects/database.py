"""Chapter 05: the one way this package opens SQLite: WAL, a busy timeout, and transactions we write ourselves.

Every SQLite user here (the durable ledger, the audit log, the billing
service in ``course.worlds``) opens its file with ``connect`` and writes
inside ``transaction``, so they all agree on what a commit means:

* ``isolation_level=None``: Python issues no hidden BEGIN; ``transaction``
  writes ``BEGIN IMMEDIATE`` itself, which takes the write lock up front (a
  deferred read that later upgrades to a write is not retried by SQLite and
  fails under contention);
* ``journal_mode=WAL``: readers do not block the writer, and a crash leaves
  the last committed state; the mode persists in the file;
* ``busy_timeout`` (10 s): a second writer waits for the lock instead of
  failing at once;
* ``synchronous`` (``FULL`` unless told otherwise): a commit is on disk before
  ``COMMIT`` returns.

A ``COMMIT`` can fail too (a deferred foreign key, a full disk, a lock past the
timeout): ``transaction`` then rolls back before it raises, so a connection is
never left inside a half-finished transaction and "rolled back" is true. A
connection is tied to its thread unless ``check_same_thread=False``; whoever
asks for that (the durable ledger) serializes its own use with a lock.
"""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_SYNC = ("OFF", "NORMAL", "FULL", "EXTRA")   # what ``PRAGMA synchronous`` accepts


def connect(path: str | Path, *, synchronous: str = "FULL", busy_timeout_ms: int = 10_000,
            check_same_thread: bool = True) -> sqlite3.Connection:
    """Open a SQLite file the way every ledger connection must be opened (the settings above).

    WAL persists in the file; ``synchronous`` and ``busy_timeout`` are per
    connection, so they are set on every one.
    """
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
