"""Streaming: nothing partial reaches an executor; fragments assemble in linear time; streams break safely."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolkit as tk
from toolkit import _schema as schema
from toolkit._ids import not_a_call
from toolkit.wire import AnthropicStream, OpenAIStream, anthropic_stream, openai_stream
from course.worlds.stream_replay import SKETCH_FRAMES, frames
from toolkit.kernel import Assembler
from toolkit._preview import Preview
from course.worlds import fixture
from toolkit._ids import IdMap
from toolkit.kernel import Refusal

READ_SCHEMA = {"type": "object",
               "properties": {"path": {"type": "string", "description": "A path relative to the workspace."}},
               "required": ["path"], "additionalProperties": False}
READ_FILE = tk.Contract("read_file", "Read a file inside the workspace.", READ_SCHEMA, reads=("file:{path}",))


def spy_host():
    """A host whose read_file records every call that actually ran."""
    ran = []

    def read(args, world):
        ran.append(args)
        return {"text": "export const port = 8080;\n"}

    return tk.Host.of([tk.Tool(READ_FILE, read)]), ran


def calls_of(outcome):
    return [o for o in outcome if isinstance(o, tk.ToolCall)]


def refusals_of(outcome):
    return [o for o in outcome if isinstance(o, Refusal)]


# ------------------------------------------------------------- sketch pieces
def test_sketch_pieces_are_parseable_only_after_the_completion_event():
    asm = Assembler(envelope=True)
    host, ran = spy_host()
    seen_keys = []
    for frame in SKETCH_FRAMES:
        asm.add(0, arguments=frame)
        preview = asm.preview(0)
        assert isinstance(preview, Preview) and not isinstance(preview, tk.ToolCall)
        seen_keys.append(preview.keys)
    # while the pieces arrive the host holds fragments only; the third shows a path is coming, not which one
    assert seen_keys[0] == ("$.name",)
    assert seen_keys[2] == ("$.name", "$.arguments", "$.arguments.path")
    assert asm.preview(0).text == "".join(SKETCH_FRAMES)
    assert ran == []
    [call] = asm.finish("complete")
    assert isinstance(call, tk.ToolCall)
    assert (call.name, call.arguments) == ("read_file", {"path": "src/config.ts"})
    assert host.execute(call).ok and ran == [{"path": "src/config.ts"}]


def test_frames_table_marks_only_the_completion_row_runnable():
    rows = frames(SKETCH_FRAMES)
    assert [r["frame"] for r in rows] == ["t1", "t2", "t3", "t4", "completion event"]
    assert [r["runnable"] for r in rows] == [False, False, False, False, True]
    assert rows[-1]["call"].startswith('read_file({"path": "src/config.ts"})')


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_a_cut_sketch_stream_never_reaches_the_executor(cut):
    # even after t4, whose text happens to be complete JSON, no completion event means no call
    asm = Assembler(envelope=True)
    for frame in SKETCH_FRAMES[:cut]:
        asm.add(0, arguments=frame)
    outcome = asm.finish(None)
    host, ran = spy_host()
    for item in outcome:                      # a host runs whatever ToolCalls the stream produced
        if isinstance(item, tk.ToolCall):
            host.execute(item)
    assert ran == []
    [refusal] = outcome
    assert isinstance(refusal, Refusal) and refusal.code == "stream_incomplete"
    result = refusal.result
    assert result.status is tk.Status.REJECTED and result.call_id == refusal.call_id


def test_preview_shows_keys_but_never_guesses_a_value():
    asm = Assembler()
    asm.add(0, call_id="c1", name="create_invoice", arguments='{"amount": 1')
    preview = asm.preview(0)
    assert preview.keys == ("$.amount",)
    assert preview.text == '{"amount": 1'          # the raw text, not a parsed 1 that might become 100
    assert not hasattr(preview, "arguments")
    asm.add(0, arguments='00, "lines": [{"qty": 2}, {"sku\\u00e9": "A"}]}')
    assert asm.preview(0).keys == ("$.amount", "$.lines", "$.lines[0].qty", "$.lines[1].skué")
    [call] = asm.finish("tool_calls")
    assert call.arguments["amount"] == 100


def test_host_does_not_run_a_preview():
    asm = Assembler()
    asm.add(0, call_id="c1", name="read_file", arguments='{"path": "src/co')
    preview = asm.preview(0)
    host, ran = spy_host()
    result = host.execute(preview)
    assert ran == [] and result.status is tk.Status.REJECTED and result.reason == "not_a_call"
    refused = not_a_call(preview)
    assert refused.status is tk.Status.REJECTED and refused.reason == "not_a_call"
    assert refused.errors[0].received == "Preview"


# -------------------------------------------------------------- assembler
def test_parse_happens_once_and_only_at_the_completion_signal(monkeypatch):
    calls = []
    real = schema.parse_arguments

    def counting(raw):
        calls.append(len(raw))
        return real(raw)

    monkeypatch.setattr(schema, "parse_arguments", counting)
    asm = Assembler()
    text = json.dumps({"path": "src/config.ts", "content": "x" * 5000})
    for i in range(0, len(text), 7):
        asm.add(0, call_id="c1", name="write_file", arguments=text[i:i + 7])
    assert calls == []                   # no parse while fragments arrive
    [call] = asm.finish("tool_calls")
    assert calls == [len(text)]          # one strict parse of the joined text
    assert call.arguments["content"] == "x" * 5000


def test_repeated_id_and_name_are_set_once():
    asm = Assembler()
    for piece in ['{"path": ', '"src/config.ts"', "}"]:
        asm.add(0, call_id="functions.read_file:0", name="read_file", arguments=piece)
    [call] = asm.finish("tool_calls")
    assert call.name == "read_file"                     # not read_fileread_fileread_file
    assert call.arguments == {"path": "src/config.ts"}


def test_an_id_or_name_that_changes_mid_stream_refuses_the_call():
    asm = Assembler()
    asm.add(0, call_id="a", name="read_file", arguments="{}")
    asm.add(0, call_id="b", name="write_file")
    [refusal] = asm.finish("tool_calls")
    assert [e.code for e in refusal.errors] == ["stream_invalid", "stream_invalid"]
    assert "changed mid-stream" in refusal.errors[0].message


def test_empty_arguments_mean_an_empty_object():
    asm = Assembler()
    asm.add(0, call_id="c1", name="list_files", arguments="")
    asm.add(1, call_id="c2", name="list_files")
    first, second = asm.finish("tool_calls")
    assert first.arguments == {} and second.arguments == {}


@pytest.mark.parametrize("text, code", [
    ('{"path": "a", "path": "b"}', "invalid_json"),   # duplicate key
    ('{"n": NaN}', "invalid_json"),
    ('{"path": "a"} trailing', "invalid_json"),
    ('{"path": "a"}{"path": "b"}', "invalid_json"),    # a second object glued on
    ('["src/config.ts"]', "not_an_object"),
    ('{"path": "src/co', "invalid_json"),             # completion signal, but the text is cut
])
def test_bad_json_after_completion_is_refused(text, code):
    asm = Assembler()
    asm.add(0, call_id="c1", name="read_file", arguments=text)
    [refusal] = asm.finish("tool_calls")
    assert isinstance(refusal, Refusal) and refusal.code == code


@pytest.mark.parametrize("reason", ["length", "max_tokens", "content_filter", "something_new", None])
def test_a_stop_that_is_not_completion_refuses_every_call(reason):
    asm = Assembler()
    asm.add(0, call_id="c1", name="read_file", arguments='{"path": "a.txt"}')   # complete-looking
    asm.add(1, call_id="c2", name="read_file", arguments='{"path": "b.t')
    out = asm.finish(reason)
    assert len(refusals_of(out)) == 2 and calls_of(out) == []
    assert {r.code for r in out} == {"stream_incomplete"}


def test_argument_text_over_the_cap_is_refused_and_dropped():
    asm = Assembler(max_chars=100)
    for _ in range(50):
        asm.add(0, call_id="c1", name="write_file", arguments="x" * 10)
    assert asm.buffers[0].parts == []       # an endless stream does not fill memory
    [refusal] = asm.finish("tool_calls")
    assert refusal.code == "too_large"


def test_bad_fragment_types_are_structured_errors():
    asm = Assembler()
    asm.add(0, call_id=["x"], name=3, arguments={"path": "a"})
    [refusal] = asm.finish("tool_calls")
    assert {e.code for e in refusal.errors} == {"stream_invalid"}
    assert len(refusal.errors) == 3


# ------------------------------------------------------------ vendor streams
def test_openai_fixture_stream_assembles_three_calls_in_index_order():
    ids = IdMap()
    out = list(openai_stream(fixture("openai_stream.txt"), ids))
    assert [(c.name, c.arguments) for c in out] == [
        ("read_file", {"path": "src/config.ts"}), ("read_file", {"path": "src/routes.ts"}),
        ("write_file", {"path": "notes/summary.md", "content": "# Summary\n"})]
    assert [ids.external(c.call_id, "openai") for c in out] == [
        "call_Q1a8Zk2LmN4pR7sT9uV3wX5y", "call_B6cD8eF0gH2iJ4kL6mN8oP0q", "call_C3rS5tU7vW9xY1zA3bC5dE7f"]


def test_anthropic_fixture_stream_assembles_calls_and_keeps_text():
    reader = AnthropicStream()
    out = reader.feed(fixture("anthropic_stream.txt")) + reader.end()
    assert [(c.name, c.arguments["path"]) for c in out] == [
        ("read_file", "src/config.ts"), ("read_file", "src/routes.ts"), ("write_file", "notes/summary.md")]
    assert reader.text == "I'll read both files, then write the summary."
    assert reader.stop_reason == "tool_use"


def test_repeating_server_fixture_gives_one_clean_call():
    reader = OpenAIStream()
    out = reader.feed(fixture("openai_stream_repeats.txt"))
    assert [(c.name, c.arguments) for c in out] == [("read_file", {"path": "src/config.ts"})]
    assert reader.text == "Reading the config."


@pytest.mark.parametrize("name, read, reason", [
    ("openai_stream_length.txt", openai_stream, "length"),
    ("anthropic_stream_max_tokens.txt", anthropic_stream, "max_tokens"),
])
def test_token_limit_fixtures_refuse_every_call(name, read, reason):
    out = list(read(fixture(name)))
    assert len(out) == 3 and calls_of(out) == []
    assert all(r.code == "stream_incomplete" and reason in r.errors[0].message for r in out)
    assert all(r.result.status is tk.Status.REJECTED for r in out)   # each call still gets its one result


def _body_chunks(text, cuts):
    data = text.encode("utf-8")
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:])]


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
       name=st.sampled_from(["openai_stream.txt", "anthropic_stream.txt", "openai_stream_repeats.txt"]))
def test_chunk_boundaries_anywhere_give_the_same_calls(cuts, name):
    text = fixture(name).replace("summary", "résumé ✓")    # multi-byte characters to split
    read = openai_stream if name.startswith("openai") else anthropic_stream
    whole = [(c.name, c.arguments) for c in read(text)]
    pieces = [(c.name, c.arguments) for c in read(_body_chunks(text, cuts))]
    assert pieces == whole and whole


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_cr_line_endings(newline):
    text = fixture("openai_stream.txt").replace("\n", newline)
    chunks = [text[i:i + 5] for i in range(0, len(text), 5)]     # splits CRLF pairs too
    assert len(calls_of(openai_stream(chunks))) == 3


@pytest.mark.parametrize("name, read", [("openai_stream.txt", openai_stream),
                                        ("anthropic_stream.txt", anthropic_stream)])
def test_every_prefix_without_the_completion_event_yields_no_call(name, read):
    text = fixture(name)
    signal = '"finish_reason":"tool_calls"' if name.startswith("openai") else '"stop_reason":"tool_use"'
    complete_at = text.index("\n\n", text.index(signal)) + 2
    for end in range(0, len(text), 13):
        out = list(read(text[:end]))
        if end < complete_at:
            assert calls_of(out) == [], f"a call escaped from a stream cut at {end}"
            assert all(r.code in ("stream_incomplete", "stream_invalid") for r in out)
    assert len(calls_of(read(text[:complete_at]))) == 3


# ------------------------------------------------------------ broken streams
def _codes(out):
    return [(type(o).__name__, o.code if isinstance(o, Refusal) else None) for o in out]


def test_bad_json_in_a_data_line_refuses_open_calls():
    text = fixture("openai_stream.txt")
    broken = text.replace('"arguments":"th', '"arguments":th', 1)
    out = list(openai_stream(broken))
    assert _codes(out) == [("Refusal", "stream_invalid")]
    assert "not JSON" in out[0].errors[0].message and out[0].call_id == "call_1"


def test_an_html_error_page_is_malformed_sse():
    out = list(openai_stream("<html><body>502 Bad Gateway</body></html>\n\n"))
    assert _codes(out) == [("Refusal", "stream_invalid")]
    assert out[0].call_id is None and out[0].result is None    # no call began, so nothing to answer


def test_invalid_utf8_and_non_text_chunks():
    assert _codes(openai_stream([b"data: {\xff\xfe}\n\n"])) == [("Refusal", "stream_invalid")]
    assert _codes(openai_stream([12345])) == [("Refusal", "stream_invalid")]
    assert _codes(openai_stream(None)) == [("Refusal", "stream_invalid")]


def test_done_without_finish_reason_and_server_error_events():
    text = fixture("openai_stream.txt")
    no_finish = text.replace('"finish_reason":"tool_calls"', '"finish_reason":null')
    assert {o.code for o in openai_stream(no_finish)} == {"stream_incomplete"}
    cut_by_error = text[: text.index("data:", 600)] + 'data: {"error": {"type": "server_error"}}\n\n'
    out = list(openai_stream(cut_by_error))
    assert out and {o.code for o in out} == {"stream_incomplete"}
    assert "server_error" in out[0].errors[0].message


def test_anthropic_error_event_and_protocol_violations():
    start = ('event: content_block_start\ndata: {"type":"content_block_start","index":0,'
             '"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}\n\n')
    error = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    assert [o.code for o in anthropic_stream(start + error)] == ["stream_incomplete"]
    stray = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":5,' \
            '"delta":{"type":"input_json_delta","partial_json":"{"}}\n\n'
    assert [o.code for o in anthropic_stream(start + stray)] == ["stream_invalid"]
    mismatch = 'event: message_stop\ndata: {"type":"ping"}\n\n'
    assert [o.code for o in anthropic_stream(start + mismatch)] == ["stream_invalid"]
    prefilled = start.replace('"input":{}', '"input":{"path":"x"}')
    assert [o.code for o in anthropic_stream(prefilled)] == ["stream_invalid"]


def test_anthropic_block_that_never_closed_is_refused():
    text = fixture("anthropic_stream.txt")
    last_stop = text.rindex("event: content_block_stop")
    unclosed = text[:last_stop] + text[text.index("event: message_delta"):]
    out = list(anthropic_stream(unclosed))
    assert [type(o).__name__ for o in out] == ["ToolCall", "ToolCall", "Refusal"]
    assert "never closed" in out[2].errors[0].message


def test_previews_while_streaming_then_calls():
    reader = OpenAIStream()
    text = fixture("openai_stream.txt")
    events = text.split("\n\n")
    shown = []
    for event in events[:3]:
        assert reader.feed(event + "\n\n") == []
        shown.append([p.text for p in reader.previews()])
    assert shown == [[""], ['{"pa'], ['{"path": "src/co']]
    assert reader.previews()[0].keys == ("$.path",)
    rest = reader.feed("\n\n".join(events[3:]))
    assert len(rest) == 3 and reader.previews() == []


# ------------------------------------------------------- property: any split
JSON_LEAF = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3) |
                          st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)


def key_paths(value, path=()):
    """Every key's JSON path, as a preview lists them: not those inside a secret-named field's value."""
    out = []
    if isinstance(value, dict):
        for key, sub in value.items():
            out.append(tk._show.pointer_for(path + (key,)))
            if not tk._show.is_secret_name(key):
                out += key_paths(sub, path + (key,))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += key_paths(sub, path + (i,))
    return out


@settings(max_examples=150, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=6), JSON_VALUE, max_size=4),
       cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
       ascii_only=st.booleans())
def test_any_fragmentation_assembles_exactly_and_previews_every_key(arguments, cuts, ascii_only):
    text = json.dumps(arguments, ensure_ascii=ascii_only)
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    asm = Assembler()
    for piece in pieces:
        asm.add(0, call_id="c1", name="tool", arguments=piece)
        asm.preview(0)                       # previews along the way must not disturb anything
    assert set(asm.preview(0).keys) == set(key_paths(arguments))
    assert "keys" in asm.preview(0).line()
    [call] = asm.finish("tool_calls")
    assert call.arguments == arguments


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=300) | st.text(max_size=300),
       prefix=st.sampled_from(["", "data: ", "event: content_block_delta\ndata: ", 'data: {"choices": ']))
def test_stream_readers_never_raise_on_garbage(body, prefix):
    for read in (openai_stream, anthropic_stream):
        chunk = prefix.encode() + body if isinstance(body, bytes) else prefix + body
        out = list(read([chunk, b"\n\n" if isinstance(body, bytes) else "\n\n"]))
        assert all(isinstance(o, (tk.ToolCall, Refusal)) for o in out)
        assert calls_of(out) == []       # garbage never completes a call


def test_deeply_nested_event_data_is_refused_not_raised():
    deep = "data: " + "[" * 100_000 + "]" * 100_000 + "\n\n"
    out = list(openai_stream(deep))
    assert [o.code for o in out] == ["stream_invalid"]
