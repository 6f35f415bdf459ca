"""The course's host in front of an MCP server it does not control (toolkit.mcp.adoption, toolkit.mcp.remote).

A small SDK server (the tickets server: a non-idempotent open_ticket, a destructive close_ticket, a read-only
list_tickets) is driven through McpHost: undeclared arguments, missing permissions and failed preconditions never
reach the wire; a destructive or listed-risky tool asks for approval and runs only with a yes; a retried call
replays from the ledger instead of opening a second ticket; the server's hints only ever add a safeguard. The
chapter's side-by-side demonstration is checked on its own lines. Nothing is left running.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

mcp_types = pytest.importorskip("mcp.types")

from toolkit.kernel import Caller, Condition, Retry, Status, ToolFailure
from toolkit.kernel import MemoryLedger
from toolkit.mcp import McpConnection, McpHost, Trust, adopt_tool, remote_output  # noqa: E402
from course.worlds import (SECRET, guarded_tickets, naive_vs_contract, stored_tickets,  # noqa: E402
                           tickets_server_command)

from processes import live_children  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def listed(name, schema=None, **hints):
    annotations = mcp_types.ToolAnnotations(**hints) if hints else None
    return mcp_types.Tool(name=name, description=f"{name} tool",
                          input_schema=schema or {"type": "object", "properties": {"x": {"type": "string"}}},
                          annotations=annotations)


# ------------------------------------------------------------------ adoption: the host writes the contract
def test_an_adopted_schema_is_closed_and_kept_as_declared():
    contract = adopt_tool(listed("t"))
    assert contract.schema == {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": False}
    reopened = {"type": "object", "properties": {"x": {"type": "string"}},
                "additionalProperties": True, "patternProperties": {"^a": {}},
                "unevaluatedProperties": True}
    assert adopt_tool(listed("t", reopened)).schema == contract.schema, "nothing listed reopens it"


def test_hints_only_add_safeguards():
    destructive = adopt_tool(listed("wipe", destructive_hint=True))
    assert destructive.needs_approval and not destructive.reversible
    claims_read_only = adopt_tool(listed("wipe", read_only_hint=True, idempotent_hint=True, destructive_hint=False),
                                  Trust(risky=frozenset({"wipe"})))
    assert claims_read_only.needs_approval, "a host's risky list wins over the server's readOnlyHint"
    assert claims_read_only.retry is Retry.UNSAFE, "an untrusted idempotentHint does not lift the ledger"
    assert adopt_tool(listed("ls"), Trust(repeatable=frozenset({"ls"}))).retry is Retry.SAFE
    keyed = adopt_tool(listed("pay"), Trust(idempotency_fields={"pay": "key"}))
    assert (keyed.retry, keyed.idempotency_field) == (Retry.SAFE_WITH_KEY, "key")


@pytest.mark.parametrize("schema, why", [
    ({"type": "array"}, "not an object schema"),
    ({"type": "object", "properties": {"x": {"type": "string", "pattern": "(?P<x>a)"}}}, "cannot be enforced"),
    ({"type": "object", "properties": {"x": {"type": 12}}}, "cannot be enforced"),
])
def test_a_schema_the_host_cannot_enforce_is_not_adopted(schema, why):
    tool = mcp_types.Tool.model_construct(name="odd", description="", input_schema=schema, annotations=None)
    reason = adopt_tool(tool)
    assert isinstance(reason, str) and why in reason


def test_a_remote_error_is_a_failed_call_and_structured_content_is_the_output():
    error = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="disk on fire " * 50)],
                                     is_error=True)
    with pytest.raises(ToolFailure) as raised:
        remote_output(error)
    assert raised.value.status is Status.FAILED and len(raised.value.error.message) < 260
    ok = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="{}")],
                                  structured_content={"id": "T-1"})
    assert remote_output(ok) == {"id": "T-1"}
    text_only = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="hello")])
    assert remote_output(text_only) == {"text": "hello"}


# ------------------------------------------------------------------ the host over a real SDK server
@pytest.fixture
def tickets(tmp_path):
    before = live_children()
    with McpConnection.stdio(tickets_server_command(tmp_path), cwd=str(ROOT)) as server:
        yield server, tmp_path
    assert live_children() == before
    assert not [t for t in threading.enumerate() if t.name == "mcp-client"]


def test_approval_is_asked_for_the_destructive_tool(tickets):
    server, folder = tickets
    asked = []
    host = McpHost(server, approve=lambda call, contract: asked.append(call.call_id) or call.call_id == "yes")
    declined = host.call("close_ticket", {"ticket_id": "T-9"}, call_id="no")
    assert declined.status is Status.REJECTED and declined.errors[0].code == "approval_required"
    assert host.sent == [] and stored_tickets(folder) == []
    approved = host.call("close_ticket", {"ticket_id": "T-9"}, call_id="yes")
    assert approved.ok and approved.output["event"] == "close"
    assert asked == ["no", "yes"] and host.sent == ["close_ticket"]
    assert [line.rsplit(": ", 1)[1] for line in host.asked] == ["declined", "approved"]
    assert McpHost(server).call("close_ticket", {"ticket_id": "T-9"}).errors[0].code == "approval_required"



def test_an_approval_covers_one_call_and_is_not_kept_for_the_next(tickets):
    """A person said yes to one call; a later call that reuses its id is asked about again, not let through."""
    server, folder = tickets
    answers = iter([True, False])
    host = McpHost(server, Trust(repeatable=frozenset({"close_ticket"})), approve=lambda call, contract: next(answers))
    first = host.call("close_ticket", {"ticket_id": "T-9"}, call_id="c1")
    assert first.ok and len(host.asked) == 1
    assert "c1" not in host.host.caller.approved, "the approval was written onto the host's caller"
    again = host.call("close_ticket", {"ticket_id": "T-10"}, call_id="c1")
    assert len(host.asked) == 2 and again.errors[0].code == "approval_required"
    assert host.sent == ["close_ticket"]

def test_a_listed_risky_tool_asks_even_when_the_server_says_read_only(tickets):
    server, _ = tickets
    host = McpHost(server, Trust(risky=frozenset({"list_tickets"})), approve=lambda call, contract: False)
    result = host.call("list_tickets", {})
    assert result.errors[0].code == "approval_required" and host.sent == [] and len(host.asked) == 1


def test_a_retry_with_the_same_key_replays_one_ticket(tickets):
    server, folder = tickets
    host = McpHost(server, Trust(idempotency_fields={"open_ticket": "request_key"}), ledger=MemoryLedger())
    first = host.call("open_ticket", {"title": "jam", "request_key": "k-1"}, call_id="c1")
    again = host.call("open_ticket", {"title": "jam", "request_key": "k-1"}, call_id="c2")
    assert first.ok and again.ok and again.call_id == "c2"
    assert again.output == first.output
    assert host.sent == ["open_ticket"]
    assert [e["event"] for e in stored_tickets(folder)] == ["open"]
    other = host.call("open_ticket", {"title": "other", "request_key": "k-1"}, call_id="c3")
    assert other.status is Status.REJECTED and other.errors[0].code == "idempotency_conflict"
    assert len(stored_tickets(folder)) == 1


def test_an_unsafe_tool_without_a_key_is_keyed_by_its_call_id(tickets):
    server, folder = tickets
    host = McpHost(server)
    assert host.contracts["open_ticket"].retry is Retry.UNSAFE
    host.call("open_ticket", {"title": "a"}, call_id="same")
    host.call("open_ticket", {"title": "a"}, call_id="same")
    host.call("open_ticket", {"title": "a"}, call_id="new")
    assert [t["id"] for t in stored_tickets(folder)] == ["T-1", "T-2"]


def test_refused_calls_never_reach_the_server(tickets):
    server, folder = tickets
    nonempty = Condition("title_given", "the title is not blank", lambda a, w: bool(str(a.get("title", "")).strip()),
                         field="title")
    trust = Trust(permissions={"open_ticket": ("tickets:write",)}, preconditions={"open_ticket": (nonempty,)})
    host = McpHost(server, trust, caller=Caller().with_scopes("tickets:write"))
    cases = {
        "unexpected_property": {"title": "x", "priority": "high"},
        "missing_required": {},
        "wrong_type": {"title": 7},
        "precondition_failed": {"title": "   "},
    }
    for code, arguments in cases.items():
        result = host.call("open_ticket", arguments)
        assert result.status is Status.REJECTED and result.errors[0].code == code, code
    assert host.call("open_tikcet", {"title": "x"}).errors[0].hint.startswith("did you mean open_ticket")
    unscoped = McpHost(server, trust).call("open_ticket", {"title": "x"})
    assert unscoped.errors[0].code == "not_authorized"
    assert host.sent == [] and stored_tickets(folder) == []
    assert host.call("open_ticket", {"title": "real"}).ok and host.sent == ["open_ticket"]


def test_every_call_goes_through_the_hosts_log(tickets):
    server, _ = tickets
    host = McpHost(server, approve=lambda call, contract: True)
    host.call("list_tickets", {})
    host.call("close_ticket", {"ticket_id": "T-1"})
    host.call("close_ticket", {"nope": 1})
    assert [(a.call.name, a.verdict.legal) for a in host.host.log] == [("list_tickets", 1), ("close_ticket", 1),
                                                                      ("close_ticket", 0)]


def test_a_connection_outside_its_with_block_refuses_calls(tmp_path):
    connection = McpConnection.stdio(tickets_server_command(tmp_path))
    with pytest.raises(RuntimeError, match="with block"):
        connection.tools()


def test_a_server_that_cannot_start_is_one_connection_error(tmp_path):
    before = live_children()
    with pytest.raises(ConnectionError, match="did not start"):
        with McpConnection.stdio([os.sys.executable, "-c", "import sys; sys.exit(3)"]):
            pass
    assert live_children() == before


def test_a_started_server_boots_in_the_background_and_its_with_block_stops_it(tmp_path):
    before = live_children()
    connection = McpConnection.stdio(tickets_server_command(tmp_path)).start()
    with pytest.raises(RuntimeError, match="with block"):
        connection.tools()                                 # started is not yet usable: only inside its with block
    with connection as server:
        assert {t.name for t in server.tools()} == {"open_ticket", "close_ticket", "list_tickets"}
        with pytest.raises(RuntimeError, match="already open"):
            with connection:
                pass
        assert server.tools()                              # the failed nested entry left the session alone
    assert live_children() == before
    with connection as again:                              # a closed connection may be opened again
        assert again.tools()
    assert live_children() == before


def test_closing_a_started_connection_that_was_never_entered_stops_it(tmp_path):
    before = live_children()
    connection = McpConnection.stdio(tickets_server_command(tmp_path)).start()
    connection.close()
    connection.close()                                     # twice does nothing
    assert live_children() == before
    started = McpConnection.stdio(tickets_server_command(tmp_path)).start()
    with pytest.raises(RuntimeError, match="already open"):
        started.start()
    started.close()
    assert live_children() == before


# ------------------------------------------------------------------ the chapter's demonstrations
def test_naive_vs_contract_shows_the_leak_and_the_refusal(tmp_path):
    before = live_children()
    lines = naive_vs_contract(tmp_path)
    assert live_children() == before
    naive, course = lines[:3], lines[3:6]
    assert "isError=false" in naive[2] and "PLANTED-SECRET" in naive[2] and "../secret.txt" in naive[2]
    assert "isError=true" in course[2] and "refused by auth_ok: path_refused at $.path" in course[2]
    assert lines[-2:] == ["naive server: LEAKED the planted secret", "course server: kept the secret out"]
    assert str(tmp_path) not in "\n".join(lines)
    assert (tmp_path / "secret.txt").read_text(encoding="utf-8").strip() == SECRET


def test_guarded_tickets_counts_one_ticket_and_asks_before_closing(tmp_path):
    lines = guarded_tickets(tmp_path)
    text = "\n".join(lines)
    assert "tools/call sent: 2 (open_ticket, close_ticket)" in text
    assert lines[-1] == "in the server's file: 1 opened, 1 closed"
    assert "rejected: unexpected_property" in text and "rejected: approval_required" in text
    assert guarded_tickets(tmp_path) == lines, "the same lines every run"


def test_the_host_in_front_of_the_courses_own_server(tmp_path):
    """Both directions at once: a refusal from the far side comes back as a failed call with the server's line."""
    from course.worlds import course_server_command, plant_secret

    workspace = plant_secret(tmp_path)
    before = live_children()
    with McpConnection.stdio(course_server_command(workspace), cwd=str(ROOT)) as server:
        host = McpHost(server, Trust(repeatable=frozenset({"read_file"})))
        good = host.call("read_file", {"path": "notes.txt"})
        refused = host.call("read_file", {"path": "../secret.txt"})
        unexpected = host.call("read_file", {"path": "notes.txt", "owner": "me"})
        assert server.server_log() == "" or "Traceback" not in server.server_log()
    assert live_children() == before
    assert good.ok and good.output["output"]["content"] == "notes inside the workspace\n"
    assert refused.status is Status.FAILED and "path_refused at $.path" in refused.errors[0].message
    assert SECRET not in repr(refused)
    assert unexpected.errors[0].code == "unexpected_property" and host.sent == ["read_file", "read_file"]


def test_a_connection_can_be_opened_again_after_closing(tmp_path):
    connection = McpConnection.stdio(tickets_server_command(tmp_path), cwd=str(ROOT))
    for _ in range(2):
        with connection as server:
            assert sorted(t.name for t in server.tools()) == ["close_ticket", "list_tickets", "open_ticket"]
            with pytest.raises(RuntimeError, match="already open"):
                connection.__enter__()
    with pytest.raises(RuntimeError, match="with block"):
        connection.call("list_tickets", {})
