"""Chapter 05: the billing service as its own process: plain HTTP + JSON on 127.0.0.1, and its client.

    python -m course.worlds.billing_http serve --db billing.db --port 0 [--honour-keys] [--prefix /services/billing/]

It listens on 127.0.0.1 only and speaks a few routes:

    POST /invoices                      create_invoice arguments -> 201 (new) or 200 (replayed)
    GET  /invoices                      every invoice, oldest first
    GET  /invoices?idempotency_key=K    the invoice first recorded for K, or 404
    GET  /                              who is answering: {"service": "billing", "honour_keys": ...}

With a ``prefix`` (a JupyterHub service's ``/services/billing/``) the same
routes answer under it as well, as a hub's proxy forwards them. A POST may
carry a ``X-Course-Student`` header (percent-encoded text): the invoice it
creates is tagged with that student (the class experiment's tally).

Requests are served concurrently, one thread each, so a client that opens a
socket and says nothing holds only its own thread, for at most
``IDLE_TIMEOUT`` seconds; at most ``MAX_CONNECTIONS`` are served at once, and
one more is answered 503 at once instead of waiting in line. Every request that
reaches a handler gets a JSON answer, an unexpected error included (500).

``start`` runs it in a child process and returns a ``BillingProcess``, a
context manager that stops the process on exit (SIGTERM, then SIGKILL if it
does not go) and closes its pipe. The logic behind the routes is
``course.worlds.billing_service.BillingService``; the client that talks to it
is ``course.worlds.billing_client.BillingClient``.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import dataclass
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from toolkit.kernel import ToolError
from course.worlds import BillingService
from course.worlds import CREATE_INVOICE
from course.worlds import process_context, reap

#: The largest request body accepted, in bytes.
MAX_BODY = 64 * 1024
#: The only address the service binds to.
LOOPBACK = "127.0.0.1"
#: Seconds a client may keep a socket open without finishing its request.
IDLE_TIMEOUT = 5.0
#: Connections served at once; one more gets an immediate 503 (nothing was created).
MAX_CONNECTIONS = 32
#: The request header naming the student an invoice is made for (percent-encoded text).
STUDENT_HEADER = "X-Course-Student"


def _error_body(code: str, message: str) -> dict[str, Any]:
    return {"errors": [ToolError(code, "$", message, retryable=False).to_dict()]}


class _Handler(BaseHTTPRequestHandler):
    server_version = "billing/1"
    timeout = IDLE_TIMEOUT  # seconds a client may take to send its request; a cut stream holds one thread only
    server: "BillingServer"

    def handle_one_request(self) -> None:
        """One request; an error in a route still gets a JSON answer if the socket is there to take it."""
        try:
            super().handle_one_request()
        except OSError:
            self.close_connection = True     # the socket went away or timed out: nobody to answer
        except Exception:
            self.close_connection = True
            try:
                self._reply(500, _error_body("service_error", "the billing service failed; nothing was created"))
            except OSError:
                pass

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
        if self.server.route(urlsplit(self.path).path) != "/invoices":
            return self._reply(404, _error_body("not_found", "no such route"))
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._reply(411, _error_body("invalid_json", "a Content-Length header is required"))
        if not 0 <= length <= MAX_BODY:
            return self._reply(413, _error_body("too_large", f"the body must be at most {MAX_BODY} bytes"))
        body = self.rfile.read(length)
        student = unquote(self.headers.get(STUDENT_HEADER, ""), errors="replace")
        self._reply(*self.server.billing.create_invoice(body, student))

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        route = self.server.route(parts.path)
        if route == "/":
            return self._reply(200, {"service": "billing", "honour_keys": self.server.billing.honour_keys})
        if route != "/invoices":
            return self._reply(404, _error_body("not_found", "no such route"))
        keys = parse_qs(parts.query).get("idempotency_key")
        if keys:
            found = self.server.billing.find(keys[0])
            return self._reply(200, found) if found else self._reply(404, _error_body("not_found", "no invoice"))
        self._reply(200, {"invoices": self.server.billing.invoices()})


class BillingServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 carrying one ``BillingService``, one thread per request."""

    daemon_threads = False   # ``server_close()`` (leaving a ``with`` block) waits for every handler thread,
    block_on_close = True    # each bounded by ``IDLE_TIMEOUT``
    request_queue_size = 2 * MAX_CONNECTIONS   # the listen backlog: a burst is accepted, then served or refused

    def __init__(self, billing: BillingService, port: int = 0, prefix: str = ""):
        self.billing = billing
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""   # "/services/billing" or ""
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__((LOOPBACK, port), _Handler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def route(self, path: str) -> str | None:
        """The route a path names ("/" or "/invoices"), with or without the prefix; None for any other path."""
        if self.prefix and (path == self.prefix or path.startswith(self.prefix + "/")):
            path = path[len(self.prefix):]
        path = path or "/"
        return path if path in ("/", "/invoices") else None

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve in a thread if a slot is free; else answer 503 now and close."""
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A broken connection ends that request only; no traceback on stderr."""
        return


def _refuse_busy(request: Any) -> None:
    body = json.dumps(_error_body("busy", "the billing service is serving too many connections; nothing was "
                                          "created"), sort_keys=True).encode("utf-8")
    head = (f"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("ascii")
    try:
        request.settimeout(1.0)
        request.sendall(head + body)
    except OSError:
        pass


def serve(path: str | Path, *, port: int = 0, honour_keys: bool = False,
          notify: Callable[[str], None] | None = None, ready: Callable[[int], None] | None = None,
          prefix: str = "") -> None:
    """Run the service until the process is stopped; ``ready(port)`` is called once it listens."""
    server = BillingServer(BillingService(path, honour_keys=honour_keys, notify=notify), port, prefix)
    if ready:
        ready(server.port)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        server.billing.close()


def serve_child(path: str, honour_keys: bool, notify: Callable[[str], None] | None, pipe: Any,
                 other_end: Any = None) -> None:
    """The child's side: close the end it inherited and does not use, say the port once, then close the pipe."""
    if other_end is not None:
        other_end.close()

    def ready(port: int) -> None:
        pipe.send(port)
        pipe.close()

    try:
        serve(path, honour_keys=honour_keys, notify=notify, ready=ready)
    except Exception:         # could not open its books or its port: the parent hears EOF and says so
        sys.exit(1)


@dataclass
class BillingProcess:
    """A billing service running in a child process; ``stop()`` (or leaving a ``with`` block) ends it."""

    process: Any
    port: int
    exitcode: int | None = None   # set by ``stop()``

    def stop(self, wait: float = 5) -> None:
        """SIGTERM, then SIGKILL if it is still there after ``wait`` s; then the process object's handles close."""
        if self.exitcode is not None:
            return
        reap(self.process, wait, terminate=True)
        self.exitcode = self.process.exitcode
        self.process.close()

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
    process = ctx.Process(target=serve_child, args=(str(path), honour_keys, notify, send, receive), daemon=True)
    try:
        process.start()
    finally:
        send.close()
    try:
        if not receive.poll(10):
            raise EOFError
        port = receive.recv()
    except (EOFError, OSError):
        reap(process, 5, terminate=True)
        raise RuntimeError("the billing service did not start") from None
    finally:
        receive.close()
    return BillingProcess(process, port)


STOP_GRACE = 2   # seconds a stopped command may take to close its socket and finish its requests


def _interrupt(signum: int, frame: Any) -> None:
    """Stop serving; if closing takes longer than ``STOP_GRACE``, SIGALRM's default action ends the process
    (every invoice was committed in its own transaction, so nothing recorded is lost)."""
    if hasattr(signal, "alarm"):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(STOP_GRACE)
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """SIGINT and SIGTERM stop the command at once, even where its parent started it with SIGINT ignored (a hub
    stops its services with SIGINT, then SIGTERM)."""
    for name in ("SIGINT", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _interrupt)


def billing_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.worlds.billing_http", description="Run the billing service.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve on 127.0.0.1")
    run.add_argument("--db", required=True, help="the SQLite file for invoices")
    run.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    run.add_argument("--honour-keys", action="store_true", help="recognize idempotency keys")
    run.add_argument("--prefix", default="", help="answer under this path too, e.g. /services/billing/")
    options = parser.parse_args(argv)

    def ready(port: int) -> None:
        print(f"billing listening on {LOOPBACK}:{port}", flush=True)

    _stop_on_signals()
    try:
        serve(options.db, port=options.port, honour_keys=options.honour_keys, ready=ready, prefix=options.prefix)
    except KeyboardInterrupt:
        pass
    return 0


__all__ = ["BillingProcess", "BillingServer", "IDLE_TIMEOUT", "LOOPBACK", "MAX_BODY",
           "MAX_CONNECTIONS", "STUDENT_HEADER", "billing_main", "serve", "serve_child", "start"]


if __name__ == "__main__":
    sys.exit(billing_main())
