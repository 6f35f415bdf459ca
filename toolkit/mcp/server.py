"""Chapter 09: the course's host served over MCP: a tools/call is a request, checked like any other.

    tools/list  -> one entry per contract: its name, description and argument schema, as declared
    tools/call  -> host.execute(ToolCall(name, arguments, call id)): the three tests, then run or refuse

A refusal is a result, never a protocol error: ``isError: true``, the ``ToolResult`` dict as
``structuredContent`` (code, pointer, hint) and one line of text. The SDK's low-level ``Server``
validates nothing, so all a call meets is the contract. No refusal carries the workspace's path
(``without_root``), a handler that raises answers a generic error, and the log keeps the last
``LOG_KEEP`` attempts, each output as its size and SHA-256 (``audit_copy``).

    python -m toolkit.mcp serve --workspace DIR [--tools read_file,edit_file,inspect_exports]
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

from toolkit._caps import LOG_KEEP
from toolkit._formats import imported
from toolkit.kernel import Caller, Host, Retry, Status, Tool, ToolCall, ToolResult
from toolkit.wire import mcp_annotations

#: The file tools the files part offers, by name: ``--tools`` chooses among them (read_file by default).
CATALOG = ("read_file", "edit_file", "inspect_exports")
SERVER_NAME = "toolcontract-course"


def catalog_tools(workspace: Path | str, names: Iterable[str] = ("read_file",)) -> list[Tool]:
    """The course's file tools bound to ``workspace``: any of ``CATALOG``; an unknown name is a ValueError."""
    from toolkit.files import make_edit_file, make_inspect_exports
    from toolkit.kernel import make_read_file

    makers = {"read_file": make_read_file, "edit_file": make_edit_file, "inspect_exports": make_inspect_exports}
    names = list(dict.fromkeys(names))
    unknown = [n for n in names if n not in makers]
    if unknown:
        raise ValueError(f"unknown tools {unknown}; choose from {', '.join(CATALOG)}")
    return [makers[n](workspace) for n in names]


def serving_host(workspace: Path | str, names: Iterable[str] = ("read_file",)) -> Host:
    """The host the command serves: the chosen catalog tools, for a client holding exactly their scopes.

    Naming a tool on the command line is the operator's grant: ``--tools edit_file`` gives the client
    ``fs.write`` (edit_file's permission) and nothing else; the tests after it still run on every call.
    """
    tools = catalog_tools(workspace, names)
    scopes = frozenset(p for t in tools for p in t.contract.permissions)
    return Host.of(tools, Caller("mcp-client", scopes))


def tool_listing(host: Host) -> list[Any]:
    """tools/list: each declared contract as an ``mcp.types.Tool`` (its schema exactly as the contract has it).

    The annotations are the vendor table's (``toolkit.wire.mcp_annotations``), read off the contract, so a
    client that shows hints shows the contract's own words."""
    from mcp import types

    return [types.Tool(name=t.contract.name, description=t.contract.description,
                       input_schema=dict(t.contract.schema),
                       annotations=types.ToolAnnotations(**mcp_annotations(t.contract)))
            for t in host.tools.values()]


def mcp_text(result: ToolResult) -> str:
    """The one short line a text-only client reads: the output as JSON, or the first error with its hint."""
    if result.ok:
        return json.dumps(result.output, sort_keys=True, default=str)
    error = result.errors[0] if result.errors else None
    if error is None:
        return f"{result.status.value}: {result.reason}"
    hint = f" (hint: {error.hint})" if error.hint else ""
    return f"{result.status.value}: {error.code} at {error.pointer}: {error.message}{hint}"


def call_result(result: ToolResult, roots: Iterable[str] = ()) -> Any:
    """A course ``ToolResult`` as an ``mcp.types.CallToolResult``: ``isError`` unless it succeeded.

    ``structuredContent`` is ``result.to_dict()``. In a refusal or failure, ``roots`` (absolute folder
    paths) are replaced by ``<workspace>`` in every string of it and of the text; a success is left as the
    tool returned it (its output is data: scrubbing it would change what was read and break its evidence).
    """
    from mcp import types

    structured, text = result.to_dict(), mcp_text(result)
    if not result.ok:   # a tool's output is its data (a file may mention any path); what the host wrote is scrubbed
        structured, text = without_root(structured, roots), without_root(text, roots)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=structured, is_error=not result.ok)


def mcp_call_id(request_id: Any) -> str:
    """The course's call id for one tools/call: ``mcp_<JSON-RPC id>``, kept to the id alphabet."""
    text = "".join(ch for ch in str(request_id) if ch.isalnum() or ch in "_-")[:40]
    return f"mcp_{text or 'call'}"


def answer_call(host: Host, name: Any, arguments: Any, call_id: str, roots: Iterable[str] = ()) -> Any:
    """One tools/call, answered: the request goes through ``host.execute`` (so through ``host.check``).

    Absent arguments are an empty object, so a missing field is reported as ``missing_required``.
    Never raises: whatever goes wrong inside is an ``isError`` result that names no server detail.
    """
    from mcp import types

    try:
        call = ToolCall(name if isinstance(name, str) else str(name), {} if arguments is None else arguments,
                        call_id)
        result = host.execute(call)
        if host.log:
            host.log[-1] = audit_copy(host.log[-1])
        if len(host.log) > LOG_KEEP:
            del host.log[:-LOG_KEEP]
        return call_result(result, roots)
    except Exception as exc:   # a bug must not become a JSON-RPC error carrying str(exc) (a path, a secret)
        failed = ToolResult(call_id, Status.FAILED, reason="execution_failed")
        text = f"failed: the server could not answer this call ({type(exc).__name__})"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=failed.to_dict(), is_error=True)


def audit_copy(attempt: Any) -> Any:
    """``attempt`` as the server's log keeps it: its output replaced by its size and SHA-256."""
    output = attempt.result.output
    if output is None:
        return attempt
    text = json.dumps(output, sort_keys=True, default=str).encode("utf-8", "replace")
    kept = {"bytes": len(text), "sha256": hashlib.sha256(text).hexdigest()}
    return replace(attempt, result=replace(attempt.result, output=kept))


def build_server(host: Host, roots: Iterable[str] = ()) -> Any:
    """The SDK's low-level ``Server`` answering tools/list and tools/call from ``host``."""
    from mcp import types
    from mcp.server.lowlevel import Server

    roots = tuple(roots)
    listing = tool_listing(host)

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        return answer_call(host, params.name, params.arguments, mcp_call_id(ctx.request_id), roots)

    return Server(SERVER_NAME, version="0.1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def workspace_roots(workspace: Path | str) -> tuple[str, ...]:
    """The spellings of ``workspace`` to keep out of answers: as given, absolute, and resolved (longest first)."""
    spellings = {str(workspace), os.path.abspath(workspace), os.path.realpath(workspace)}
    return tuple(sorted((s for s in spellings if len(s) > 1), key=len, reverse=True))


def without_root(value: Any, roots: Iterable[str]) -> Any:
    """``value`` with every root path in every string replaced by ``<workspace>`` (dicts and lists walked)."""
    roots = tuple(roots)
    if not roots:
        return value
    if isinstance(value, str):
        for root in roots:
            value = value.replace(root, "<workspace>")
        return value
    if isinstance(value, dict):
        return {without_root(k, roots): without_root(v, roots) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_root(v, roots) for v in value]
    return value


def registration(workspace: Path | str, tools: Iterable[str] = ("read_file",), python: str = "python",
                 name: str = "course-files") -> dict[str, Any]:
    """The JSON an MCP client (Claude Desktop, an IDE) reads to start this server; ``python`` is
    the interpreter that has this package installed (a venv's ``bin/python``)."""
    args = ["-m", "toolkit.mcp", "serve", "--workspace", str(workspace)]
    if (tools := list(tools)) != ["read_file"]:
        args += ["--tools", ",".join(tools)]
    return {"mcpServers": {name: {"command": python, "args": args}}}


def serve_stdio(workspace: Path | str, names: Iterable[str] = ("read_file",)) -> None:
    """Serve the tools ``names`` over ``workspace`` on stdin/stdout until stdin closes. A line the
    SDK cannot read (it answers nothing), a client gone mid-answer: one line each on stderr."""
    imported("mcp.server.stdio")   # the SDK's first import, the collector paused: -30% CPU at start
    import anyio
    from mcp.server.stdio import stdio_server

    names = list(names)
    host = serving_host(workspace, names)
    server = build_server(host, workspace_roots(workspace))
    print(f"{SERVER_NAME}: serving {', '.join(names)} over MCP on stdio for the workspace "
          f"{os.path.realpath(workspace)} (stdout is the protocol; close stdin to stop)",
          file=sys.stderr, flush=True)

    async def relay(read_stream: Any, to_server: Any) -> None:
        async with read_stream, to_server:
            async for message in read_stream:
                if isinstance(message, Exception):     # the SDK would drop it, unanswered
                    _say(f"dropped a line that is not JSON-RPC ({type(message).__name__})")
                else:
                    await to_server.send(message)

    async def main() -> None:
        async with stdio_server() as (reading, writing), anyio.create_task_group() as tasks:
            to_server, from_client = anyio.create_memory_object_stream(0)
            tasks.start_soon(relay, reading, to_server)
            await server.run(from_client, writing, server.create_initialization_options())

    try:
        anyio.run(main)
    except* (BrokenPipeError, ConnectionResetError):
        _say("the client closed the connection before its answer was written")


def _say(line: str) -> None:
    """One line on stderr, the server's log (whose reader may be gone too)."""
    with contextlib.suppress(OSError):
        print(f"{SERVER_NAME}: {line}", file=sys.stderr, flush=True)
