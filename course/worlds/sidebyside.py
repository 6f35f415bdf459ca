"""Chapter 09: the same read_file over MCP, naive and under contract; the host in front of an untrusted server.

    naive_vs_contract(scratch)  -> lines: the SDK's decorator server returns a planted secret for ../secret.txt
                                   with isError false; the course's server refuses it, naming the path test
    guarded_tickets(scratch)    -> lines: an McpHost in front of the tickets server: a retried open_ticket
                                   replays (one ticket), an undeclared argument is refused before the wire,
                                   close_ticket asks for approval and runs only when approved

Both start real server processes with the official SDK (each inside a ``with``
block that stops it) and touch nothing outside ``scratch``, a folder the caller
owns (a ``tempfile.TemporaryDirectory()`` in the chapter): the secret is planted
beside a workspace made inside it. The lines hold no path and no timing, so a
notebook prints the same thing every run.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable

from toolkit.kernel import LAYERS, ToolResult
from toolkit._show import shorten
from toolkit.mcp import Trust
from toolkit.mcp import McpConnection
from toolkit.mcp import McpHost

SECRET = "PLANTED-SECRET: this file lies outside the workspace"
#: The demo servers start from their file, not as ``course.worlds.demo_servers``: a server process is given a
#: bare environment (no ``PYTHONPATH``), and the file is found wherever the course was unpacked.
DEMO_SERVERS = str(Path(__file__).with_name("demo_servers.py"))


def course_server_command(workspace: Path | str, tools: Iterable[str] = ("read_file",)) -> list[str]:
    """The command that serves the course's tools over ``workspace``: ``python -m toolkit.mcp serve ...``."""
    return [sys.executable, "-m", "toolkit.mcp", "serve", "--workspace", str(workspace), "--tools", ",".join(tools)]


def naive_server_command(workspace: Path | str) -> list[str]:
    """The command that serves the naive, plain-function read_file over ``workspace``."""
    return [sys.executable, DEMO_SERVERS, "naive", "--workspace", str(workspace)]


def tickets_server_command(folder: Path | str) -> list[str]:
    """The command that serves the tickets tools, keeping tickets in ``folder``."""
    return [sys.executable, DEMO_SERVERS, "tickets", "--folder", str(folder)]


def plant_secret(scratch: Path | str) -> Path:
    """Make ``scratch/workspace`` (with ``notes.txt``) and plant ``scratch/secret.txt`` beside it; the workspace."""
    scratch = Path(scratch)
    if not scratch.is_dir():
        raise ValueError("scratch must be an existing folder you own, e.g. a tempfile.TemporaryDirectory()")
    workspace = scratch / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("notes inside the workspace\n", encoding="utf-8")
    (scratch / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    return workspace


def _answer_column(answer) -> str:
    """One column for a CallToolResult: isError, then the text or the refusal with the test that refused."""
    structured = answer.structured_content or {}
    if answer.is_error and structured.get("errors"):
        error = structured["errors"][0]
        test = next((l.test for l in LAYERS if l.failure_class.value == structured.get("failure_class")), "?")
        return f"isError=true   refused by {test}: {error['code']} at {error['pointer']}"
    text = " ".join(getattr(c, "text", "") for c in answer.content).strip()
    return f"isError={'true ' if answer.is_error else 'false'}  {shorten(text, 60)!r}"


def naive_vs_contract(scratch: Path | str) -> list[str]:
    """Ask both servers for ``notes.txt`` and ``../secret.txt``; one line per answer (plus a verdict line)."""
    workspace = plant_secret(scratch)
    lines, leaked = [], {}
    servers = [("naive server (SDK decorator, plain read_file)", naive_server_command(workspace)),
               ("course server (python -m toolkit.mcp serve)", course_server_command(workspace))]
    started = [(label, McpConnection.stdio(command).start()) for label, command in servers]   # both boot at once
    try:
        for label, connection in started:
            lines.append(label)
            with connection as server:
                for path in ("notes.txt", "../secret.txt"):
                    answer = server.call("read_file", {"path": path})
                    lines.append(f"  {f'read_file({path!r})':28} {_answer_column(answer)}")
                    texts = " ".join(getattr(c, "text", "") for c in answer.content)
                    leaked[label] = leaked.get(label, False) or SECRET in texts
    finally:
        for _, connection in started:
            connection.close()                           # a server not reached (after an error) is stopped too
    for label, did in leaked.items():
        lines.append(f"{label.split(' (')[0]}: {'LEAKED the planted secret' if did else 'kept the secret out'}")
    return lines


def _line(label: str, result: ToolResult) -> str:
    if result.ok:
        output = result.output if isinstance(result.output, dict) else {}
        return f"  {label:44} {result.status.value}: {output.get('event', '')} {output.get('id', '')}".rstrip()
    error = result.errors[0] if result.errors else None
    return f"  {label:44} {result.status.value}: {error.code if error else result.reason}"


def guarded_tickets(scratch: Path | str) -> list[str]:
    """An ``McpHost`` in front of the tickets server, step by step; the last lines count what really happened."""
    from course.worlds import stored_tickets

    folder = Path(scratch) / "tickets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tickets.jsonl").unlink(missing_ok=True)
    answers = iter([False, True])
    trust = Trust(idempotency_fields={"open_ticket": "request_key"}, repeatable=frozenset())
    with McpConnection.stdio(tickets_server_command(folder)) as server:
        host = McpHost(server, trust, approve=lambda call, contract: next(answers, False))
        lines = ["adopted: " + ", ".join(f"{c.name} (retry {c.retry.value}{', approval' if c.needs_approval else ''})"
                                         for c in host.contracts.values())]
        steps = [
            ("open_ticket, key r-1", "open_ticket", {"title": "printer jam", "request_key": "r-1"}),
            ("open_ticket again, same key (a retry)", "open_ticket", {"title": "printer jam", "request_key": "r-1"}),
            ("open_ticket with an undeclared argument", "open_ticket", {"title": "x", "priority": "high"}),
            ("close_ticket T-1 (person says no)", "close_ticket", {"ticket_id": "T-1"}),
            ("close_ticket T-1 (person says yes)", "close_ticket", {"ticket_id": "T-1"}),
        ]
        for label, name, arguments in steps:
            lines.append(_line(label, host.call(name, arguments)))
        lines += [f"approval asked: {line}" for line in host.asked]
        lines.append(f"tools/call sent: {len(host.sent)} ({', '.join(host.sent)})")
    events = stored_tickets(folder)
    lines.append(f"in the server's file: {sum(e['event'] == 'open' for e in events)} opened, "
                 f"{sum(e['event'] == 'close' for e in events)} closed")
    return lines


__all__ = ["course_server_command", "guarded_tickets", "naive_server_command", "naive_vs_contract", "plant_secret",
           "SECRET", "tickets_server_command"]
