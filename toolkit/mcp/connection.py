"""Chapter 09: one MCP client session, held by the official SDK in a thread of its own.

    with McpConnection.stdio([sys.executable, "-m", "toolkit.mcp", "serve", "--workspace", "ws"]) as server:
        server.tools()                               # tools/list: mcp.types.Tool values
        server.call("read_file", {"path": "a.txt"})  # tools/call: an mcp.types.CallToolResult

The SDK's async context managers must be entered and left in one task, and a notebook cell already
runs a loop: so the session lives in an event loop in its own thread from ``__enter__`` to
``__exit__``, each call handed to it and waited for (at most ``timeout`` seconds). Leaving the block
stops the server and the thread; ``start()`` boots the server in the background. A server that fails
to start is a one-line ``ConnectionError``; its stderr goes to a temporary file (``server_log()``).
"""
from __future__ import annotations

import asyncio
import tempfile
import threading
from concurrent.futures import Future
from typing import Any, Callable, Sequence

from toolkit._caps import MAX_PAGES
from toolkit._formats import imported

#: Seconds to wait for the server to start and answer initialize, and for one call.
START_SECONDS = 20.0
CALL_SECONDS = 30.0


class McpConnection:
    """A client session to one MCP server, usable from synchronous code; a context manager."""

    def __init__(self, command: Sequence[str], cwd: str | None = None, env: dict[str, str] | None = None,
                 timeout: float = CALL_SECONDS):
        if not command:
            raise ValueError("an MCP server command needs at least the program to run")
        self.command, self.cwd, self.env, self.timeout = list(command), cwd, env, timeout
        self.server_name = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._ready: Future = Future()
        self._errlog: Any = None
        self._entered = False

    @classmethod
    def stdio(cls, command: Sequence[str], cwd: str | None = None, env: dict[str, str] | None = None,
              timeout: float = CALL_SECONDS) -> "McpConnection":
        """A connection that starts ``command`` and speaks MCP over its stdin/stdout."""
        return cls(command, cwd, env, timeout)

    # -- the session's life -----------------------------------------------------
    def start(self) -> "McpConnection":
        """Start the server and the handshake without waiting; returns ``self``. The ``with`` block
        that follows waits until it is ready (and stops it at the end)::

            with McpConnection.stdio(command).start() as server:   # booted in the background
                server.call("read_file", {"path": "a.txt"})"""
        if self._loop is not None:
            raise RuntimeError("this MCP connection is already open")
        try:
            imported("mcp.client.stdio")   # the SDK's import, paid here and not in _hold's thread
        except ImportError as exc:
            raise ConnectionError(f"the MCP server did not start: the mcp SDK is missing ({exc.name})") from None

        self._ready = Future()
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()        # made here, so a close() right after start() can always set it
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()
        self._done = asyncio.run_coroutine_threadsafe(self._hold(), self._loop)
        return self

    def __enter__(self) -> "McpConnection":
        if self._entered:
            raise RuntimeError("this MCP connection is already open")
        if self._loop is None:
            self.start()
        self._entered = True
        try:
            self._ready.result(START_SECONDS)
        except BaseException as exc:
            self.__exit__(None, None, None)
            raise ConnectionError(f"the MCP server did not start: {type(exc).__name__}") from None
        return self

    def __exit__(self, *exc_info: Any) -> None:
        loop, thread = self._loop, self._thread
        self._entered = False
        if loop is None or thread is None:
            return
        if self._stop is not None:
            loop.call_soon_threadsafe(self._stop.set)
        try:
            self._done.result(START_SECONDS)
        except BaseException:
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_SECONDS)
        loop.close()
        self._loop = self._thread = self._session = self._stop = None
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def close(self) -> None:
        """Stop the server and the session, as leaving the ``with`` block does (nothing if not open)."""
        self.__exit__(None, None, None)

    def server_log(self) -> str:
        """What the server wrote to its stderr so far (while the connection is open)."""
        if self._errlog is None:
            return ""
        self._errlog.flush()
        self._errlog.seek(0)
        text = self._errlog.read()
        self._errlog.seek(0, 2)
        return text

    async def _hold(self) -> None:
        """Enter the SDK's context managers, signal ready, wait for ``__exit__``, leave them (one task).

        The SDK is already imported (``start`` does it in the caller's thread), so while the server process
        boots this thread only waits on pipes, and the caller's thread runs on undisturbed."""
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=self.command[0], args=self.command[1:], cwd=self.cwd, env=self.env)
        try:
            async with stdio_client(params, errlog=self._errlog) as (read, write), \
                    ClientSession(read, write) as session:
                initialized = await session.initialize()
                self.server_name = initialized.server_info.name
                self._session = session
                self._ready.set_result(True)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    # -- requests ---------------------------------------------------------------
    def _run(self, make: Callable[[Any], Any]) -> Any:
        """Run ``make(session)`` (a coroutine) on the session's loop and wait for it, at most ``timeout`` s."""
        if self._loop is None or self._session is None or not self._entered:
            raise RuntimeError("the MCP connection is not open: use it inside a with block")
        future = asyncio.run_coroutine_threadsafe(make(self._session), self._loop)
        try:
            return future.result(self.timeout)
        except TimeoutError:
            future.cancel()
            raise

    def tools(self) -> list[Any]:
        """tools/list, every page: the server's tools as ``mcp.types.Tool`` values.

        A listing the SDK refuses for one unreadable entry is read again raw: each entry it cannot
        read stays a dict, for the host to leave out with its reason (no raw read: a one-line
        ``ConnectionError``)."""
        from mcp import types
        from pydantic import ValidationError

        async def every_page(session: Any, raw: Any) -> list[Any]:
            tools, cursor = [], None
            for _ in range(MAX_PAGES):
                if raw is not None:   # the dispatcher under the SDK's checks: the listing as sent
                    page = await raw("tools/list", {"cursor": cursor} if cursor else None, {})
                    page = page if isinstance(page, dict) else {}
                    tools.extend(_readable(session, page.get("tools")))
                    cursor = page.get("nextCursor")
                    cursor = cursor if isinstance(cursor, str) else None
                else:
                    page = await session.list_tools(
                        params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                if not cursor:
                    break
            return tools
        try:
            return self._run(lambda session: every_page(session, None))
        except ValidationError as exc:
            raw = getattr(getattr(self._session, "_dispatcher", None), "send_raw_request", None)
            if raw is None:
                raise ConnectionError(f"the MCP server's tools/list is not valid MCP ({exc.error_count()}"
                                      " errors): none of its tools is adopted") from None
            return self._run(lambda session: every_page(session, raw))

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """tools/call: the server's ``mcp.types.CallToolResult`` (raises the SDK's error on a protocol error)."""
        return self._run(lambda session: session.call_tool(name, arguments))


def _readable(session: Any, entries: Any) -> list[Any]:
    """Raw listing entries as ``mcp.types.Tool`` where the SDK reads them, else the dicts they were
    (handed to the session as its listing, so the SDK checks answers against the schema it read)."""
    from mcp import types

    out = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            out.append(types.Tool.model_validate(entry))
        except ValueError:   # pydantic's ValidationError
            if isinstance(entry, dict):
                out.append(entry)
    absorb = getattr(session, "_absorb_tool_listing", None)
    if absorb is not None:
        read = [tool for tool in out if isinstance(tool, types.Tool)]
        absorb(types.ListToolsResult(tools=read), complete=False)
    return out
