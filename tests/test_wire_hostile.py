"""The wire under attack: previews that leak nothing, streams that cannot blow up memory, rounds that always pair.

Each test is a regression for an item of the hardening issue (sections 2, 4 and 5, the wire's share). Every cap
is asserted by size (how much is held, how many are kept), never by time; speed lives in
benchmarks/bench_hostile_streams.py.
"""
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import toolkit as tk
from toolkit._caps import (MAX_CALL_ID_CHARS, MAX_DEPTH, MAX_ERRORS_PER_CALL, MAX_EVENT_BYTES, MAX_NAME_CHARS,
                           MAX_OPEN_CALLS)
from course.present.stream_panel import moment_text
from toolkit.wire import AnthropicStream, OpenAIStream, SSEDecoder, StreamBroken, anthropic_stream, openai_stream, pairing_problems, run_round
from toolkit.kernel import Assembler
from toolkit._ids import IdMap
from course.worlds import replay
from toolkit.kernel import Refusal
from toolkit._stream_guards import capped_errors

SECRETS = {"api_key": "Zq9-apikey-7781", "password": "Zq9-hunter2-\u00e4\u00df", "token": "Zq9-token-5512"}
ARGUMENTS = {"path": "src/config.ts", "api_key": SECRETS["api_key"],
             "nested": {"password": SECRETS["password"], "keep": "visible"},
             "token": [SECRETS["token"], {"deeper": "Zq9-in-a-list"}], "after": 3}
READ = tk.Contract("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}},
                                                 "required": ["path"], "additionalProperties": False},
                   reads=("file:{path}",))
WRITE = tk.Contract("write_file", "Replace a file.", {"type": "object", "properties": {"path": {"type": "string"}},
                                                      "required": ["path"], "additionalProperties": False},
                    writes=("file:{path}",))


def openai_chunk(tool_calls=None, finish=None, content=None):
    delta = {}
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    if content is not None:
        delta["content"] = content
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


def openai_body(pieces, finish="tool_calls"):
    """An OpenAI stream body: ``pieces`` are (id, name, arguments) deltas of call index 0."""
    body = "".join(openai_chunk([{"index": 0, **({"id": i} if i is not None else {}),
                                  "function": {k: v for k, v in (("name", n), ("arguments", a)) if v is not None}}])
                   for i, n, a in pieces)
    return body + openai_chunk(finish=finish) + "data: [DONE]\n\n"


def leaks(text):
    return "Zq9" in text or "hunter2" in text


# ----------------------------------------------------------- 2. previews leak no secret
@pytest.mark.parametrize("step", [1, 2, 3, 7])
def test_a_preview_masks_secret_named_values_whatever_the_cut(step):
    text = json.dumps(ARGUMENTS, ensure_ascii=step % 2 == 0)
    asm = Assembler()
    asm.add(0, call_id="c1", name="write_file")
    for i in range(0, len(text), step):
        asm.add(0, arguments=text[i:i + step])
        preview = asm.preview(0)
        assert not leaks(preview.text) and not leaks(preview.line(width=400)), preview.text
        assert not leaks(repr(preview))
    assert preview.text == ('{"path": "src/config.ts", "api_key": "[redacted]", "nested": {"password": "[redacted]", '
                            '"keep": "visible"}, "token": "[redacted]", "after": 3}')
    assert preview.keys == ("$.path", "$.api_key", "$.nested", "$.nested.password", "$.nested.keep", "$.token",
                            "$.after")
    [call] = asm.finish("tool_calls")
    assert call.arguments == ARGUMENTS               # masking is for display; the call itself is untouched


def test_credential_shapes_in_free_text_are_masked_in_the_preview():
    text = json.dumps({"note": "use sk-CANARYabcdef123456 and Bearer abcdefghijkl now", "path": "a"})
    asm = Assembler()
    for i in range(0, len(text), 5):
        asm.add(0, call_id="c1", name="write_file", arguments=text[i:i + 5])
        asm.preview(0)
    shown = asm.preview(0).text
    assert "CANARY" not in shown and "abcdefghijkl" not in shown and '"path": "a"' in shown


def test_the_stream_panel_and_its_chunk_descriptions_mask_secrets():
    text = json.dumps({"path": "a.txt", "password": SECRETS["password"], "token": SECRETS["token"]})
    pieces = [("call_1", "write_file", "")] + [(None, None, text[i:i + 4]) for i in range(0, len(text), 4)]
    body = openai_chunk(content="my key is sk-CANARYabcdef123456") + openai_body(pieces)
    vendor, chunks, moments = replay("openai_stream.txt", body)
    assert len(moments) > 10 and moments[-1].calls
    descriptions = [m.chunk for m in moments[1:]]
    for moment in moments:
        shown = moment_text("custom", moment, descriptions, window=1000)
        assert not leaks(shown) and "CANARY" not in shown, shown
    assert moments[-1].calls[0].arguments["password"] == SECRETS["password"]


def test_a_broken_event_is_refused_without_echoing_its_text():
    body = ('data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": '
            '{"name": "x", "arguments": "{\\"password\\": \\"Zq9-hunter2\\"}"}}]}}]\n\n')      # a brace missing
    not_sse = '{"password": "Zq9-hunter2"}\n\n'
    for text in (body, not_sse, "data: ok\n" + not_sse):
        out = list(openai_stream(text))
        assert out and all(isinstance(o, Refusal) for o in out)
        assert not leaks(json.dumps([e.to_dict() for o in out for e in o.errors])), out


# ------------------------------------------------------- 4. names and ids in pieces
def test_a_tool_name_split_across_deltas_is_assembled():
    asm = Assembler()
    asm.add(0, call_id="c1", name="read_")
    asm.add(0, name="file", arguments='{"path": "a"}')
    [call] = asm.finish("tool_calls")
    assert (call.name, call.arguments) == ("read_file", {"path": "a"})
    out = list(openai_stream(openai_body([("c1", "read_", None), (None, "fi", None), (None, "le", '{"pa'),
                                          (None, None, 'th": "a"}')])))
    assert [(c.name, c.arguments) for c in out] == [("read_file", {"path": "a"})]


@pytest.mark.parametrize("names", [["read_file"] * 4, ["read_", "read_file", "read_file"], ["read_file"]])
def test_a_name_repeated_whole_or_resent_growing_is_never_doubled(names):
    asm = Assembler()
    for n, name in enumerate(names):
        asm.add(0, call_id="c1", name=name, arguments='{"path": "a"}' if n == len(names) - 1 else None)
    [call] = asm.finish("tool_calls")
    assert call.name == "read_file"


def test_an_id_split_across_deltas_is_assembled_and_answers_the_whole_vendor_id():
    ids = IdMap()
    out = list(openai_stream(openai_body([("call_", "read_file", None), ("Q1a8", None, None),
                                          ("call_Q1a8", None, '{"path": "a"}')]), ids))
    assert [type(o).__name__ for o in out] == ["ToolCall"]
    assert ids.external(out[0].call_id, "openai") == "call_Q1a8"


def test_a_name_or_id_that_changes_once_the_arguments_began_is_refused():
    for field in ("name", "call_id"):
        asm = Assembler()
        asm.add(0, call_id="c1", name="read_file", arguments='{"path": ')
        asm.add(0, **{field: "write_file" if field == "name" else "c2"}, arguments='"a"}')
        [refusal] = asm.finish("tool_calls")
        assert isinstance(refusal, Refusal) and "changed mid-stream" in refusal.errors[0].message


def test_a_name_or_id_past_its_cap_breaks_the_stream_naming_the_cap():
    asm = Assembler()
    asm.add(0, call_id="c" * MAX_CALL_ID_CHARS, name="n" * MAX_NAME_CHARS, arguments="{}")
    [call] = asm.finish("tool_calls")
    assert len(call.name) == MAX_NAME_CHARS
    for field, cap, pieces in (("name", "MAX_NAME_CHARS", ["na", "me"]), ("call_id", "MAX_CALL_ID_CHARS", ["i", "d"])):
        asm = Assembler()
        asm.add(0, call_id="c0", name="read_file", arguments="{}")
        for n in range(10_000):                     # a value that never stops arriving, in pieces
            asm.add(1, **{"name": "f", "call_id": "c1", field: pieces[n % 2]})
        assert len(asm.buffers[1].name or "") <= MAX_NAME_CHARS
        assert len(asm.buffers[1].vendor_id or "") <= MAX_CALL_ID_CHARS
        out = asm.finish("tool_calls")
        assert [o.code for o in out] == ["too_large", "too_large"] and cap in out[1].errors[0].message
    body = openai_body([("c1", "x" * 100, None)] * 3 + [(None, "y" * 100, "{}")] + [(None, None, "{}")] * 1000)
    reader = OpenAIStream()
    out = reader.feed(body)
    assert [o.code for o in out] == ["too_large"] and reader.done     # it stopped reading there


def test_two_calls_with_one_id_are_both_refused_and_answered_once():
    asm = Assembler()
    asm.add(0, call_id="same", name="read_file", arguments='{"path": "a"}')
    asm.add(1, call_id="same", name="read_file", arguments='{"path": "b"}')
    first, second = asm.finish("tool_calls")
    assert (first.code, second.code) == ("duplicate_call_id", "duplicate_call_id")
    assert first.result is not None and second.result is None


@pytest.mark.parametrize("index", ["0", -1, True, 1.5, [0], None, {"i": 0}, 10 ** 40])
def test_an_index_that_is_not_a_non_negative_integer_breaks_the_stream_without_raising(index):
    asm = Assembler()
    asm.add(0, call_id="c1", name="read_file", arguments="{}")
    asm.add(index, call_id="c2", name="read_file", arguments="{}")
    asm.close(index)
    assert asm.preview(index) is None or index == 10 ** 40
    out = asm.finish("tool_calls")
    if index == 10 ** 40:                             # a big integer is a fine index
        assert [type(o).__name__ for o in out] == ["ToolCall", "ToolCall"]
    else:
        assert [o.code for o in out] == ["stream_invalid"] and "index" in out[0].errors[0].message


# ----------------------------------------------------------------- 4. the caps
def test_open_calls_are_capped_by_number():
    asm = Assembler()
    for i in range(MAX_OPEN_CALLS):
        asm.add(i, call_id=f"c{i}", name="read_file", arguments="{}")
    assert all(isinstance(o, tk.ToolCall) for o in asm.finish("tool_calls"))
    asm = Assembler()
    for i in range(200_000):
        asm.add(i, call_id=f"c{i}", name="read_file", arguments="{}")
    assert len(asm.buffers) == MAX_OPEN_CALLS
    out = asm.finish("tool_calls")
    assert len(out) == MAX_OPEN_CALLS and {o.code for o in out} == {"too_large"}
    assert "MAX_OPEN_CALLS" in out[0].errors[0].message and str(MAX_OPEN_CALLS) in out[0].errors[0].expected


def test_two_hundred_thousand_indexes_through_the_readers_hold_at_most_the_cap():
    events = [openai_chunk([{"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": "{}"}}])
              for i in range(200_000)]
    reader = OpenAIStream()
    out = reader.feed("".join(events[:MAX_OPEN_CALLS + 50]))
    assert len(reader.assembler.buffers) == MAX_OPEN_CALLS and {o.code for o in out} == {"too_large"}
    assert "MAX_OPEN_CALLS" in out[0].errors[0].message
    reader, read = OpenAIStream(), 0
    for event in events:                                 # one event per chunk, as a server sends them
        if reader.done:
            break
        reader.feed(event)
        read += 1
    assert read == MAX_OPEN_CALLS + 1                    # it stopped reading at the cap
    starts = "".join(f'event: content_block_start\ndata: {{"type": "content_block_start", "index": {i}, '
                     f'"content_block": {{"type": "text", "text": ""}}}}\n\n' for i in range(MAX_OPEN_CALLS + 50))
    reader = AnthropicStream()
    out = reader.feed(starts)
    assert len(reader.blocks) == MAX_OPEN_CALLS and [o.code for o in out] == ["too_large"]


def test_problems_with_one_call_are_capped_and_one_more_breaks_the_stream():
    asm = Assembler()
    asm.add(0, call_id="c1", name="read_file", arguments="{}")
    asm.add(1, call_id="c2", name="read_file", arguments="{}")
    asm.close(0)
    for _ in range(10_000):
        asm.add(0, arguments=7)                         # after the close, and not text: two problems each time
    assert len(asm.buffers[0].errors) == MAX_ERRORS_PER_CALL
    out = asm.finish("tool_calls")
    assert [len(o.errors) for o in out] == [1, 1] and {o.code for o in out} == {"too_large"}
    assert "MAX_ERRORS_PER_CALL" in out[0].errors[0].message
    flood = "".join(openai_chunk([{"index": 0, "function": {"arguments": n}}]) for n in range(1000))
    reader = OpenAIStream()
    out = reader.feed(openai_chunk([{"index": 0, "id": "c1", "function": {"name": "f"}}]) + flood)
    assert [o.code for o in out] == ["too_large"] and reader.done
    many = [tk.ToolError("invalid_json", "$", f"problem {n}") for n in range(40)]
    listed = capped_errors(many, "$[0]")
    assert len(listed) == MAX_ERRORS_PER_CALL and listed[-1].received == 40
    assert "MAX_ERRORS_PER_CALL" in listed[-1].message


def test_one_event_holds_at_most_max_event_bytes_of_data():
    exact = "x" * (MAX_EVENT_BYTES - 3)
    [event] = SSEDecoder().feed(f"data: {exact}\ndata: ab\n\n")       # the joining newline counts too
    assert len(event.data.encode()) == MAX_EVENT_BYTES
    decoder = SSEDecoder()
    line = "data: " + "\u00e9" * 1000 + "\n"                           # 2000 bytes, 1000 characters
    with pytest.raises(StreamBroken) as broken:
        for _ in range(MAX_EVENT_BYTES // 2000 + 2):
            decoder.feed(line)
    assert broken.value.error.code == "too_large" and "MAX_EVENT_BYTES" in broken.value.error.message
    held = sum(len(d.encode()) + 1 for d in decoder._data)
    assert held <= MAX_EVENT_BYTES


def test_one_line_holds_at_most_about_max_event_bytes():
    decoder = SSEDecoder()
    with pytest.raises(StreamBroken) as broken:
        for _ in range(MAX_EVENT_BYTES // 4096 + 2):
            decoder.feed(": " + "c" * 4096)                             # a comment that never ends
    assert "MAX_EVENT_BYTES" in broken.value.error.message
    assert sum(map(len, decoder._partial)) <= MAX_EVENT_BYTES + 100
    out = list(anthropic_stream(["data: " + "x" * 4096] * (MAX_EVENT_BYTES // 4096 + 2)))
    assert [o.code for o in out] == ["too_large"]


def test_the_key_scanner_tracks_a_bounded_depth():
    asm = Assembler(max_chars=10 ** 7)
    deep = "[" * 100_000 + '{"hidden": 1}' + "]" * 100_000
    asm.add(0, call_id="c1", name="f", arguments='{"a": ' + deep + ', "b": {"c": 2}}')
    preview = asm.preview(0)
    assert len(asm.buffers[0].scanner.stack) <= MAX_DEPTH
    assert preview.keys == ("$.a", "$.b", "$.b.c")      # keys past MAX_DEPTH are not listed; later ones are


def test_listing_a_key_costs_no_comparison_with_every_key_listed_before(monkeypatch):
    """The preview was quadratic: each new key was looked up in a list of all earlier ones. Count the comparisons."""
    import toolkit._preview as preview_module

    compared = [0]

    class Pointer(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            compared[0] += 1
            return str.__eq__(self, other)

    real = preview_module.pointer_for
    monkeypatch.setattr(preview_module, "pointer_for", lambda path: Pointer(real(path)))
    n = 1500
    asm = Assembler()
    asm.add(0, call_id="c1", name="f", arguments="{" + ", ".join(f'"k{i}": 1' for i in range(n)) + "}")
    assert len(asm.preview(0).keys) == n
    assert compared[0] <= 2 * n, f"{compared[0]} comparisons for {n} keys"


def test_twenty_thousand_keys_are_listed_once_each_in_order():
    text = "{" + ", ".join(f'"k{i}": 1' for i in range(20_000)) + ', "k0": 2}'
    asm = Assembler()
    asm.add(0, call_id="c1", name="f", arguments=text)
    keys = asm.preview(0).keys
    assert len(keys) == 20_000 and keys[:2] == ("$.k0", "$.k1") and keys[-1] == "$.k19999"


# --------------------------------------------------------- 4. rounds that always pair
def spy_host():
    ran = []

    def tool(args, world):
        ran.append(args["path"])
        return {"ok": True}

    return tk.Host.of([tk.Tool(READ, tool), tk.Tool(WRITE, tool)]), ran


def test_a_round_refuses_calls_whose_ids_cannot_pair_and_every_item_gets_one_result():
    host, ran = spy_host()
    preview_source = Assembler()
    preview_source.add(0, call_id="p1", name="read_file", arguments='{"pa')
    ids = [None, "", 7, "x" * (MAX_CALL_ID_CHARS + 1), "dup", "dup", "ok", "?0"]
    items = [tk.ToolCall("read_file", {"path": f"f{n}"}, cid) for n, cid in enumerate(ids)]
    preview = preview_source.preview(0)
    items.append(preview)
    report = run_round(items, host)
    assert sorted(ran) == ["f6", "f7"]                                     # only "ok" and "?0" ran
    assert len(report.results) == len(items)
    result_ids = [r.call_id for r in report.results]
    assert all(isinstance(i, str) and i for i in result_ids)
    assert [r.reason for r in report.results[:6]] == ["invalid_call"] * 4 + ["duplicate_call_id"] * 2
    assert result_ids[4:] == ["dup", "dup", "ok", "?0", preview.call_id]
    placeholders = result_ids[:4]
    assert len(set(placeholders)) == 4 and not set(placeholders) & set(result_ids[4:])
    asked = ["dup", "ok", "?0", preview.call_id]                          # the ids the model can be answered on
    assert pairing_problems(asked, [r.call_id for r in report.answers()]) == []
    assert len(report.results[3].errors[0].received) <= 80                 # a huge id is not echoed whole


def test_a_round_of_more_than_the_cap_is_refused_whole():
    host, ran = spy_host()
    calls = [tk.request("read_file", {"path": f"f{i}"}, f"r{i}") for i in range(MAX_OPEN_CALLS + 1)]
    report = run_round(calls, host)
    assert ran == [] and len(report.results) == MAX_OPEN_CALLS + 1
    assert {r.reason for r in report.results} == {"too_large"}
    assert "MAX_OPEN_CALLS" in report.results[0].errors[0].message
    assert [r.call_id for r in report.answers()] == [c.call_id for c in calls]


# ----------------------------------------------------------- 5. a hung tool does not hold the round
def test_a_hung_call_times_out_its_dependents_are_cancelled_and_the_round_finishes():
    release = threading.Event()
    finished = []

    def tool(args, world):
        if args["path"] == "hang":
            release.wait(30)
        finished.append(args["path"])
        return {"ok": True}

    host = tk.Host.of([tk.Tool(READ, tool), tk.Tool(WRITE, tool)])
    calls = [tk.request("write_file", {"path": "hang"}, "w"), tk.request("read_file", {"path": "other"}, "r1"),
             tk.request("read_file", {"path": "hang"}, "r2")]
    try:
        report = run_round(calls, host, timeout=0.2)
    finally:
        release.set()
    assert [r.status for r in report.results] == [tk.Status.TIMEOUT, tk.Status.SUCCEEDED, tk.Status.CANCELLED]
    timeout = report.results[0].errors[0]
    assert (timeout.code, timeout.retryable) == ("timeout", False) and "may still finish" in timeout.message
    assert "w timed out" in report.results[2].errors[0].message
    assert "hang" not in finished[:1] and report.by_id()["r1"].ok


def test_a_late_result_of_a_timed_out_call_is_dropped():
    release, done = threading.Event(), threading.Event()

    def tool(args, world):
        release.wait(30)
        done.set()
        return {"late": True}

    host = tk.Host.of([tk.Tool(READ, tool)])
    report = run_round([tk.request("read_file", {"path": "a"}, "r")], host, timeout=0.1)
    release.set()
    assert done.wait(10)
    assert report.results[0].status is tk.Status.TIMEOUT and report.results[0].output is None


def test_a_tool_that_raises_system_exit_gives_a_failed_result_not_a_stuck_round():
    def tool(args, world):
        raise SystemExit(3)

    report = run_round([tk.request("read_file", {"path": "a"}, "r")], {"read_file": READ},
                       lambda call: tool(call.arguments, None), timeout=5)
    assert report.results[0].reason == "execution_failed" and "SystemExit" in report.results[0].errors[0].message


def test_a_hung_worker_does_not_keep_the_process_from_exiting(tmp_path):
    script = tmp_path / "hung.py"
    script.write_text(textwrap.dedent("""
        import threading
        import toolkit as tk
        from toolkit.wire import run_round

        READ = tk.Contract("read_file", "Read.", {"type": "object"}, reads=("file:{path}",))
        host = tk.Host.of([tk.Tool(READ, lambda args, world: threading.Event().wait())])   # never returns
        report = run_round([tk.request("read_file", {"path": "a"}, "r1")], host, timeout=0.2)
        print(report.results[0].status.value)
    """), encoding="utf-8")
    root = str(Path(tk.__file__).resolve().parent.parent)                 # this checkout's toolkit, not another
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=root,
                          env={**os.environ, "PYTHONPATH": root})
    assert (done.returncode, done.stdout.strip()) == (0, "timeout"), done.stderr


def test_a_secret_repeated_in_later_free_text_is_masked_in_every_preview():
    import json as _json
    from toolkit.kernel import Assembler

    text = _json.dumps({"password": "hunter2-zz-PW", "note": "the password is hunter2-zz-PW, keep it"})
    stream = Assembler()
    stream.add(0, call_id="c1", name="send_report")
    for i in range(0, len(text), 3):
        stream.add(0, arguments=text[i:i + 3])
        assert "hunter2" not in stream.previews()[0].text
    assert stream.previews()[0].text.endswith("keep it\"}")      # the rest of the text is still shown


def test_a_preview_with_too_many_secret_values_stops_showing_text():
    import json as _json
    from toolkit.kernel import Assembler
    from toolkit._caps import MAX_SECRETS_REMEMBERED
    from toolkit._preview import STOPPED

    values = {f"token_{i}": f"value-number-{i:05d}" for i in range(MAX_SECRETS_REMEMBERED + 2)}
    stream = Assembler()
    stream.add(0, call_id="c1", name="t", arguments=_json.dumps({**values, "note": "value-number-00001"}))
    shown = stream.previews()[0].text
    assert shown.endswith(STOPPED) and "value-number" not in shown
