"""Chapter 05: a billing service with its own SQLite database, running as its own process.

    python -m toolkit.worlds.billing_service serve --db billing.db --port 0 [--honour-keys]

It listens on 127.0.0.1 only and speaks a few plain HTTP + JSON routes:

    POST /invoices                      create_invoice arguments -> 201 (new) or 200 (replayed)
    GET  /invoices                      every invoice, oldest first
    GET  /invoices?idempotency_key=K    the invoice first recorded for K, or 404

Invoices are numbered as in the chapter: INV-9, INV-10, ...

With ``honour_keys`` the service itself recognizes an idempotency key: the same
key with the same order returns the first invoice again (INV-9 on a retry);
the same key with a different order is refused (409). Without it, every
request that passes validation creates a new invoice: this is the billing
service of the duplicate-invoice trace.
"""
from __future__ import annotations

import argparse
import http.client
import json
import socket
import sqlite3
import sys
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, quote, urlsplit

from toolkit.worlds.catalog import CREATE_INVOICE
from toolkit.core import ToolError
from toolkit.effects import connect, fingerprint, transaction
from toolkit.core import Status, ToolFailure
from toolkit.core import parse_arguments, schema_errors

#: The number of the first invoice (the chapter's trace starts at INV-9).
FIRST_NUMBER = 9
#: The largest request body accepted, in bytes.
MAX_BODY = 64 * 1024
#: The only address the service binds to.
LOOPBACK = "127.0.0.1"

INVOICES_SCHEMA = """
CREATE TABLE IF NOT EXISTS invoices (
    number          INTEGER PRIMARY KEY,
    order_id        TEXT NOT NULL,
    amount          REAL NOT NULL,
    currency        TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint     TEXT NOT NULL        -- sha256 of canonical JSON (order_id, amount, currency)
)"""
INVOICES_INDEX = "CREATE INDEX IF NOT EXISTS invoices_by_key ON invoices (idempotency_key)"


def open_books(path: str | Path) -> sqlite3.Connection:
    """Open (and if needed create) a billing database."""
    conn = connect(path)
    with transaction(conn):
        conn.execute(INVOICES_SCHEMA)
        conn.execute(INVOICES_INDEX)
    return conn


def check_invoice(raw: Any) -> tuple[dict | None, list[ToolError]]:
    """Validate create_invoice arguments (dict or JSON text) against the chapter's contract."""
    arguments, errors = parse_arguments(raw)
    if errors:
        return None, errors
    errors = schema_errors(CREATE_INVOICE.validator, arguments)
    if not errors and arguments["amount"] <= 0:
        errors = [ToolError("range", "$.amount", "amount must be greater than 0", expected="> 0",
                            received=arguments["amount"], retryable=False)]
    return (None, errors) if errors else (arguments, [])


def _invoice(row: tuple, replayed: bool = False) -> dict[str, Any]:
    number, order_id, amount, currency, key = row[:5]
    return {"invoice_id": f"INV-{number}", "order_id": order_id, "amount": amount, "currency": currency,
            "idempotency_key": key, "replayed": replayed}


_COLUMNS = "number, order_id, amount, currency, idempotency_key, fingerprint"


def issue_invoice(conn: sqlite3.Connection, arguments: dict, *, honour_keys: bool,
                  first_number: int = FIRST_NUMBER) -> dict[str, Any]:
    """Write one invoice through ``conn``, inside the caller's transaction (this never commits).

    Arguments must already be valid (see ``check_invoice``). Honouring keys,
    a known key returns its first invoice with ``replayed: True``, and a known
    key with a different order raises ``ToolFailure`` (rejected).
    """
    digest = fingerprint({k: arguments[k] for k in ("order_id", "amount", "currency")})
    key = arguments["idempotency_key"]
    if honour_keys:
        row = conn.execute(f"SELECT {_COLUMNS} FROM invoices WHERE idempotency_key = ? ORDER BY number LIMIT 1",
                           (key,)).fetchone()
        if row is not None:
            if row[5] != digest:
                raise ToolFailure(Status.REJECTED, "idempotency_conflict",
                                  "this idempotency key was used for a different invoice")
            return _invoice(row, replayed=True)
    number = conn.execute("SELECT coalesce(max(number) + 1, ?) FROM invoices", (first_number,)).fetchone()[0]
    row = (number, arguments["order_id"], float(arguments["amount"]), arguments["currency"], key, digest)
    conn.execute(f"INSERT INTO invoices ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", row)
    return _invoice(row)


def list_invoices(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every invoice, oldest first, as plain dicts."""
    return [_invoice(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM invoices ORDER BY number")]


class BillingService:
    """The service's logic, without the HTTP around it.

    ``notify`` (optional) receives one sentence per invoice event, e.g.
    ``billing service creates invoice INV-9``; the crash reproduction uses it
    to assemble its trace.
    """

    def __init__(self, path: str | Path, *, honour_keys: bool = False,
                 notify: Callable[[str], None] | None = None):
        self.conn = open_books(path)
        self.honour_keys = honour_keys
        self.notify = notify

    def create_invoice(self, raw: Any) -> tuple[int, dict[str, Any]]:
        """Handle one request: an HTTP status and a JSON body (an invoice, or ``{"errors": [...]}``)."""
        arguments, errors = check_invoice(raw)
        if errors:
            return 400, {"errors": [e.to_dict() for e in errors]}
        try:
            with transaction(self.conn):
                earlier = self.conn.execute("SELECT count(*) FROM invoices WHERE order_id = ?",
                                            (arguments["order_id"],)).fetchone()[0]
                invoice = issue_invoice(self.conn, arguments, honour_keys=self.honour_keys)
        except ToolFailure as failure:
            error = ToolError(failure.reason, "$.idempotency_key", failure.message, retryable=False,
                              hint="use the original arguments with this key, or a new key")
            return 409, {"errors": [error.to_dict()]}
        except sqlite3.OperationalError:  # rolled back: nothing was created
            error = ToolError("busy", "$", "the invoice database is busy; nothing was created", retryable=True,
                              hint="retry with the same idempotency key")
            return 503, {"errors": [error.to_dict()]}
        if self.notify:
            self.notify(trace_sentence(invoice, earlier))
        return (200 if invoice["replayed"] else 201), invoice

    def invoices(self) -> list[dict[str, Any]]:
        return list_invoices(self.conn)

    def find(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM invoices WHERE idempotency_key = ? ORDER BY number "
                                "LIMIT 1", (key,)).fetchone()
        return _invoice(row) if row else None


def trace_sentence(invoice: dict[str, Any], earlier: int) -> str:
    """The trace sentence for one invoice event."""
    if invoice["replayed"]:
        return f"billing service recognizes the key and returns {invoice['invoice_id']}"
    if earlier:
        return f"billing service creates {invoice['invoice_id']} for the same order"
    return f"billing service creates invoice {invoice['invoice_id']}"


# --------------------------------------------------------------------------- HTTP

def _error_body(code: str, message: str) -> dict[str, Any]:
    return {"errors": [ToolError(code, "$", message, retryable=False).to_dict()]}


class _Handler(BaseHTTPRequestHandler):
    server_version = "billing/1"
    timeout = 5  # seconds a client may take to send its request; a cut stream cannot hold the service
    server: "BillingServer"

    def log_message(self, format: str, *args: Any) -> None:  # keep stderr quiet
        return

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, sort_keys=True).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        if urlsplit(self.path).path != "/invoices":
            return self._reply(404, _error_body("not_found", "no such route"))
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._reply(411, _error_body("invalid_json", "a Content-Length header is required"))
        if not 0 <= length <= MAX_BODY:
            return self._reply(413, _error_body("too_large", f"the body must be at most {MAX_BODY} bytes"))
        status, body = self.server.billing.create_invoice(self.rfile.read(length))
        self._reply(status, body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != "/invoices":
            return self._reply(404, _error_body("not_found", "no such route"))
        keys = parse_qs(parts.query).get("idempotency_key")
        if keys:
            found = self.server.billing.find(keys[0])
            return self._reply(200, found) if found else self._reply(404, _error_body("not_found", "no invoice"))
        self._reply(200, {"invoices": self.server.billing.invoices()})


class BillingServer(HTTPServer):
    """An HTTP server on 127.0.0.1 carrying one ``BillingService``."""

    def __init__(self, billing: BillingService, port: int = 0):
        self.billing = billing
        super().__init__((LOOPBACK, port), _Handler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A broken connection ends that request only; no traceback on stderr."""
        return


def serve(path: str | Path, *, port: int = 0, honour_keys: bool = False,
          notify: Callable[[str], None] | None = None, ready: Callable[[int], None] | None = None) -> None:
    """Run the service until the process is stopped; ``ready(port)`` is called once it listens."""
    server = BillingServer(BillingService(path, honour_keys=honour_keys, notify=notify), port)
    if ready:
        ready(server.port)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def _serve_child(path: str, honour_keys: bool, notify: Callable[[str], None] | None, pipe: Any) -> None:
    serve(path, honour_keys=honour_keys, notify=notify, ready=pipe.send)


@dataclass
class BillingProcess:
    """A billing service running in a child process; ``stop()`` ends it."""

    process: Any
    port: int

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(5)

    def __enter__(self) -> "BillingProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(path: str | Path, *, honour_keys: bool = False, notify: Callable[[str], None] | None = None,
          context: Any = None) -> BillingProcess:
    """Start the service in a child process and wait until it listens.

    ``context`` is a ``multiprocessing`` context (default: fork where the
    platform has it, else spawn). ``notify`` must be picklable under spawn.
    """
    import multiprocessing

    ctx = context or multiprocessing.get_context(default_start_method())
    CREATE_INVOICE.validator  # compile the schema here once, not in every forked child
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_serve_child, args=(str(path), honour_keys, notify, send), daemon=True)
    process.start()
    send.close()
    try:
        if not receive.poll(10):
            raise EOFError
        port = receive.recv()
    except EOFError:
        process.terminate()
        process.join(5)
        raise RuntimeError("the billing service did not start") from None
    return BillingProcess(process, port)


def default_start_method() -> str:
    """fork where available (fast, nothing re-imported), else spawn."""
    import multiprocessing

    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


class BillingClient:
    """Talks to a billing service on 127.0.0.1.

    ``create_invoice`` returns the invoice, or raises ``ToolFailure``: rejected
    when the service refused (nothing was created), recoverable when it could
    not be reached (nothing was sent), timeout when the request may have
    arrived but no answer came back (the outcome is unknown).
    """

    def __init__(self, port: int, timeout: float = 5.0):
        self.port, self.timeout = int(port), timeout

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        connection = http.client.HTTPConnection(LOOPBACK, self.port, timeout=self.timeout)
        try:
            try:
                connection.connect()
            except ConnectionRefusedError:
                raise ToolFailure(Status.RECOVERABLE_FAILURE, "unreachable", "the billing service is not listening")
            try:
                data = None if body is None else json.dumps(body).encode("utf-8")
                connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                return response.status, json.loads(response.read() or b"{}")
            except (socket.timeout, OSError, http.client.HTTPException, ValueError):
                raise ToolFailure(Status.TIMEOUT, "timeout", "no usable answer from billing; the outcome is unknown")
        finally:
            connection.close()

    def create_invoice(self, arguments: dict) -> dict[str, Any]:
        status, body = self._request("POST", "/invoices", arguments)
        if status == 503:
            raise ToolFailure(Status.RECOVERABLE_FAILURE, "busy", "billing was busy; nothing was created")
        if status >= 400:
            error = (body.get("errors") or [{}])[0]
            raise ToolFailure(Status.REJECTED, error.get("code", "rejected"), error.get("message", "refused"))
        return body

    def find(self, key: str) -> dict[str, Any] | None:
        status, body = self._request("GET", "/invoices?idempotency_key=" + quote(key, safe=""))
        return body if status == 200 else None

    def invoices(self) -> list[dict[str, Any]]:
        return self._request("GET", "/invoices")[1]["invoices"]


def billing_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.worlds.billing_service", description="Run the billing service.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve on 127.0.0.1")
    run.add_argument("--db", required=True, help="the SQLite file for invoices")
    run.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    run.add_argument("--honour-keys", action="store_true", help="recognize idempotency keys")
    options = parser.parse_args(argv)

    def ready(port: int) -> None:
        print(f"billing listening on {LOOPBACK}:{port}", flush=True)

    try:
        serve(options.db, port=options.port, honour_keys=options.honour_keys, ready=ready)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(billing_main())
