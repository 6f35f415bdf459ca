"""Chapter 09: what the course writes, checked against the SDKs' own types; the SDK stream helpers beside the
assembler; tools declared from typed functions."""
from __future__ import annotations

import json
from typing import Literal, get_type_hints

import pytest
from pydantic import BaseModel, TypeAdapter

import toolkit as tk
import toolkit.kernel as tk_kernel
import toolkit.wire as v
from course.worlds import contract_tool, helper_contrast
from toolkit.live import chat_for, recording, recording_names, replay_server, run_task, sse_body
from toolkit.wire import strict_problems
from course.worlds import fixture
from toolkit._ids import IdMap

openai_chat = pytest.importorskip("openai.types.chat")
anthropic_types = pytest.importorskip("anthropic.types")

OPENAI_ROLES = {"assistant": openai_chat.ChatCompletionAssistantMessageParam,
                "tool": openai_chat.ChatCompletionToolMessageParam,
                "user": openai_chat.ChatCompletionUserMessageParam,
                "system": openai_chat.ChatCompletionSystemMessageParam}
ANTHROPIC_BLOCKS = {"text": anthropic_types.TextBlockParam, "tool_use": anthropic_types.ToolUseBlockParam,
                    "tool_result": anthropic_types.ToolResultBlockParam}


def closed(value: dict, typed: type) -> None:
    """``value`` validates as the TypedDict and has no key the TypedDict does not declare."""
    TypeAdapter(typed).validate_python(value)
    assert set(value) <= set(get_type_hints(typed)), (set(value) - set(get_type_hints(typed)), typed.__name__)


def openai_message_ok(message: dict) -> None:
    closed(message, OPENAI_ROLES[message["role"]])
    for call in message.get("tool_calls", []):
        closed(call, openai_chat.ChatCompletionMessageFunctionToolCallParam)
    assert message.get("tool_calls", None) != []


def anthropic_message_ok(message: dict) -> None:
    TypeAdapter(anthropic_types.MessageParam).validate_python(message)
    closed(message, {"user": anthropic_types.UserMessageParam,
                     "assistant": anthropic_types.AssistantMessageParam}[message["role"]])
    for block in message["content"] if isinstance(message["content"], list) else []:
        closed(block, ANTHROPIC_BLOCKS[block["type"]])


def items_of(vendor: str):
    """Calls and refusals of every kind the readers produce: good, unparseable, cut, reused id."""
    ids = IdMap()
    good = fixture("openai_response.json") if vendor == "openai" else fixture("anthropic_response.json")
    read = v.openai_calls if vendor == "openai" else v.anthropic_calls
    items = list(read(good, ids))
    if vendor == "openai":
        bad = json.loads(json.dumps(good))
        bad["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"path": "src/co'
        bad["choices"][0]["message"]["tool_calls"][1]["id"] = bad["choices"][0]["message"]["tool_calls"][2]["id"]
        items += read(bad, ids)
    else:
        items += v.anthropic_stream(fixture("anthropic_stream_max_tokens.txt"), ids)
    return items, ids


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_every_message_the_adapters_write_is_a_valid_sdk_message(vendor):
    items, ids = items_of(vendor)
    host = tk.Host.of([tk.Tool(tk.Contract(n, "", {"type": "object"}), lambda a, w: {"ok": True})
                       for n in ("read_file", "write_file")])
    results = [i.result if isinstance(i, tk_kernel.Refusal) else host.execute(i) for i in items]
    results = [r for r in results if r is not None]
    assert any(isinstance(i, tk_kernel.Refusal) for i in items) and results
    if vendor == "openai":
        for message in [v.openai_assistant_message(items, ids), v.openai_assistant_message([], ids),
                        v.openai_assistant_message(items, ids, content="text"), *v.openai_tool_messages(results, ids)]:
            openai_message_ok(message)
        for tool in v.tools_for("openai", [c.contract for c in host.tools.values()]):
            closed(tool, openai_chat.ChatCompletionFunctionToolParam)
    else:
        for message in [v.anthropic_assistant_message(items, ids), v.anthropic_assistant_message([], ids, "done"),
                        v.anthropic_tool_results(results, ids)]:
            anthropic_message_ok(message)
        for tool in v.tools_for("anthropic", [c.contract for c in host.tools.values()]):
            closed(tool, anthropic_types.ToolParam)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
@pytest.mark.parametrize("name", ["hostile_path", "invoice_retry", "parallel_reads", "plain_read", "schema_repair"])
def test_every_request_the_host_sent_through_the_sdk_is_made_of_valid_messages(vendor, name, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_text("todo\n")
    (tmp_path / "notes" / "plan.md").write_text("plan\n")
    server = replay_server(name, vendor)
    host = tk.Host.of([tk.make_read_file(tmp_path)])
    run_task(chat_for(vendor, server.client(), "m", [t.contract for t in host.tools.values()], "task"), host)
    assert len(server.requests) == len(recording(name, vendor)["responses"])
    for request in server.requests:
        for message in request["messages"]:
            (openai_message_ok if vendor == "openai" else anthropic_message_ok)(message)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_every_streamed_recording_is_made_of_valid_sdk_events(vendor):
    adapter = TypeAdapter(openai_chat.ChatCompletionChunk if vendor == "openai"
                          else anthropic_types.RawMessageStreamEvent)
    bodies = [sse_body(vendor, b) for n in recording_names() for b in recording(n, vendor)["responses"]]
    bodies += [fixture(f"{vendor}_stream_cut.txt")]
    for body in bodies:
        for event in body.split("\n\n"):
            data = [line[6:] for line in event.splitlines() if line.startswith("data: ")]
            if data and data[0] != "[DONE]" and json.loads(data[0]).get("type") != "ping":
                adapter.validate_python(json.loads(data[0]))


def test_the_sdk_stream_helpers_hand_back_what_the_assembler_refuses():
    rows = {row["case"]: row for row in helper_contrast()}
    cut = rows["Anthropic stream cut mid-call"]
    assert cut["helper"]["raised"] is None and cut["helper"]["stop_reason"] is None
    assert cut["helper"]["calls"] == [{"id": "toolu_01A09q90qw90lq917835lq9A", "name": "read_file", "input": {}}]
    assert cut["assembler"] == ["refused read_file: stream_incomplete"]
    capped = rows["Anthropic max_tokens stop"]
    assert capped["helper"]["raised"] is None and capped["helper"]["stop_reason"] == "max_tokens"
    assert capped["helper"]["calls"][-1]["input"] == {"path": "notes/summary.md"}      # "content" silently missing
    assert capped["assembler"] and all(line.endswith("stream_incomplete") for line in capped["assembler"])
    repeats = rows["OpenAI server repeating id and name"]
    assert repeats["helper"]["calls"][0]["name"] == "read_fileread_fileread_file"
    assert repeats["helper"]["calls"][0]["id"] == "functions.read_file:0" * 3
    assert repeats["assembler"] == ["call read_file({'path': 'src/config.ts'})"]
    partial = rows["OpenAI stream cut, non-strict tools"]
    assert partial["helper"]["raised"] is None and partial["helper"]["calls"][0]["arguments"] == '{"path": "src/co'
    assert partial["assembler"] == ["refused read_file: stream_incomplete"]


def test_the_helpers_garbled_name_would_be_refused_by_the_host():
    host = tk.Host.of([tk.make_read_file(".")])
    verdict = host.check(tk.ToolCall("read_fileread_fileread_file", {"path": "a"}, "c1"))
    assert not verdict.legal and verdict.errors[0].code == "unknown_tool"


# ------------------------------------------------------------------- tools declared from typed functions
class Inner(BaseModel):
    x: int


def test_a_typed_function_becomes_a_tool_with_a_strict_schema_and_explicit_permissions():
    @contract_tool(permissions=("notes.read",), risk=0.1, risk_category="none", reads=("file:{path}",))
    def word_count(path: str, unit: Literal["words", "lines"], limit: int = 100) -> dict:
        """Count the words or lines of a note.

        More text that is not the description."""
        return {"path": path, "unit": unit, "limit": limit}

    contract = word_count.contract
    assert isinstance(word_count, tk.Tool) and contract.name == "word_count"
    assert contract.description == "Count the words or lines of a note."
    assert contract.schema["additionalProperties"] is False and contract.schema["required"] == ["path", "unit"]
    assert contract.schema["properties"]["unit"] == {"enum": ["words", "lines"], "type": "string"}
    assert contract.permissions == ("notes.read",) and contract.risk == 0.1
    host = tk.Host.of([word_count], tk.Caller().with_scopes("notes.read"))
    assert host.execute(tk.ToolCall("word_count", {"path": "a", "unit": "words"}, "c1")).output["limit"] == 100
    extra = host.execute(tk.ToolCall("word_count", {"path": "a", "unit": "words", "mode": "x"}, "c2"))
    assert extra.status is tk.Status.REJECTED
    wrong = host.execute(tk.ToolCall("word_count", {"path": "a", "unit": "pages"}, "c3"))
    assert wrong.status is tk.Status.REJECTED
    unscoped = tk.Host.of([word_count]).execute(tk.ToolCall("word_count", {"path": "a", "unit": "words"}, "c4"))
    assert unscoped.status is tk.Status.REJECTED and unscoped.failure_class.value == "authorization"


def test_a_function_with_every_parameter_required_is_openai_strict():
    @contract_tool(retry=tk.Retry.SAFE_WITH_KEY, idempotency_field="key", reversible=False, writes=("note:{key}",))
    def add_note(text: str, tags: list[str], key: str) -> dict:
        """Add a note."""
        return {}
    assert strict_problems(add_note.contract.schema) == []
    assert add_note.contract.idempotency_field == "key"


@pytest.mark.parametrize("source", ["untyped", "varargs", "nested", "bad_key"])
def test_a_function_the_decorator_cannot_describe_is_refused_when_declared(source):
    def untyped(path):
        return path

    def varargs(*paths: str):
        return paths

    def nested(inner: Inner):
        return inner

    def bad_key(text: str):
        return text
    options = {"idempotency_field": "key"} if source == "bad_key" else {}
    with pytest.raises(TypeError):
        contract_tool(**options)(locals()[source])
