"""One id rule for every round: two calls sharing an id are both refused, by every runner, with one message.

Results are paired with their calls by id, so two calls sending the same id could never be told apart: the host's
``run_round``, the scheduler and ``toolkit.wire.run_round``, the stream assembler, the vendor readers and the MCP
host all refuse both, and none of them runs either call.
"""
from __future__ import annotations

import pytest

import toolkit as tk
import toolkit.wire as wire
from toolkit._ids import duplicate_call_id_error

mcp_types = pytest.importorskip("mcp.types")

from toolkit.mcp import McpHost  # noqa: E402

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
          "additionalProperties": False}
READ = tk.Contract("read_file", "Read a file.", SCHEMA, reads=("file:{path}",))
SHARED = [tk.request("read_file", {"path": "a"}, "same"), tk.request("read_file", {"path": "b"}, "same")]


class Listing:
    """An MCP connection stand-in listing one read-only tool and counting the calls that reach it."""

    def __init__(self):
        self.called = []

    def tools(self):
        return [mcp_types.Tool(name="read_file", description="Read a file.", input_schema=SCHEMA,
                               annotations=mcp_types.ToolAnnotations(readOnlyHint=True))]

    def call(self, name, arguments):
        self.called.append(arguments)
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="ok")])


def verdicts(results):
    return [(r.call_id, r.status.value, r.reason) for r in results]


def test_every_runner_refuses_both_calls_sharing_an_id():
    ran = []
    host = tk.Host.of([tk.Tool(READ, lambda arguments, world: ran.append(arguments["path"]) or {"content": ""})])
    expected = [("same", "rejected", "duplicate_call_id")] * 2
    assert verdicts(host.run_round(SHARED)) == expected
    assert verdicts(wire.run_round(SHARED, host).results) == expected
    assert verdicts(r for _, r in tk.schedule(SHARED, host).refused) == expected
    listing = Listing()
    assert verdicts(McpHost(listing).run_round(SHARED)) == expected
    assert ran == [] and listing.called == []
    stream = tk.kernel.Assembler()
    for index in (0, 1):
        stream.add(index, call_id="same", name="read_file", arguments='{"path": "a"}')
    refused = stream.finish("tool_calls")
    assert [r.code for r in refused] == ["duplicate_call_id"] * 2 and refused[1].call_id is None  # one answer


def test_the_refusal_for_a_shared_id_is_one_message_everywhere():
    host = tk.Host.of([tk.Tool(READ, lambda arguments, world: {"content": ""})])
    stream = tk.kernel.Assembler()
    for index in (0, 1):
        stream.add(index, call_id="same", name="read_file", arguments='{"path": "a"}')
    messages = {host.run_round(SHARED)[0].errors[0].message, wire.run_round(SHARED, host).results[1].errors[0].message,
                stream.finish("tool_calls")[0].errors[-1].message}
    assert messages == {duplicate_call_id_error("same").message}
