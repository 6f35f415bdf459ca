"""Chapter 09: the command that serves the course's file tools over MCP on stdin/stdout.

    python -m toolkit.mcp serve --workspace DIR [--tools read_file,edit_file,inspect_exports]

Exit 2 with one line on stderr when the workspace is not a folder or a tool name is unknown."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path


def serve_command(argv: list[str] | None = None) -> int:
    """Parse the command line and serve until the client closes stdin; the exit status."""
    from toolkit.mcp import CATALOG, serve_stdio

    parser = argparse.ArgumentParser(prog="python -m toolkit.mcp", description="The course's tools over MCP (stdio).")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the course's file tools over stdio")
    serve.add_argument("--workspace", required=True, help="the folder the tools may read (and edit)")
    serve.add_argument("--tools", default="read_file", help=f"comma-separated, from: {','.join(CATALOG)}")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.tools.split(",") if n.strip()]
    unknown = [n for n in names if n not in CATALOG]
    if unknown or not names:
        print(f"error: unknown tools {unknown or names}; choose from {', '.join(CATALOG)}", file=sys.stderr)
        return 2
    if not Path(args.workspace).is_dir():
        print("error: --workspace must name an existing folder", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        serve_stdio(args.workspace, names)
    return 0


__all__: list[str] = []   # a command, not a library: nothing to import from here

def exit_promptly(status: int) -> None:
    """End this server process at once with ``status``: the client waits for the exit when it closes.

    The interpreter's teardown after the MCP SDK takes about 0.1 s, and a served process has nothing
    left to finish (files closed, the log in memory, output flushed here). Only the command does
    this."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_promptly(serve_command())
