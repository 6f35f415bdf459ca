"""Chapter 05: the billing service as its own process: HTTP + JSON on 127.0.0.1, served by tornado.

    python -m course.worlds.billing_http serve --db billing.db --port 0 [--honour-keys]
        [--prefix /services/billing/] [--hub-auth] [--restart]

``--db`` is a SQLite file or a ``postgresql://`` URL (default: ``COURSE_DATABASE_URL``).

It listens on 127.0.0.1 (``--ip`` only for a pod of its own, with ``--hub-auth``) and speaks a
few routes:

    POST /invoices                      create_invoice arguments -> 201 (new) or 200 (replayed)
    GET  /invoices                      the invoices the caller may see, oldest first
    GET  /invoices?idempotency_key=K    the invoice first recorded for K, or 404
    GET  /                              who is answering: {"service": "billing", "honour_keys": ...}

With a ``prefix`` (a JupyterHub service's ``/services/billing/``) the same
routes answer under it as well, as a hub's proxy forwards them. Every answer
the service gives itself carries the ``X-Billing-Service`` header: a client
that gets an answer without it (a proxy's 502/503/504) knows the service did
not say what happened.

Who asks. Without ``--hub-auth`` (a chapter's local service) everyone may do
everything, and a POST may carry a ``X-Course-Student`` header (percent-encoded
text) that tags its invoice. With ``--hub-auth`` (the class hub) every request
must carry a hub token (``Authorization: token ...``), checked with the hub's
API the way JupyterHub services do (``HubAuthenticated``): no valid token, or a
token without access to this service, is a 403, on the proxy's path and on the
service's own port alike. An invoice is tagged with the token's owner, never
with what the request says, and a student sees only their own invoices; a
token with the hub's ``admin:users`` scope (the instructor's) sees every one.

Connections are served by tornado's HTTP server on one event loop: a client
that dribbles its request or says nothing is cut off when its head (or its
body) is not complete within ``IDLE_TIMEOUT`` seconds in all, and meanwhile
every other request is served. ``--restart`` runs the service under a small
supervisor that starts it again at once when it dies (and reaps it); the
child stops by itself if its supervisor is gone.

``start`` runs it in a child process and returns a ``BillingProcess``, a
context manager that stops the process on exit (SIGTERM, then SIGKILL if it
does not go) and closes its pipe; ``BillingServer`` serves it from a thread of
this process. The logic behind the routes is
``course.worlds.billing_service.BillingService``; the client that talks to it
is ``course.worlds.billing_client.BillingClient``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from toolkit.effects import URL_VARIABLE
from course.worlds import BillingService
from course.worlds import MAX_BODY, application, hub_auth_from_env
from course.worlds import CREATE_INVOICE
from course.worlds import process_context, reap

#: The only address the service binds to.
LOOPBACK = "127.0.0.1"
#: Seconds in all a client may take to send a request's head, and again its body; then it is cut.
IDLE_TIMEOUT = 5.0
#: Seconds a stopped command may take to finish the requests it is serving.
STOP_GRACE = 2
#: Seconds the supervisor waits before starting a service that died (doubled up to 8 s while it
#: keeps dying).
RESTART_DELAY = 0.25


def http_server(billing: BillingService, prefix: str = "", hub_auth: Any = None) -> Any:
    """The tornado ``HTTPServer``: a request slower than ``IDLE_TIMEOUT`` s is cut off."""
    from tornado.httpserver import HTTPServer

    return HTTPServer(application(billing, prefix, hub_auth), idle_connection_timeout=IDLE_TIMEOUT,
                      body_timeout=IDLE_TIMEOUT, max_body_size=4 * MAX_BODY, xheaders=False)


async def _serving(billing: BillingService, sockets: list, prefix: str, hub_auth: Any,
                   until: asyncio.Event, parent: int | None = None,
                   ready: Callable[[int], None] | None = None) -> None:
    """Serve on ``sockets`` until ``until`` is set (or the process's parent changes), then finish
    the requests in flight.

    ``ready(port)`` is called once the routes are in place.
    """
    server = http_server(billing, prefix, hub_auth)
    server.add_sockets(sockets)
    if ready:
        ready(sockets[0].getsockname()[1])
    try:
        while not until.is_set():
            try:
                await asyncio.wait_for(until.wait(), 1.0)
            except asyncio.TimeoutError:
                if parent is not None and os.getppid() != parent:
                    break                             # the supervisor is gone: so is this service
    finally:
        server.stop()
        try:
            await asyncio.wait_for(server.close_all_connections(), STOP_GRACE)
        except asyncio.TimeoutError:
            pass


def _bind(port: int, ip: str = LOOPBACK) -> list:
    from tornado.netutil import bind_sockets

    return bind_sockets(port, ip)


class BillingServer:
    """The service served from a thread of this process, on 127.0.0.1, with its own event loop.

    A context manager: entering starts serving, leaving stops it (and closes ``billing``).
    """

    def __init__(self, billing: BillingService, port: int = 0, prefix: str = "",
                 hub_auth: Any = None):
        self.billing, self.prefix, self.hub_auth = billing, prefix, hub_auth
        self._sockets = _bind(port)
        self.port = self._sockets[0].getsockname()[1]
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._until: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        self._loop, self._until = asyncio.get_running_loop(), asyncio.Event()
        try:
            await _serving(self.billing, self._sockets, self.prefix, self.hub_auth, self._until,
                           ready=lambda port: self._started.set())
        finally:
            self._started.set()

    def __enter__(self) -> "BillingServer":
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._until is not None:
            self._loop.call_soon_threadsafe(self._until.set)
        self._thread.join(STOP_GRACE + 5)
        for sock in self._sockets:
            sock.close()
        self.billing.close()


def serve(path: str | Path, *, port: int = 0, honour_keys: bool = False,
          notify: Callable[[str], None] | None = None, ready: Callable[[int], None] | None = None,
          prefix: str = "", hub_auth: Any = None, parent: int | None = None,
          ip: str = LOOPBACK) -> None:
    """Serve until SIGINT or SIGTERM (or, given ``parent``, until it is not this one's parent).

    ``ready(port)`` is called once it listens; ``hub_auth`` (a ``HubAuth``) makes every caller show
    a hub token. ``ip`` is 127.0.0.1 but in a container of its own (a cluster's pod: 0.0.0.0, with
    ``hub_auth``).
    """
    billing = BillingService(path, honour_keys=honour_keys, notify=notify)
    try:
        sockets = _bind(port, ip)

        async def main() -> None:
            until = asyncio.Event()
            loop = asyncio.get_running_loop()
            if threading.current_thread() is threading.main_thread():
                for name in ("SIGINT", "SIGTERM"):
                    loop.add_signal_handler(getattr(signal, name), until.set)
            await _serving(billing, sockets, prefix, hub_auth, until, parent, ready)

        asyncio.run(main())
    finally:
        billing.close()


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


def supervise(command: list[str]) -> int:
    """Run ``command`` and start it again whenever it dies, until SIGINT or SIGTERM; then stop it
    and return 0.

    Each death is reaped at once (``wait``); a service that keeps dying is started again after
    0.25, 0.5, ... 8 s.
    """
    stopping = threading.Event()
    child: subprocess.Popen | None = None

    def stop(signum: int, frame: Any) -> None:
        stopping.set()
        if child is not None and child.poll() is None:
            child.terminate()

    for name in ("SIGINT", "SIGTERM"):
        signal.signal(getattr(signal, name), stop)
    delay = RESTART_DELAY
    while not stopping.is_set():
        child = subprocess.Popen(command)
        began = time.monotonic()
        code = child.wait()
        if stopping.is_set():
            break
        print(f"billing service exited with status {code}; starting it again", file=sys.stderr,
              flush=True)
        delay = RESTART_DELAY if time.monotonic() - began > 30 else min(2 * delay, 8.0)
        stopping.wait(delay)
    if child is not None:
        try:
            child.wait(STOP_GRACE + 3)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return 0


def billing_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.worlds.billing_http", description="Run the billing service.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="serve on 127.0.0.1")
    run.add_argument("--db", default=None, help="the invoices' SQLite file, or a postgresql:// URL "
                                                "(default: COURSE_DATABASE_URL)")
    run.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    run.add_argument("--honour-keys", action="store_true", help="recognize idempotency keys")
    run.add_argument("--prefix", default="", help="answer under this path too, e.g. /services/billing/")
    run.add_argument("--hub-auth", action="store_true",
                     help="every caller shows a hub token (a hub's service)")
    run.add_argument("--restart", action="store_true",
                     help="start the service again whenever it dies")
    run.add_argument("--ip", default=LOOPBACK,
                     help="the address to listen on (0.0.0.0 in a pod of its own)")
    run.add_argument("--parent", type=int, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.db is None and not os.environ.get(URL_VARIABLE):
        parser.error(f"--db is required unless {URL_VARIABLE} is set")
    if options.restart:
        command = [sys.executable, "-m", "course.worlds.billing_http"] + \
                  [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--restart"]
        return supervise(command + ["--parent", str(os.getpid())])

    def ready(port: int) -> None:
        print(f"billing listening on {LOOPBACK}:{port}", flush=True)

    serve(options.db, port=options.port, honour_keys=options.honour_keys, ready=ready,
          prefix=options.prefix, hub_auth=hub_auth_from_env() if options.hub_auth else None,
          parent=options.parent, ip=options.ip)
    return 0


__all__ = ["BillingProcess", "BillingServer", "IDLE_TIMEOUT", "LOOPBACK", "billing_main", "serve",
           "serve_child", "start", "supervise"]


if __name__ == "__main__":
    sys.exit(billing_main())
