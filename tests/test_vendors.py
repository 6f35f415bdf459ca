"""Vendor formats: contracts rendered three ways, calls read and results written back, ids never crossed."""
import copy
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolkit as tk
import toolkit.kernel as tk_kernel
import toolkit.wire as v
from course.worlds import CREATE_INVOICE
from toolkit.wire import anthropic_stream, openai_stream
from course.worlds import fixture, fixture_names
from toolkit._ids import IdMap
from toolkit.kernel import Refusal

WRITE_SCHEMA = {"type": "object",
                "properties": {"path": {"type": "string", "description": "A path relative to the workspace."},
                               "content": {"type": "string", "description": "The complete new text of the file."}},
                "required": ["path", "content"], "additionalProperties": False}
READ_SCHEMA = {"type": "object",
               "properties": {"path": {"type": "string", "description": "A path relative to the workspace."}},
               "required": ["path"], "additionalProperties": False}
READ_FILE = tk.Contract("read_file", "Read a UTF-8 text file inside the workspace and return its text.",
                        READ_SCHEMA, reads=("file:{path}",), extras={"title": "Read file", "open_world": False})
WRITE_FILE = tk.Contract("write_file", "Replace the text of a file inside the workspace.", WRITE_SCHEMA,
                         permissions=("workspace.write",), writes=("file:{path}",), reversible=False,
                         retry=tk.Retry.SAFE, extras={"title": "Write file", "open_world": False})
FILES = {"src/config.ts": "export const port = 8080;\n", "src/routes.ts": 'export const routes = ["/", "/health"];\n'}
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def host():
    """The fixtures' world: two files, and a caller who may read but not write."""
    files = dict(FILES)

    def write(args, world):
        files[args["path"]] = args["content"]
        return {"path": args["path"], "bytes": len(args["content"].encode())}

    tools = [tk.Tool(READ_FILE, lambda a, w: {"path": a["path"], "text": files[a["path"]]}), tk.Tool(WRITE_FILE, write)]
    return tk.Host.of(tools, tk.Caller("assistant")), files


# ---------------------------------------------------------------- rendering
def test_rendered_tools_match_the_recorded_requests():
    assert fixture("openai_request.json")["tools"] == [v.openai_tool(READ_FILE, strict=True),
                                                       v.openai_tool(WRITE_FILE, strict=True)]
    assert fixture("anthropic_request.json")["tools"] == v.tools_for("anthropic", [READ_FILE, WRITE_FILE])
    assert fixture("mcp_tools_list_response.json")["result"]["tools"] == v.tools_for("mcp", [READ_FILE, WRITE_FILE])


def test_vendor_tool_shapes():
    openai = v.openai_tool(CREATE_INVOICE)
    assert set(openai) == {"type", "function"} and openai["type"] == "function"
    assert set(openai["function"]) == {"name", "description", "parameters"}       # strict only on request
    assert openai["function"]["parameters"] == CREATE_INVOICE.schema
    assert set(v.anthropic_tool(CREATE_INVOICE)) == {"name", "description", "input_schema"}
    mcp = v.mcp_tool(CREATE_INVOICE)
    assert "title" not in mcp and mcp["inputSchema"] == CREATE_INVOICE.schema


def test_strict_mode_refuses_an_open_or_optional_schema():
    loose = tk.Contract("search", "Search.", {"type": "object", "properties": {"q": {"type": "string"},
                                                                             "limit": {"type": "integer"}},
                                              "required": ["q"]})
    with pytest.raises(ValueError, match="additionalProperties.*missing limit"):
        v.openai_tool(loose, strict=True)
    assert v.openai_tool(CREATE_INVOICE, strict=True)["function"]["strict"] is True


@pytest.mark.parametrize("contract, hints", [
    (READ_FILE, {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}),
    (WRITE_FILE, {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}),
    # an invoice cannot be undone, but the same arguments (same idempotency key) add nothing
    (CREATE_INVOICE, {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}),
    (tk.Contract("send_message", "Send.", {"type": "object"}, writes=("chat:{to}",), reversible=False,
                 retry=tk.Retry.UNSAFE, extras={"open_world": True}),
     {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}),
    (tk.Contract("append_note", "Append.", {"type": "object"}, writes=("note:{id}",), retry=tk.Retry.UNSAFE),
     {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}),
])
def test_mcp_hints_follow_the_contract(contract, hints):
    assert v.mcp_annotations(contract) == hints


def test_unknown_vendor_is_refused():
    with pytest.raises(ValueError):
        v.tools_for("acme", [READ_FILE])


# ------------------------------------------------------------- round trips
def test_openai_round_trip_reproduces_the_recorded_follow_up():
    response, follow_up = fixture("openai_response.json"), fixture("openai_followup.json")
    ids = IdMap()
    calls = v.openai_calls(response, ids)
    assert all(isinstance(c, tk.ToolCall) for c in calls)
    assert [c.call_id for c in calls] == ["call_1", "call_2", "call_3"]          # internal ids
    h, files = host()
    results = h.run_round(calls)
    assert [r.status.value for r in results] == ["succeeded", "succeeded", "rejected"]
    assert files == FILES                                                         # the refused write changed nothing
    history = follow_up["messages"][:3] + v.openai_tool_messages(results, ids)
    assert history == follow_up["messages"]
    assert v.check_conversation(history, "openai") == []
    # the assistant message we would echo carries the same calls under the same vendor ids
    echoed = v.openai_assistant_message(calls, ids)["tool_calls"]
    recorded = response["choices"][0]["message"]["tool_calls"]
    assert [(e["id"], e["function"]["name"], json.loads(e["function"]["arguments"])) for e in echoed] == \
           [(r["id"], r["function"]["name"], json.loads(r["function"]["arguments"])) for r in recorded]


def test_anthropic_round_trip_reproduces_the_recorded_follow_up():
    message, follow_up = fixture("anthropic_response.json"), fixture("anthropic_followup.json")
    ids = IdMap()
    calls = v.anthropic_calls(message, ids)
    h, _ = host()
    reply = v.anthropic_tool_results(h.run_round(calls), ids)
    assert follow_up["messages"][2] == reply
    assert [b["is_error"] for b in reply["content"]] == [False, False, True]
    tool_blocks = [b for b in message["content"] if b["type"] == "tool_use"]
    assert v.anthropic_assistant_message(calls, ids)["content"] == tool_blocks
    assert v.check_conversation(follow_up["messages"], "anthropic") == []


def test_mcp_round_trip_reproduces_the_recorded_responses():
    ids = IdMap()
    h, _ = host()
    call = v.mcp_call(fixture("mcp_tools_call_request.json"), ids)
    assert isinstance(call, tk.ToolCall) and ids.external(call.call_id, "mcp") == 7
    assert v.mcp_response(h.execute(call), ids) == fixture("mcp_tools_call_response.json")
    assert v.mcp_request(call, ids) == fixture("mcp_tools_call_request.json")
    unknown = v.mcp_call(fixture("mcp_unknown_tool_request.json"), ids)
    answer = v.mcp_response(h.execute(unknown), ids)
    assert answer == fixture("mcp_unknown_tool_response.json")
    assert answer["error"]["code"] == -32602 and answer["id"] == "req-8"


def test_streams_and_whole_responses_give_the_same_calls():
    def shape(calls):
        return [(c.name, c.arguments) for c in calls]

    assert shape(openai_stream(fixture("openai_stream.txt"))) == shape(v.openai_calls(fixture("openai_response.json"),
                                                                                       IdMap()))
    assert shape(anthropic_stream(fixture("anthropic_stream.txt"))) == shape(
        v.anthropic_calls(fixture("anthropic_response.json"), IdMap()))


def test_result_text_shows_the_vendor_id_not_the_internal_one():
    messages = fixture("openai_followup.json")["messages"]
    for message in messages[3:]:
        assert json.loads(message["content"])["call_id"] == message["tool_call_id"]


# ---------------------------------------------------------- conversation check
def test_a_call_without_a_result_is_found():
    messages = copy.deepcopy(fixture("openai_followup.json")["messages"])
    del messages[5]                                            # drop the rejected write's result
    [error] = v.check_conversation(messages, "openai")
    assert error.code == "missing_result" and "call_C3rS5tU7vW9xY1zA3bC5dE7f" in error.message


def test_duplicate_and_orphan_results_are_found():
    messages = copy.deepcopy(fixture("openai_followup.json")["messages"])
    messages.append(copy.deepcopy(messages[3]))
    messages[4]["tool_call_id"] = "call_someone_else"
    codes = sorted(e.code for e in v.check_conversation(messages, "openai"))
    assert codes == ["duplicate_result", "missing_result", "orphan_result"]


def test_a_conversation_and_gathered_results_are_paired_by_one_rule():
    ids = IdMap()
    calls = v.openai_calls(fixture("openai_response.json"), ids)
    first, second, third = (c.call_id for c in calls)
    results = [tk.ToolResult(i, tk.Status.SUCCEEDED) for i in (second, second, "call_nobody")]
    history = [fixture("openai_response.json")["choices"][0]["message"], *v.openai_tool_messages(results[:2], ids),
               {"role": "tool", "tool_call_id": "call_nobody", "content": "{}"}]
    _, gathered = v.pair_results(calls, results)
    in_history = v.check_conversation(history, "openai")
    assert [e.code for e in gathered] == [e.code for e in in_history] == [
        "duplicate_result", "orphan_result", "missing_result", "missing_result"]
    assert [e.message for e in gathered][2:] == [f"call {first!r} has no result", f"call {third!r} has no result"]
    assert gathered[1].message == in_history[1].message == "result for 'call_nobody' answers no call"


def test_anthropic_results_must_come_in_the_next_user_turn():
    messages = copy.deepcopy(fixture("anthropic_followup.json")["messages"])
    late = messages.pop(2)
    messages += [{"role": "user", "content": "any news?"}, late]
    codes = sorted(e.code for e in v.check_conversation(messages, "anthropic"))
    assert codes == ["missing_result"] * 3 + ["orphan_result"] * 3


def test_mcp_conversation_check():
    request, response = fixture("mcp_tools_call_request.json"), fixture("mcp_tools_call_response.json")
    assert v.check_conversation([request, response], "mcp") == []
    [error] = v.check_conversation([request, fixture("mcp_unknown_tool_request.json"), response], "mcp")
    assert error.code == "missing_result" and '"req-8"' in error.message
    assert v.check_conversation([request, {**response, "id": "7"}], "mcp")   # "7" is not 7 in JSON-RPC


def test_every_call_gets_exactly_one_result_rejected_and_cancelled_too():
    ids = IdMap()
    calls = v.openai_calls(fixture("openai_response.json"), ids)
    results = [tk.ToolResult(calls[0].call_id, tk.Status.SUCCEEDED, output={"text": "x"}),
               tk.ToolResult(calls[1].call_id, tk.Status.CANCELLED, reason="cancelled"),
               tk.ToolResult(calls[2].call_id, tk.Status.REJECTED, reason="not_authorized")]
    history = [fixture("openai_response.json")["choices"][0]["message"], *v.openai_tool_messages(results, ids)]
    assert v.check_conversation(history, "openai") == []
    blocks = v.anthropic_tool_results(results, ids)["content"]
    assert [b["is_error"] for b in blocks] == [False, True, True]
    assert [json.loads(b["content"])["status"] for b in blocks] == ["succeeded", "cancelled", "rejected"]


# ------------------------------------------------------------------- ids
def test_id_map_is_stable_and_translates_both_ways():
    ids = IdMap()
    first = ids.internal("openai", "call_abc")
    assert ids.internal("openai", "call_abc") == first                      # same answer every time
    assert ids.internal("anthropic", "call_abc") != first                   # another vendor's id space
    assert ids.external(first, "openai") == "call_abc"
    assert ids.rows()[0] == {"call_id": first, "vendor": "openai", "vendor_id": "call_abc"}
    with pytest.raises(KeyError):
        ids.external("call_999", "openai")


def test_an_id_another_vendor_refuses_is_mapped_to_one_it_accepts():
    ids = IdMap()
    [call] = openai_stream(fixture("openai_stream_repeats.txt"), ids)
    assert ids.external(call.call_id, "openai") == "functions.read_file:0"
    assert v.id_problem("anthropic", "functions.read_file:0")                 # Anthropic would reject it
    moved = v.anthropic_assistant_message([call], ids)["content"][0]["id"]
    assert ANTHROPIC_ID.match(moved)
    # a result Anthropic sends back under the moved id finds the same call
    assert ids.internal("anthropic", moved) == call.call_id


def test_id_rules():
    assert v.id_problem("mcp", 3) is None and v.id_problem("mcp", "a") is None
    assert v.id_problem("mcp", True) and v.id_problem("mcp", None) and v.id_problem("mcp", 1.5)
    assert v.id_problem("openai", "") and v.id_problem("anthropic", "toolu_01A\n")
    with pytest.raises(ValueError):
        IdMap(prefix="call.x")


# ------------------------------------------------------------- bad input
def test_bad_openai_calls_become_refusals():
    response = copy.deepcopy(fixture("openai_response.json"))
    tool_calls = response["choices"][0]["message"]["tool_calls"]
    tool_calls[0]["function"]["arguments"] = '{"path": "src/config.ts"'             # cut
    tool_calls[1]["function"]["name"] = ""
    tool_calls[2]["function"]["arguments"] = '{"path": "a", "path": "b"}'
    ids = IdMap()
    out = v.openai_calls(response, ids)
    assert [o.code for o in out] == ["invalid_json", "invalid_call", "invalid_json"]
    assert [o.result.call_id for o in out] == ["call_1", "call_2", "call_3"]       # each still answerable


def test_a_cut_openai_response_refuses_every_call():
    response = copy.deepcopy(fixture("openai_response.json"))
    response["choices"][0]["finish_reason"] = "length"
    out = v.openai_calls(response, IdMap())
    assert len(out) == 3 and {o.code for o in out} == {"response_incomplete"}


def test_a_max_tokens_anthropic_response_refuses_every_call():
    message = {**fixture("anthropic_response.json"), "stop_reason": "max_tokens"}
    assert {o.code for o in v.anthropic_calls(message, IdMap())} == {"response_incomplete"}


@pytest.mark.parametrize("reason", sorted(tk_kernel.CUT))
def test_every_cut_reason_refuses_whole_responses_and_streams_alike(reason):
    response = copy.deepcopy(fixture("openai_response.json"))
    response["choices"][0]["finish_reason"] = reason
    message = dict(fixture("anthropic_response.json"), stop_reason=reason)
    stream = tk.kernel.Assembler()
    stream.add(0, call_id="c1", name="read_file", arguments='{"path": "src/config.ts"}')
    for outcome in (v.openai_calls(response, IdMap()), v.anthropic_calls(message, IdMap()), stream.finish(reason)):
        assert outcome and all(isinstance(o, Refusal) for o in outcome), reason


def test_calls_sharing_an_id_are_all_refused_with_one_result():
    response = copy.deepcopy(fixture("openai_response.json"))
    tool_calls = response["choices"][0]["message"]["tool_calls"]
    tool_calls[1]["id"] = tool_calls[0]["id"]
    out = v.openai_calls(response, IdMap())
    assert [type(o).__name__ for o in out] == ["Refusal", "Refusal", "ToolCall"]
    assert out[0].code == "duplicate_call_id" and out[0].result is not None
    assert out[1].result is None          # the first refusal already answers the shared id


@pytest.mark.parametrize("response", [None, "text", {"choices": []}, {"choices": [{"message": 3}]},
                                      {"role": "assistant", "tool_calls": "read_file"},
                                      {"role": "assistant", "tool_calls": [{"id": "x"}, 7]}])
def test_malformed_openai_responses_never_raise(response):
    out = v.openai_calls(response, IdMap())
    assert out and all(isinstance(o, Refusal) for o in out)


@pytest.mark.parametrize("message", [None, {"content": "hello"},
                                     {"content": [{"type": "tool_use", "id": "bad id!", "name": "read_file",
                                                   "input": {"path": "a"}}]},
                                     {"content": [{"type": "tool_use", "id": "toolu_1", "input": []}]}])
def test_malformed_anthropic_messages_never_raise(message):
    out = v.anthropic_calls(message, IdMap())
    assert out and all(isinstance(o, Refusal) for o in out)


@pytest.mark.parametrize("request_, code", [
    ({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "read_file", "arguments": {}}}, "invalid_call"),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "invalid_call"),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_file", "arguments": ["a"]}},
     "not_an_object"),
    ({"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {"name": "read_file"}}, "invalid_call"),
    ([1, 2], "invalid_call"),
])
def test_malformed_mcp_requests_are_refused(request_, code):
    out = v.mcp_call(request_, IdMap())
    assert isinstance(out, Refusal) and out.code == code


def test_fixture_loader_only_opens_fixtures():
    assert "openai_stream.txt" in fixture_names()
    with pytest.raises(ValueError):
        fixture("../vendors.py")


# ------------------------------------------------------------------ fuzzing
JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                       lambda inner: st.lists(inner, max_size=3) |
                       st.dictionaries(st.sampled_from(["id", "type", "name", "input", "content", "role", "function",
                                                        "arguments", "tool_calls", "tool_call_id", "tool_use_id",
                                                        "choices", "message", "finish_reason", "stop_reason",
                                                        "jsonrpc", "method", "params", "result"]), inner, max_size=5),
                       max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=JSONISH)
def test_readers_and_checker_never_raise_on_any_json(value):
    ids = IdMap()
    for read in (v.openai_calls, v.anthropic_calls):
        out = read(value, ids)
        assert all(isinstance(o, (tk.ToolCall, Refusal)) for o in out)
    assert isinstance(v.mcp_call(value, ids), (tk.ToolCall, Refusal))
    for vendor in v.VENDORS:
        messages = value if isinstance(value, list) else [value]
        assert all(isinstance(e, tk.ToolError) for e in v.check_conversation(messages, vendor))


# ------------------------------------------- refused calls echoed with their raw arguments (issue 10, "Also fix")
def _openai_response(arguments):
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
            "tool_calls": [{"id": "call_good", "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": "src/config.ts"}'}},
                           {"id": "call_bad", "type": "function",
                            "function": {"name": "read_file", "arguments": arguments}}]}}]}


def test_a_call_refused_while_parsing_keeps_its_raw_arguments_and_is_echoed_with_them():
    ids = IdMap()
    items = v.openai_calls(_openai_response('{"path": "src/co'), ids)
    assert isinstance(items[0], tk.ToolCall) and isinstance(items[1], Refusal)
    assert items[1].arguments == '{"path": "src/co'
    echoed = v.openai_assistant_message(items, ids)["tool_calls"]
    assert [(e["id"], e["function"]["arguments"]) for e in echoed] == [
        ("call_good", '{"path": "src/config.ts"}'), ("call_bad", '{"path": "src/co')]
    results = [host()[0].execute(items[0]), items[1].result]
    history = [{"role": "user", "content": "read"}, v.openai_assistant_message(items, ids),
               *v.openai_tool_messages(results, ids)]
    assert v.check_conversation(history, "openai") == []          # no orphan result, no unanswered call


def test_the_anthropic_writer_keeps_unparseable_arguments_instead_of_emptying_them():
    ids = IdMap()
    refusal = v.openai_calls(_openai_response("{not json"), ids)[1]
    block = v.anthropic_assistant_message([refusal], ids)["content"][0]
    assert block["input"] == {"unparsed_arguments": "{not json"}
    good = v.openai_calls(_openai_response('{"path": "a"}'), ids)[1]
    assert v.anthropic_assistant_message([good], ids)["content"][0]["input"] == {"path": "a"}
    # the OpenAI writer keeps the same text as it came
    assert v.openai_assistant_message([refusal], ids)["tool_calls"][0]["function"]["arguments"] == "{not json"


def test_an_assistant_message_without_calls_has_no_empty_tool_calls_list():
    ids = IdMap()
    assert v.openai_assistant_message([], ids) == {"role": "assistant", "content": ""}
    assert v.openai_assistant_message([], ids, content="done") == {"role": "assistant", "content": "done"}
    assert v.anthropic_assistant_message([], ids, content="done") == {
        "role": "assistant", "content": [{"type": "text", "text": "done"}]}
    # a refusal with no id to answer is not echoed (it has no result either)
    orphan = Refusal(None, "read_file", (tk.ToolError("invalid_call", "$", "no id"),), arguments="{}")
    assert "tool_calls" not in v.openai_assistant_message([orphan], ids)
