"""Chapter 05: the one way this package opens a database: a SQLite file, or PostgreSQL by URL.

``connect(where)`` takes a path or ``sqlite:///path`` (SQLite, the default) or a ``postgresql://``
URL (psycopg, imported only then); ``None`` reads ``COURSE_DATABASE_URL``. Every user writes inside
``transaction``: no hidden BEGIN. ``DIALECTS`` is the one table of what differs. SQLite: WAL, a
10 s busy timeout, ``synchronous=FULL`` unless told otherwise, and ``BEGIN IMMEDIATE`` takes the
file's one write lock up front. PostgreSQL: READ COMMITTED, a 10 s lock timeout, and no lock up
front: a second claim on a unique key waits for the first to commit (``serial`` takes one lock for
the whole database, for writers that must go one at a time). Both read ``?`` placeholders. A failed
``COMMIT`` rolls back before it raises, so "rolled back" is true. ``conn.Error`` is what a
connection raises. Whoever shares a connection between threads serializes its use."""
from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

URL_VARIABLE = "COURSE_DATABASE_URL"
_SYNC = ("OFF", "NORMAL", "FULL", "EXTRA")   # what ``PRAGMA synchronous`` accepts
_READ_COMMITTED = "BEGIN ISOLATION LEVEL READ COMMITTED"
#: What the SQL differs in, per dialect; SQL is written once with ``?`` and these ``{names}``.
DIALECTS: dict[str, dict[str, Any]] = {
    "sqlite": {"placeholder": "?", "begin": ("BEGIN IMMEDIATE",), "serial": ("BEGIN IMMEDIATE",),
               "lock_row": "", "rowid": "", "columns": "SELECT name FROM pragma_table_info(?)",
               "setup": ("PRAGMA busy_timeout={ms}", "PRAGMA journal_mode=WAL",
                         "PRAGMA synchronous={sync}")},
    "postgresql": {"placeholder": "%s", "begin": (_READ_COMMITTED,),
                   "serial": (_READ_COMMITTED, "SELECT pg_advisory_xact_lock(1)"),
                   "lock_row": " FOR UPDATE", "rowid": "rowid BIGINT GENERATED ALWAYS AS IDENTITY,",
                   "columns": "SELECT column_name FROM information_schema.columns WHERE "
                              "table_name = ? AND table_schema = current_schema() "
                              "ORDER BY ordinal_position",
                   "setup": ("SET lock_timeout = {ms}", "SET synchronous_commit = {sync}")},
}


def connect(where: str | Path | None = None, *, synchronous: str = "FULL",
            busy_timeout_ms: int = 10_000, check_same_thread: bool = True) -> Any:
    """Open a database the way every ledger connection must be opened (the settings above)."""
    if not isinstance(synchronous, str) or synchronous.upper() not in _SYNC:
        raise ValueError(f"synchronous must be one of {_SYNC}")
    where = os.environ.get(URL_VARIABLE) if where is None else where
    if where is None:
        raise ValueError(f"no database: pass a path or a URL, or set {URL_VARIABLE}")
    text, sync, ms = os.fspath(where), synchronous.upper(), int(busy_timeout_ms)
    if text.startswith(("postgresql://", "postgres://")):
        conn: Any = _Server(text)
        sync = "on" if sync in ("FULL", "EXTRA") else "off"
    elif "://" in text and not text.startswith("sqlite:///"):
        raise ValueError("a database URL starts with sqlite:/// or postgresql://")
    else:
        conn = sqlite3.connect(text.removeprefix("sqlite:///"), isolation_level=None,
                               timeout=ms / 1000, check_same_thread=check_same_thread)
    for statement in dialect(conn)["setup"]:
        conn.execute(statement.format(ms=ms, sync=sync))
    return conn


def dialect(conn: Any) -> dict[str, Any]:
    """The table's entries for the dialect ``conn`` speaks (a connection, or a dialect's name)."""
    return DIALECTS[conn if isinstance(conn, str) else getattr(conn, "dialect", "sqlite")]


def as_sent(conn: Any, sql: str) -> str:
    """SQL written once (``?``, the table's ``{names}``) as the dialect of ``conn`` receives it."""
    return sql.format_map(dialect(conn)).replace("?", dialect(conn)["placeholder"])


def columns(conn: Any, table: str) -> list[str]:
    """The names of a table's columns, in order (none if there is no such table)."""
    return [row[0] for row in conn.execute(dialect(conn)["columns"], (table,))]


def busy(error: BaseException) -> bool:
    """A lock held past the timeout, or a deadlock the server broke: a retry may work."""
    if getattr(error, "sqlstate", None):
        return error.sqlstate in ("55P03", "40P01", "40001")
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    return isinstance(error, sqlite3.Error) and (
        code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(error))


@contextmanager
def transaction(conn: Any, serial: bool = False) -> Iterator[Any]:
    """BEGIN ... ``COMMIT``; any exception, a failed ``COMMIT`` included, rolls everything back."""
    begin, *more = dialect(conn)["serial" if serial else "begin"]
    conn.execute(begin)
    try:
        for statement in more:
            conn.execute(statement)
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:   # SQLite may already have rolled back (e.g. after a full disk)
            try:
                conn.execute("ROLLBACK")
            except conn.Error:   # the first error says more; the connection is closed by its owner
                pass
        raise


class _Server:
    """A psycopg connection that speaks as ``sqlite3``'s does: ``execute(sql, params)``, ``?``."""

    dialect = "postgresql"

    def __init__(self, url: str):
        import psycopg   # only a server URL needs it: ``import toolkit`` stays light

        self.Error, self.raw = psycopg.Error, psycopg.connect(url, autocommit=True)

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self.raw.execute(sql.replace("?", dialect(self)["placeholder"]), params or None)

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status.name != "IDLE"

    def close(self) -> None:
        self.raw.close()
