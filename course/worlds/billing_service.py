"""Chapter 05: the billing service's logic: its books, invoices INV-9, INV-10, ..., the key check.

``issue_invoice`` is the rule: with ``honour_keys`` the service itself
recognizes an idempotency key (the same key with the same order returns the
first invoice again, INV-9 on a retry; the same key with a different order is
refused). Without it, every request that passes validation creates a new
invoice: this is the billing service of the duplicate-invoice trace.

``BillingService`` wraps the rule in one transaction per request and answers
with an HTTP status and a JSON body, never with an exception: an amount too
large to book is a 400, a database that stays locked is a 503, anything else a
500, and each says that nothing was created. An invoice may carry a student tag
(the class experiment's: who made it; empty by default, and then left out of
the invoice's dict). The books are a SQLite file (a path) or a PostgreSQL
database (a ``postgresql://`` URL; no argument: ``COURSE_DATABASE_URL``), opened
by ``toolkit.effects.database``. ``course.worlds.billing_http``
serves it from its own process on 127.0.0.1, one thread per request: the
service's own connection belongs to the thread that made it, and every other
thread opens its own for one request. Each request writes in a *serial*
transaction (SQLite's write lock, ``BEGIN IMMEDIATE``; on a server, one lock for
the database), so requests go one at a time: the invoice numbers stay in order
and a key is checked before anyone else can use it.
"""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from toolkit.kernel import Status, ToolError, ToolFailure
from toolkit._schema import parse_arguments, schema_errors
from toolkit._show import scrub_error, secret_values
from toolkit.effects import as_sent, busy, columns, connect, transaction
from toolkit._json import fingerprint
from course.worlds import CREATE_INVOICE

#: The number of the first invoice (the chapter's trace starts at INV-9).
FIRST_NUMBER = 9
#: The largest amount the service books; larger (or not finite) is refused, never turned into a float that overflows.
MAX_AMOUNT = 10**9

INVOICES_SCHEMA = """
CREATE TABLE IF NOT EXISTS invoices (
    number          INTEGER PRIMARY KEY,
    order_id        TEXT NOT NULL,
    amount          DOUBLE PRECISION NOT NULL,
    currency        TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,       -- sha256 of canonical JSON (order_id, amount, currency)
    student         TEXT NOT NULL DEFAULT ''   -- the class experiment's tag: who made it ('' for nobody)
)"""
INVOICES_INDEX = "CREATE INDEX IF NOT EXISTS invoices_by_key ON invoices (idempotency_key)"
_COLUMNS = "number, order_id, amount, currency, idempotency_key, fingerprint, student"
#: The longest student tag an invoice carries.
MAX_STUDENT = 64


def issue_invoice(conn: Any, arguments: dict, *, honour_keys: bool,
                  first_number: int = FIRST_NUMBER, student: str = "") -> dict[str, Any]:
    """Write one invoice through ``conn``, inside the caller's transaction (this never commits).

    Arguments must already be valid (see ``check_invoice``). Honouring keys,
    a known key returns its first invoice with ``replayed: True``, and a known
    key with a different order raises ``ToolFailure`` (rejected). ``student`` tags a new invoice.
    """
    digest = fingerprint({k: arguments[k] for k in ("order_id", "amount", "currency")})
    key = arguments["idempotency_key"]
    if honour_keys:
        row = _first_for_key(conn, key)
        if row is not None:
            if row[5] != digest:
                raise ToolFailure(Status.REJECTED, "idempotency_conflict",
                                  "this idempotency key was used for a different invoice")
            return _invoice(row, replayed=True)
    number = conn.execute("SELECT coalesce(max(number) + 1, ?) FROM invoices", (first_number,)).fetchone()[0]
    row = (number, arguments["order_id"], float(arguments["amount"]), arguments["currency"], key, digest, student)
    conn.execute(f"INSERT INTO invoices ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    return _invoice(row)


def _first_for_key(conn: Any, key: str) -> tuple | None:
    return conn.execute(f"SELECT {_COLUMNS} FROM invoices WHERE idempotency_key = ? ORDER BY number LIMIT 1",
                        (key,)).fetchone()


def _invoice(row: tuple, replayed: bool = False) -> dict[str, Any]:
    number, order_id, amount, currency, key = row[:5]
    invoice = {"invoice_id": f"INV-{number}", "order_id": order_id, "amount": amount, "currency": currency,
               "idempotency_key": key, "replayed": replayed}
    if len(row) > 6 and row[6]:
        invoice["student"] = row[6]
    return invoice


def list_invoices(conn: Any) -> list[dict[str, Any]]:
    """Every invoice, oldest first, as plain dicts."""
    return [_invoice(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM invoices ORDER BY number")]


def open_books(where: str | Path | None = None) -> Any:
    """Open (and if needed create) a billing database: a SQLite path, or a URL (None:
    ``COURSE_DATABASE_URL``)."""
    conn = connect(where)
    with transaction(conn, serial=True):
        conn.execute(as_sent(conn, INVOICES_SCHEMA))
        conn.execute(INVOICES_INDEX)
        if "student" not in columns(conn, "invoices"):
            conn.execute("ALTER TABLE invoices ADD COLUMN student TEXT NOT NULL DEFAULT ''")   # books made before tags
    return conn


def student_errors(student: Any) -> list[ToolError]:
    """A student tag is text of 1 to ``MAX_STUDENT`` printable characters (or empty: no tag)."""
    if not isinstance(student, str):
        return [ToolError("wrong_type", "$.student", "the student tag must be text", expected="string",
                          received=type(student).__name__, retryable=False)]
    if len(student) > MAX_STUDENT:
        return [ToolError("length", "$.student", f"the student tag must be at most {MAX_STUDENT} characters",
                          expected=f"<= {MAX_STUDENT} characters", received=f"{len(student)} characters",
                          retryable=False)]
    if not student.isprintable() or student != student.strip():
        return [ToolError("pattern", "$.student", "the student tag must be printable text without outer spaces",
                          expected="printable text", received="a tag with control characters or outer spaces",
                          retryable=False)]
    return []


def check_invoice(raw: Any) -> tuple[dict | None, list[ToolError]]:
    """Validate create_invoice arguments (dict or JSON text) against the chapter's contract."""
    arguments, errors = parse_arguments(raw)
    if errors:
        return None, errors
    errors = schema_errors(CREATE_INVOICE.validator, arguments)
    if not errors:
        errors = _amount_errors(arguments["amount"])
    secrets = secret_values(arguments)           # a secret sent in one field is masked wherever it is echoed
    return (None, [scrub_error(e, secrets) for e in errors]) if errors else (arguments, [])


def _amount_errors(amount: Any) -> list[ToolError]:
    """An amount is booked only if it is greater than 0 and at most ``MAX_AMOUNT`` (and so fits a float)."""
    if amount <= 0:
        return [ToolError("range", "$.amount", "amount must be greater than 0", expected="> 0",
                          received=amount, retryable=False)]
    if amount > MAX_AMOUNT or not math.isfinite(amount):
        shown = f"a number of {len(str(int(amount)))} digits" if isinstance(amount, int) else str(amount)
        return [ToolError("range", "$.amount", f"amount must be at most {MAX_AMOUNT}", expected=f"<= {MAX_AMOUNT}",
                          received=shown, retryable=False)]
    return []


class BillingService:
    """The service's logic, without the HTTP around it.

    ``notify`` (optional) receives one sentence per invoice event, e.g.
    ``billing service creates invoice INV-9``; the crash reproduction uses it
    to assemble its trace.
    """

    def __init__(self, where: str | Path | None = None, *, honour_keys: bool = False,
                 notify: Callable[[str], None] | None = None):
        self.where = where
        self.conn = open_books(where)         # the connection of the thread that made the service
        self._owner = threading.get_ident()
        self.honour_keys = honour_keys
        self.notify = notify

    @contextmanager
    def _books(self) -> Iterator[Any]:
        """This thread's connection: the service's own, or one opened (and closed) for this request."""
        if threading.get_ident() == self._owner:
            yield self.conn
            return
        conn = connect(self.where)
        try:
            yield conn
        finally:
            conn.close()

    def create_invoice(self, raw: Any, student: str = "") -> tuple[int, dict[str, Any]]:
        """Handle one request: an HTTP status and a JSON body (an invoice, or ``{"errors": [...]}``).

        ``student`` (optional) tags the invoice it creates with who made it.
        """
        errors = student_errors(student)
        if errors:
            return 400, {"errors": [e.to_dict() for e in errors]}
        arguments, errors = check_invoice(raw)
        if errors:
            return 400, {"errors": [e.to_dict() for e in errors]}
        try:
            with self._books() as conn, transaction(conn, serial=True):
                earlier = conn.execute("SELECT count(*) FROM invoices WHERE order_id = ?",
                                       (arguments["order_id"],)).fetchone()[0]
                invoice = issue_invoice(conn, arguments, honour_keys=self.honour_keys, student=student)
        except ToolFailure as failure:
            error = ToolError(failure.reason, "$.idempotency_key", failure.message, retryable=False,
                              hint="use the original arguments with this key, or a new key")
            return 409, {"errors": [error.to_dict()]}
        except Exception as failure:      # rolled back: nothing was created; the cause stays inside the service
            if busy(failure):
                error = ToolError("busy", "$", "the invoice database is busy; nothing was created", retryable=True,
                                  hint="retry with the same idempotency key")
                return 503, {"errors": [error.to_dict()]}
            error = ToolError("service_error", "$", "the billing service failed; nothing was created",
                              retryable=True, hint="retry with the same idempotency key")
            return 500, {"errors": [error.to_dict()]}
        if self.notify:
            self.notify(trace_sentence(invoice, earlier))
        return (200 if invoice["replayed"] else 201), invoice

    def invoices(self) -> list[dict[str, Any]]:
        with self._books() as conn:
            return list_invoices(conn)

    def find(self, key: str) -> dict[str, Any] | None:
        with self._books() as conn:
            row = _first_for_key(conn, key)
        return _invoice(row) if row else None

    def close(self) -> None:
        self.conn.close()


def trace_sentence(invoice: dict[str, Any], earlier: int) -> str:
    """The trace sentence for one invoice event."""
    if invoice["replayed"]:
        return f"billing service recognizes the key and returns {invoice['invoice_id']}"
    if earlier:
        return f"billing service creates {invoice['invoice_id']} for the same order"
    return f"billing service creates invoice {invoice['invoice_id']}"


__all__ = ["BillingService", "FIRST_NUMBER", "MAX_AMOUNT", "MAX_STUDENT", "INVOICES_INDEX", "INVOICES_SCHEMA",
           "check_invoice", "issue_invoice", "list_invoices", "open_books", "student_errors", "trace_sentence"]
