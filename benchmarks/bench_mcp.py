"""An MCP round trip through the course's server against the SDK's own decorator server with a plain function.

Both servers run as stdio processes started by the official client (``stdio_client`` + ``ClientSession``):
``python -m toolkit.mcp serve`` (the contract host: schema, path test, precondition, confined read, postcondition,
a ``ToolResult`` as ``structuredContent``) and ``python course/worlds/demo_servers.py naive`` (the SDK's
``MCPServer`` with a plain ``def read_file(path: str)``). Each answers ``read_file`` on the same 1 KB file;
the calls alternate between the two sessions (after 5 warm-up calls each), 50 timed calls each, and the medians
are compared. That is done in 5 rounds over the same sessions; the round with the median ratio is reported,
with the spread of the five, so one round disturbed by another process on the machine does not decide.
Aim: at most 1.3x.

    python benchmarks/bench_mcp.py
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AIM = 1.3
CALLS = 50
WARMUP = 5
ROUNDS = 5


async def measure(workspace: Path) -> list[dict[str, list[float]]]:
    from contextlib import AsyncExitStack

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from course.worlds import course_server_command, naive_server_command

    commands = {"course": course_server_command(workspace), "plain": naive_server_command(workspace)}
    rounds: list[dict[str, list[float]]] = []
    async with AsyncExitStack() as stack:
        sessions = {}
        for name, command in commands.items():
            params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT))
            read, write = await stack.enter_async_context(stdio_client(params))
            sessions[name] = await stack.enter_async_context(ClientSession(read, write))
            await sessions[name].initialize()
        for _ in range(ROUNDS):
            timings: dict[str, list[float]] = {name: [] for name in commands}
            for call in range(WARMUP + CALLS):
                for name, session in sessions.items():
                    start = time.perf_counter()
                    answer = await session.call_tool("read_file", {"path": "notes.txt"})
                    elapsed = time.perf_counter() - start
                    assert not answer.is_error, (name, answer)
                    if call >= WARMUP:
                        timings[name].append(elapsed)
            rounds.append(timings)
    return rounds


def main() -> int:
    import anyio

    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "workspace"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("x" * 1023 + "\n", encoding="utf-8")
        rounds = anyio.run(measure, workspace)
    medians = [(statistics.median(r["course"]), statistics.median(r["plain"])) for r in rounds]
    ratios = [course / plain for course, plain in medians]
    course, plain = medians[ratios.index(statistics.median(ratios))]
    ratio = course / plain
    print(f"course server (python -m toolkit.mcp serve): median {course * 1000:.2f} ms over {CALLS} read_file calls")
    print(f"SDK decorator server, plain function:        median {plain * 1000:.2f} ms over {CALLS} read_file calls")
    print(f"ratio per round: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"RESULT mcp_round_trip_vs_plain_server {ratio:.2f} aim<={AIM} {'ok' if ratio <= AIM else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
