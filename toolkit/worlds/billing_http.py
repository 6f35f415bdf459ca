"""Chapter 05: the billing service as its own process: plain HTTP + JSON on 127.0.0.1, and its client.

    python -m toolkit.worlds.billing_http serve --db billing.db --port 0 [--honour-keys]

It listens on 127.0.0.1 only and speaks a few routes:

    POST /invoices                      create_invoice arguments -> 201 (new) or 200 (replayed)
    GET  /invoices                      every invoice, oldest first
    GET  /invoices?idempotency_key=K    the invoice first recorded for K, or 404

``start`` runs it in a child process and returns a ``BillingProcess``, a
context manager that stops the process on exit. The logic behind the routes
is ``toolkit.worlds.billing_service.BillingService``.
"""
from __future__ import annotations

import argparse
import http.client
import json
import socket
import sys
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, quote, urlsplit

from toolkit.core import Status, ToolError, ToolFailure
from toolkit.worlds.billing_service import BillingService
from toolkit.worlds.catalog import CREATE_INVOICE
from toolkit.worlds.children import process_context, reap

#: The largest request body accepted, in bytes.
MAX_BODY = 64 * 1024
#: The only address the service binds to.
LOOPBACK = "127.0.0.1"


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
    """A billing service running in a child process; ``stop()`` (or leaving a ``with`` block) ends it."""

    process: Any
    port: int

    def stop(self) -> None:
        reap(self.process, 5, terminate=True)

    def __enter__(self) -> "BillingProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(path: str | Path, *, honour_keys: bool = False, notify: Callable[[str], None] | None = None,
          context: Any = None) -> BillingProcess:
    """Start the service in a child process and wait until it listens.

    ``context`` is a ``multiprocessing`` context or start method (default:
    fork where the platform has it, else spawn). ``notify`` must be picklable
    under spawn. Use the result in a ``with`` block (or call ``stop()``).
    """
    ctx = process_context(context)
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
        reap(process, 5, terminate=True)
        raise RuntimeError("the billing service did not start") from None
    finally:
        receive.close()
    return BillingProcess(process, port)


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
    parser = argparse.ArgumentParser(prog="python -m toolkit.worlds.billing_http", description="Run the billing service.")
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


__all__ = ["BillingClient", "BillingProcess", "BillingServer", "LOOPBACK", "MAX_BODY", "billing_main", "serve",
           "start"]


if __name__ == "__main__":
    sys.exit(billing_main())
