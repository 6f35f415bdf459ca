"""Chapter 09: two small servers written the SDK's own way (its decorator server), for the chapter to connect to.

    python course/worlds/demo_servers.py naive --workspace DIR    # read_file as a plain function: no contract
    python course/worlds/demo_servers.py tickets --folder DIR     # open / close / list tickets kept in DIR

``naive``: the tool most tutorials write first, ``def read_file(path: str)``
that opens ``workspace/path``. The SDK checks that ``path`` is a string and
nothing else, so ``../secret.txt`` is read from outside the workspace and
returned with ``isError: false``. It exists to be compared with the course's
server (``course.worlds.sidebyside``); never point it at a folder that matters.

``tickets``: a server whose tools a host should not take at their word.
``open_ticket`` appends a ticket each time it runs (not safe to repeat; the
server says nothing about it); ``close_ticket`` is marked destructive;
``list_tickets`` is marked read-only. The tickets live in ``DIR/tickets.jsonl``,
so a test can count how many times an effect really happened.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from toolkit._formats import imported

TICKETS_FILE = "tickets.jsonl"


def naive_server(workspace: str) -> Any:
    """The SDK's decorator server with a plain, unchecked ``read_file``."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("naive-files")

    @server.tool()
    def read_file(path: str) -> str:
        """Read a file from the workspace."""
        with open(Path(workspace) / path, encoding="utf-8") as handle:
            return handle.read()

    return server


def stored_tickets(folder: Path | str) -> list[dict[str, Any]]:
    """The tickets the tickets server has written to ``folder`` (each line one ticket), oldest first."""
    path = Path(folder) / TICKETS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tickets_server(folder: str) -> Any:
    """The SDK's decorator server with a non-idempotent, a destructive and a read-only tool."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("tickets")
    path = Path(folder) / TICKETS_FILE

    def append(entry: dict[str, Any]) -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")

    @server.tool()
    def open_ticket(title: str, request_key: str = "") -> dict[str, Any]:
        """Open a ticket with this title; returns its id."""
        ticket = {"event": "open", "id": f"T-{len(stored_tickets(folder)) + 1}", "title": title}
        append(ticket)
        return ticket

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def close_ticket(ticket_id: str) -> dict[str, Any]:
        """Close a ticket for good."""
        entry = {"event": "close", "id": ticket_id}
        append(entry)
        return entry

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def list_tickets() -> dict[str, Any]:
        """List every ticket event so far."""
        return {"events": stored_tickets(folder)}

    return server


def demo_server_command(argv: list[str] | None = None) -> int:
    """``naive --workspace DIR`` or ``tickets --folder DIR``: serve over stdio until stdin closes."""
    parser = argparse.ArgumentParser(prog="python course/worlds/demo_servers.py")
    commands = parser.add_subparsers(dest="which", required=True)
    commands.add_parser("naive").add_argument("--workspace", required=True)
    commands.add_parser("tickets").add_argument("--folder", required=True)
    args = parser.parse_args(argv)
    folder = args.workspace if args.which == "naive" else args.folder
    if not Path(folder).is_dir():
        print("error: the folder must exist", file=sys.stderr)
        return 2
    imported("mcp.server.mcpserver")   # the SDK's import, the collector paused, as the course's server
    server = naive_server(folder) if args.which == "naive" else tickets_server(folder)
    server.run()
    return 0


if __name__ == "__main__":
    from toolkit.mcp.__main__ import exit_promptly      # the same prompt exit as the course's server

    exit_promptly(demo_server_command())
