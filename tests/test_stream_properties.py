"""Property tests over the stream readers, fed what a model or a server might send: any text, any JSON events,
any ids, names and indexes, cut anywhere.

Whatever arrives: no raw exception escapes (``StreamBroken`` from the decoder is its documented refusal),
nothing comes out as a ``ToolCall`` before a completion signal was fully received, previews never show a
secret-named field's value, and every cap holds by size: open calls, errors kept per call, one event's data.
Run with ``--hypothesis-show-statistics`` to see how many examples each property ran.
"""
import json
import re

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import toolkit as tk
from toolkit._codes import CODES
from toolkit._caps import MAX_ERRORS_PER_CALL, MAX_NAME_CHARS, MAX_OPEN_CALLS
from toolkit._show import is_secret_name
from toolkit.kernel import COMPLETE, Refusal
from toolkit.wire import AnthropicStream, OpenAIStream, SSEDecoder, StreamBroken
from toolkit.kernel import Assembler
from toolkit._preview import Preview

SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

JSON_LEAF = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
             | st.text(max_size=12))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=16)
STOP = st.none() | st.sampled_from(sorted(COMPLETE) + ["length", "max_tokens", "content_filter"]) | st.text(max_size=8)
INDEX = st.integers(min_value=-2, max_value=6) | st.integers(min_value=0, max_value=10 ** 30) | JSON_LEAF
IDENT = st.none() | st.sampled_from(["", "c1", "c2", "read_", "file", "read_file", "call_", "x" * 200]) | JSON_VALUE
FRAGMENT = st.none() | st.text(max_size=20) | st.sampled_from(['{"path": "', 'a.txt"}', "{}", '{"a": [1, {"b"'])
ARGS = FRAGMENT | JSON_VALUE


def body_chunks(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    edges = [0, *points, len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:])]


def check_outcome(out, allow_calls: bool):
    """Every output is a call or a refusal; calls only when allowed; errors structured, capped, ids unique."""
    assert all(isinstance(o, (tk.ToolCall, Refusal)) for o in out), out
    for o in out:
        event("a call came out" if isinstance(o, tk.ToolCall) else f"refused: {o.code}")
        if isinstance(o, Refusal) and len(o.errors) == MAX_ERRORS_PER_CALL:
            event("errors capped")
    if not allow_calls:
        assert not [o for o in out if isinstance(o, tk.ToolCall)]
    answered = [o.call_id for o in out if o.call_id is not None]
    assert len(answered) == len(set(answered))                     # one answer per id
    for o in out:
        if isinstance(o, Refusal):
            assert 1 <= len(o.errors) <= MAX_ERRORS_PER_CALL
            assert all(isinstance(e, tk.ToolError) and e.code in CODES for e in o.errors)
            json.dumps([e.to_dict() for e in o.errors], default=str)
        else:
            assert isinstance(o.name, str) and 0 < len(o.name) <= MAX_NAME_CHARS and isinstance(o.arguments, dict)


def check_held(assembler: Assembler):
    assert len(assembler.buffers) <= MAX_OPEN_CALLS
    if assembler.broken is not None and assembler.broken.code == "too_large":
        event("open calls capped")
    assert all(len(b.errors) <= MAX_ERRORS_PER_CALL for b in assembler.buffers.values())


# ------------------------------------------------------------------ the assembler itself
def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


#: A well-formed call to mix into the noise, so that some examples do complete a call.
#: How many bad pieces one call receives: enough, often, to pass MAX_ERRORS_PER_CALL.
FLOOD = st.integers(min_value=0, max_value=3 * MAX_ERRORS_PER_CALL)
GOOD = st.tuples(st.dictionaries(st.text(max_size=6), JSON_VALUE, max_size=3),
                 st.lists(st.integers(min_value=0, max_value=200), max_size=6), st.booleans())


@SETTINGS
@given(ops=st.lists(st.tuples(INDEX, IDENT, IDENT, ARGS, st.booleans()), max_size=40), good=GOOD, flood=FLOOD,
       spray=st.integers(min_value=0, max_value=2 * MAX_OPEN_CALLS), stop=STOP, envelope=st.booleans())
def test_the_assembler_never_raises_holds_its_caps_and_completes_only_on_a_complete_stop(ops, good, flood, spray,
                                                                                         stop, envelope):
    asm = Assembler(max_chars=300, envelope=envelope, needs_close=not envelope and spray % 2 == 1)
    arguments, cuts, split_name = good
    text = json.dumps({"name": "read_file", "arguments": arguments} if envelope else arguments)
    asm.add(7, call_id="good", name="read_" if split_name else "read_file")
    asm.add(7, name="file" if split_name else None)
    for piece in split(text, cuts):
        asm.add(7, arguments=piece)
    asm.close(7)
    for n in range(flood):                   # one call that keeps sending what is not argument text
        asm.add(3, call_id="flood", name=["not", "text"] if n % 2 else None, arguments=n)
    for index, call_id, name, arguments, close in ops:
        asm.add(index, call_id=call_id, name=name, arguments=arguments)
        if close:
            asm.close(index)
        previews = asm.previews()
        assert all(isinstance(p, Preview) and not isinstance(p, tk.ToolCall) for p in previews)
        check_held(asm)
    for n in range(spray):
        asm.add(100 + n, call_id=f"s{n}", name="f", arguments="{}")
    check_held(asm)
    check_outcome(asm.finish(stop), allow_calls=isinstance(stop, str) and stop in COMPLETE)


SECRET_KEYS = st.sampled_from(["token", "api_key", "password", "secret", "authorization", "client_secret"])
PLAIN_TEXT = st.text(alphabet="abcdefgh ,.:{}[]\"\\/01", max_size=10)
PLAIN_VALUE = st.recursive(st.none() | st.booleans() | st.integers(min_value=-99, max_value=99) | PLAIN_TEXT,
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(PLAIN_TEXT.filter(lambda k: not is_secret_name(k)), inner, max_size=3),
                           max_leaves=8)
SECRET_VALUE = st.recursive(st.text(min_size=1, max_size=8).map(lambda t: "Zq9" + t) | st.integers(9000, 9999),
                            lambda inner: st.lists(inner, min_size=1, max_size=3)
                            | st.dictionaries(PLAIN_TEXT, inner, min_size=1, max_size=2), max_leaves=4)


@SETTINGS
@given(plain=st.dictionaries(PLAIN_TEXT.filter(lambda k: not is_secret_name(k)), PLAIN_VALUE, max_size=3),
       secrets=st.dictionaries(SECRET_KEYS, SECRET_VALUE, min_size=1, max_size=3),
       nest=st.booleans(), cuts=st.lists(st.integers(min_value=0, max_value=500), max_size=20),
       ascii_only=st.booleans())
def test_a_preview_never_shows_a_secret_named_value_at_any_cut(plain, secrets, nest, cuts, ascii_only):
    arguments = {**plain, "inner": secrets} if nest else {**plain, **secrets}
    text = json.dumps(arguments, ensure_ascii=ascii_only)
    points = sorted({c % (len(text) + 1) for c in cuts})
    asm = Assembler()
    asm.add(0, call_id="c1", name="f")
    for a, b in zip([0, *points], [*points, len(text)]):
        asm.add(0, arguments=text[a:b])
        shown = asm.preview(0).text
        assert "Zq9" not in shown and not re.search(r"9\d\d\d", shown), shown
    [call] = asm.finish("tool_calls")
    assert call.arguments == arguments


# ------------------------------------------------------------------ the SSE decoder
@SETTINGS
@given(body=st.binary(max_size=400) | st.text(max_size=400).map(str.encode),
       lines=st.lists(st.sampled_from(["data: ", "data:", "event: x", ": c", "", "id: 1", "retry: 5"])
                      .flatmap(lambda f: st.text(max_size=40).map(lambda t: f + t)), max_size=20),
       cap=st.integers(min_value=1, max_value=80), cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
       as_text=st.booleans())
def test_the_decoder_refuses_or_decodes_anything_and_holds_its_cap(body, lines, cap, cuts, as_text):
    whole = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n\n" + body
    decoder = SSEDecoder(max_event_bytes=cap)
    for chunk in body_chunks(whole, cuts):
        try:
            piece = chunk.decode("utf-8", "surrogatepass") if as_text else chunk
        except UnicodeDecodeError:
            piece = chunk
        try:
            events = decoder.feed(piece)
        except StreamBroken as broken:
            assert broken.error.code in ("stream_invalid", "too_large")
            event(f"decoder refused: {broken.error.code}")
            break
        for dispatched in events:
            assert len(dispatched.data.encode("utf-8", "surrogatepass")) <= cap
        held = sum(len(d.encode("utf-8", "surrogatepass")) for d in decoder._data) + max(0, len(decoder._data) - 1)
        assert held <= cap and decoder._partial_size <= cap + 64


# ------------------------------------------------------------------ the vendor readers
def sse(event: str | None, data) -> bytes:
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else json.dumps(data)
    return (head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode("utf-8", "surrogatepass")


OPENAI_PIECE = st.fixed_dictionaries({"index": INDEX}, optional={"id": IDENT, "type": st.just("function"),
                                                                 "function": st.fixed_dictionaries(
                                                                     {}, optional={"name": IDENT, "arguments": ARGS})
                                                                 | JSON_VALUE})
OPENAI_EVENT = (st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries(
    {"index": st.just(0) | INDEX, "delta": st.fixed_dictionaries(
        {}, optional={"content": st.none() | st.text(max_size=10),
                      "tool_calls": st.lists(OPENAI_PIECE, max_size=3) | JSON_VALUE}) | JSON_VALUE},
    optional={"finish_reason": STOP}), max_size=2) | JSON_VALUE}) | JSON_VALUE | st.just("[DONE]")
    | st.text(max_size=30))


def openai_complete(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("choices"), list) and any(
        isinstance(c, dict) and c.get("finish_reason") in COMPLETE for c in data["choices"])


ANTHROPIC_KIND = st.sampled_from(["content_block_start", "content_block_delta", "content_block_stop", "message_delta",
                                  "message_stop", "message_start", "ping", "error"])
ANTHROPIC_EVENT = st.builds(
    lambda kind, index, block, delta, stop, extra: {
        "type": kind, "index": index,
        **({"content_block": block} if kind == "content_block_start" else {}),
        **({"delta": delta} if kind == "content_block_delta" else {}),
        **({"delta": {"stop_reason": stop}} if kind == "message_delta" else {}), **extra},
    ANTHROPIC_KIND, INDEX,
    st.fixed_dictionaries({"type": st.sampled_from(["tool_use", "text", "thinking"]) | JSON_LEAF},
                          optional={"id": IDENT, "name": IDENT, "input": st.just({}) | JSON_VALUE}),
    st.fixed_dictionaries({"type": st.sampled_from(["input_json_delta", "text_delta", "thinking_delta"]) | JSON_LEAF},
                          optional={"partial_json": ARGS, "text": st.text(max_size=10)}),
    STOP, st.dictionaries(st.text(max_size=5), JSON_VALUE, max_size=2)) | JSON_VALUE


def anthropic_complete(data) -> bool:
    return isinstance(data, dict) and data.get("type") == "message_delta" and isinstance(data.get("delta"), dict) \
        and data["delta"].get("stop_reason") in COMPLETE


def run_reader(reader, events: list[tuple[str | None, object]], complete, cuts: list[int], garbage: bytes):
    body, complete_at = b"", None
    for name, data in events:
        body += sse(name, data)
        if complete_at is None and complete(data):
            complete_at = len(body)
    body += garbage
    fed, out = 0, []
    for chunk in body_chunks(body, cuts):
        fed += len(chunk)
        got = reader.feed(chunk)
        allowed = complete_at is not None and fed >= complete_at
        check_outcome(got, allow_calls=allowed)
        out += got
        check_held(reader.assembler)
        assert len(getattr(reader, "blocks", {})) <= MAX_OPEN_CALLS
        assert all(isinstance(p, Preview) for p in reader.previews())
    out += reader.end()
    check_outcome(out, allow_calls=complete_at is not None)


SPRAY = st.integers(min_value=0, max_value=2 * MAX_OPEN_CALLS)


@SETTINGS
@given(events=st.lists(OPENAI_EVENT, max_size=12), spray=SPRAY, good=GOOD, flood=FLOOD, at=st.integers(0, 12),
       cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=15), garbage=st.binary(max_size=30))
def test_the_openai_reader_never_raises_and_runs_nothing_before_the_completion_event(events, spray, good, flood, at,
                                                                                     cuts, garbage):
    sprayed = [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 10 + n, "id": f"s{n}",
                                                                  "function": {"name": "f", "arguments": "{}"}}]}}]}
               for n in range(spray)]
    arguments, pieces, split_name = good

    def piece(**function):
        return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 7, "id": "good", "function": function}]}}]}

    well_formed = [piece(name="read_" if split_name else "read_file", arguments="")] + \
        ([piece(name="file")] if split_name else []) + \
        [piece(arguments=p) for p in split(json.dumps(arguments), pieces)] + \
        [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
    flooded = [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 3, "function": {"arguments": n}}]}}]}
               for n in range(flood)]
    mixed = sprayed + flooded + events[:at] + well_formed + events[at:]
    run_reader(OpenAIStream(max_chars=300), [(None, e) for e in mixed], openai_complete, cuts, garbage)


@SETTINGS
@given(events=st.lists(st.tuples(st.booleans(), ANTHROPIC_EVENT), max_size=12), spray=SPRAY, good=GOOD,
       flood=FLOOD, at=st.integers(0, 12), cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=15),
       garbage=st.binary(max_size=30))
def test_the_anthropic_reader_never_raises_and_runs_nothing_before_the_completion_event(events, spray, good, flood,
                                                                                        at, cuts, garbage):
    sprayed = [("content_block_start", {"type": "content_block_start", "index": 10 + n,
                                        "content_block": {"type": "tool_use", "id": f"s{n}", "name": "f",
                                                          "input": {}}}) for n in range(spray)]
    named = [(e["type"] if with_name and isinstance(e, dict) and isinstance(e.get("type"), str) else None, e)
             for with_name, e in events]
    arguments, pieces, _ = good
    well_formed = [("content_block_start", {"type": "content_block_start", "index": 7, "content_block": {
        "type": "tool_use", "id": "good", "name": "read_file", "input": {}}})] + \
        [("content_block_delta", {"type": "content_block_delta", "index": 7,
                                  "delta": {"type": "input_json_delta", "partial_json": p}})
         for p in split(json.dumps(arguments), pieces)] + \
        [("content_block_stop", {"type": "content_block_stop", "index": 7}),
         ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}})]
    flooded = [("content_block_start", {"type": "content_block_start", "index": 3, "content_block": {
        "type": "tool_use", "id": "flood", "name": "f", "input": {}}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 3})] + \
        [("content_block_delta", {"type": "content_block_delta", "index": 3,   # after its block closed
                                  "delta": {"type": "input_json_delta", "partial_json": "x"}})] * flood
    mixed = sprayed + (flooded if flood else []) + named[:at] + well_formed + named[at:]
    run_reader(AnthropicStream(max_chars=300), mixed, anthropic_complete, cuts, garbage)
