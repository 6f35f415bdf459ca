"""Hostile streams: the worst time and peak memory one stream can cost the wire readers.

Run:  python benchmarks/bench_hostile_streams.py

Each case is one stream a hostile (or broken) model or server might send, fed to the real readers
(``Assembler``, ``SSEDecoder``, ``OpenAIStream``, ``AnthropicStream``) the way a host would: chunk by
chunk, then the end of the body. For each, the time (wall clock, without tracing; the best of 3
runs, as ``bench_hostile.py`` times a call, so a stray pause of a busy machine is not charged) and
the peak of memory allocated while it is read (``tracemalloc``, in one more run; the input itself
is built beforehand and not counted) are printed. The cases include the two the hardening issue
measured: 20,000 keys in one preview (8.6 s before the fix) and 200,000 call indexes in one stream
(all accepted before the fix, now refused at ``MAX_OPEN_CALLS``). The 200,000-event cases cost what
200,000 JSON documents cost: about 4 to 6 microseconds each on a quiet machine, several times that
on a busy one; no cap limits the number of events, the reply deadline limits their time.

Aim: every case under 1 s and 50 MB on this machine. The RESULT lines give the worst case of each.

Four more cases run the whole live loop (``toolkit.live.run_task`` through the official ``openai``
SDK) against a scripted model server on 127.0.0.1 that never ends its reply. Streamed: one floods
text (4 KB per event, for ever), one sends an empty event every 50 ms (for ever). Not streamed:
one sends a JSON body whose text never ends (64 KB at a time), one sends a space every 50 ms. What
stops them is the host's ``MAX_REPLY_TEXT_CHARS``, ``MAX_REPLY_BODY_BYTES`` and ``REPLY_DEADLINE``
(2 s here); before those caps a flood grew the process by hundreds of MB and the endless replies
never returned. Aim: a flood within 10 s and 50 MB, an endless reply within its deadline plus 1 s
and 50 MB. Skipped when the ``openai`` SDK is missing.
"""
from __future__ import annotations

import contextlib
import gc
import json
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable, Iterator

from toolkit._caps import MAX_ARGUMENT_BYTES, MAX_EVENT_BYTES, MAX_OPEN_CALLS
from toolkit.wire import AnthropicStream, OpenAIStream, SSEDecoder, StreamBroken
from toolkit.kernel import Assembler

AIM_SECONDS, AIM_MB = 1.0, 50.0


def openai_event(pieces: list[dict], finish: str | None = None) -> str:
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": pieces} if pieces else {}, "finish_reason": finish}]}
    return "data: " + json.dumps(chunk) + "\n\n"


def anthropic_event(data: dict) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def read_all(reader, chunks: Iterable[str]) -> int:
    """Feed every chunk, then end the body; returns how many calls or refusals came out."""
    out = 0
    for chunk in chunks:
        out += len(reader.feed(chunk))
        if reader.done:
            break
    return out + len(reader.end())


# ------------------------------------------------------------------ the cases
def keys_in_one_preview(n: int = 20_000, secret: bool = False) -> Callable[[], object]:
    key = "token_{}" if secret else "k{}"
    text = "{" + ", ".join(f'"{key.format(i)}": "value {i}"' for i in range(n)) + "}"

    def run():
        asm = Assembler(max_chars=len(text))
        asm.add(0, call_id="c1", name="write_file", arguments=text)
        preview = asm.preview(0)
        assert len(preview.keys) == n
        return asm.finish("tool_calls")
    return run


def preview_every_fragment(size: int = MAX_ARGUMENT_BYTES, fragment: int = 100) -> Callable[[], object]:
    text = json.dumps({"path": "src/big.ts", "content": "export const a = 1; // sk-0123456789 " * (size // 40)})
    text = text[: size - 2] + '"}'
    parts = [text[i:i + fragment] for i in range(0, len(text), fragment)]

    def run():
        asm = Assembler()
        asm.add(0, call_id="c1", name="write_file")
        for part in parts:                       # a display that redraws after every fragment
            asm.add(0, arguments=part)
            asm.preview(0)
        return asm.finish("tool_calls")
    return run


def deep_nesting_preview(depth: int = MAX_ARGUMENT_BYTES // 2 - 20) -> Callable[[], object]:
    text = '{"a": ' + "[" * depth + "]" * depth + ', "b": 1}'

    def run():
        asm = Assembler()
        asm.add(0, call_id="c1", name="f", arguments=text)
        asm.preview(0)
        return asm.finish("tool_calls")
    return run


def many_indexes_openai(n: int = 200_000) -> Callable[[], object]:
    chunks = [openai_event([{"index": i, "id": f"call_{i}", "type": "function",
                             "function": {"name": "read_file", "arguments": "{}"}}]) for i in range(n)]
    chunks.append(openai_event([], "tool_calls"))
    return lambda: read_all(OpenAIStream(), chunks)


def many_indexes_assembler(n: int = 200_000) -> Callable[[], object]:
    def run():
        asm = Assembler()
        for i in range(n):
            asm.add(i, call_id=f"call_{i}", name="read_file", arguments="{}")
        return asm.finish("tool_calls")
    return run


def many_blocks_anthropic(n: int = 200_000) -> Callable[[], object]:
    chunks = [anthropic_event({"type": "content_block_start", "index": i,
                               "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": "read_file",
                                                 "input": {}}}) for i in range(n)]
    return lambda: read_all(AnthropicStream(), chunks)


def endless_event(total: int = 64 * 1024 * 1024, line: int = 64 * 1024) -> Callable[[], object]:
    """One event whose data lines never end (64 MB offered, in 64 KB chunks)."""
    chunk = "data: " + "x" * (line - 7) + "\n"
    return lambda: read_all(OpenAIStream(), (chunk for _ in range(total // line)))


def endless_line(total: int = 64 * 1024 * 1024, piece: int = 64 * 1024) -> Callable[[], object]:
    """One line that never ends (64 MB offered)."""
    chunk = "x" * piece
    return lambda: read_all(OpenAIStream(), ["data: "] + [chunk] * (total // piece))


def endless_name(n: int = 200_000) -> Callable[[], object]:
    chunks = [openai_event([{"index": 0, "id": "call_1", "function": {"name": "na" if i % 2 else "me"}}])
              for i in range(n)] + [openai_event([], "tool_calls")]
    return lambda: read_all(OpenAIStream(), chunks)


def error_flood(n: int = 200_000) -> Callable[[], object]:
    """One call sent 200,000 argument pieces that are not text: every one is a problem, kept or counted."""
    chunks = [openai_event([{"index": 0, "id": "call_1", "function": {"name": "f"}}])]
    chunks += [openai_event([{"index": 0, "function": {"arguments": i}}]) for i in range(n)]
    return lambda: read_all(OpenAIStream(), chunks + [openai_event([], "tool_calls")])


def max_size_arguments_sse(size: int = MAX_ARGUMENT_BYTES) -> Callable[[], object]:
    text = json.dumps({"path": "a", "content": "y" * size})
    parts = [text[i:i + 50] for i in range(0, len(text), 50)]
    chunks = [openai_event([{"index": 0, "id": "call_1", "function": {"name": "write_file", "arguments": ""}}])]
    chunks += [openai_event([{"index": 0, "function": {"arguments": p}}]) for p in parts]
    return lambda: read_all(OpenAIStream(), chunks + [openai_event([], "tool_calls")])


def event_flood(n: int = 200_000, text: bool = False) -> Callable[[], object]:
    """No cap limits how many events a stream sends: their cost is linear, one JSON document each."""
    ping = anthropic_event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ab"}}) \
        if text else anthropic_event({"type": "ping"})
    start = anthropic_event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    return lambda: read_all(AnthropicStream(), [start] + [ping] * n)


def garbage_bytes(size: int = 8 * 1024 * 1024) -> Callable[[], object]:
    body = bytes(range(256)) * (size // 256)

    def run():
        decoder = SSEDecoder()
        try:
            for i in range(0, len(body), 4096):
                decoder.feed(body[i:i + 4096])
        except StreamBroken as broken:
            return broken.error
        return None
    return run


CASES = {
    "20,000 keys in one preview": keys_in_one_preview(),
    "20,000 secret-named keys in one preview": keys_in_one_preview(secret=True),
    "256 KB arguments, a preview after each of 2,600 fragments": preview_every_fragment(),
    "131,000 levels of nesting in one preview": deep_nesting_preview(),
    "200,000 indexes (Assembler)": many_indexes_assembler(),
    "200,000 indexes (OpenAI stream)": many_indexes_openai(),
    "200,000 content blocks (Anthropic stream)": many_blocks_anthropic(),
    "64 MB of data lines in one event": endless_event(),
    "64 MB in one line": endless_line(),
    "a tool name sent in 200,000 pieces": endless_name(),
    "200,000 bad fragments for one call": error_flood(),
    "256 KB of arguments in 5,000 events": max_size_arguments_sse(),
    "8 MB of binary garbage": garbage_bytes(),
    "200,000 ping events (no cap on the number of events)": event_flood(),
    "200,000 text deltas (a long answer)": event_flood(text=True),
}


# ------------------------------------------------------------------ the live loop, against a model
LIVE_DEADLINE = 2.0


def _chunk(delta: dict) -> str:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    return f"data: {json.dumps(body)}\n\n"


@contextlib.contextmanager
def endless_model(event: Callable[[], str], first: str = "") -> Iterator[str]:
    """A chat-completions server on 127.0.0.1 sending ``first``, then ``event()`` until the client
    hangs up: server-sent events, or (``first`` given) one JSON body that never ends."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json" if first else "text/event-stream")
            self.end_headers()
            try:
                self.wfile.write(first.encode())
                while not stop.is_set():
                    self.wfile.write(event().encode())
            except OSError:            # the host closed the stream
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def live_reply(event: Callable[[], str], first: str = "") -> Callable[[], object]:
    """One run_task against a server sending ``event()`` for ever (streamed, or after ``first``,
    one JSON body); returns why the host stops."""
    def run():
        from toolkit.kernel import Host, make_read_file
        from toolkit.live import chat_for, endpoint_from, make_client, run_task

        with endless_model(event, first) as url:
            client = make_client(endpoint_from("openai", "m", url, environ={}), timeout=60)
            try:
                contracts = [make_read_file(".").contract]
                chat = chat_for("openai", client, "m", contracts, "t", stream=not first,
                                deadline=LIVE_DEADLINE)
                run = run_task(chat, Host.of([make_read_file(".")]), retries=0)
            finally:
                client.close()
        assert run.stop is not None, "the host never stopped the reply"
        return run.stop
    return run


def _slowly() -> str:
    time.sleep(0.05)
    return _chunk({})


def _flood() -> str:
    return _chunk({"content": "x" * 4096})


def _space() -> str:
    time.sleep(0.05)
    return " "


#: A completion's JSON up to the start of its text (the whole-body cases never close it).
WHOLE = '{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [' \
        '{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "'

LIVE_CASES = {   # name -> (label, run, aim in seconds)
    "live loop: a reply flooding text for ever": ("flood", live_reply(_flood), 10.0),
    f"live loop: a reply streaming for ever ({LIVE_DEADLINE:g} s deadline)": (
        "endless", live_reply(_slowly), LIVE_DEADLINE + 1.0),
    "live loop: a whole body of endless text (not streamed)": (
        "whole_flood", live_reply(lambda: "x" * 65_536, WHOLE), 10.0),
    f"live loop: a whole body dribbling for ever ({LIVE_DEADLINE:g} s deadline)": (
        "whole_endless", live_reply(_space, '{"id": "c",'), LIVE_DEADLINE + 1.0),
}


def measure(run: Callable[[], object], runs: int = 3) -> tuple[float, float]:
    """(best seconds of ``runs`` without tracing, peak MB allocated while tracing one more)."""
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    seconds = min(times)
    gc.collect()
    tracemalloc.start()
    try:
        run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return seconds, peak / 1e6


def main() -> None:
    print(f"caps: MAX_OPEN_CALLS={MAX_OPEN_CALLS}, MAX_EVENT_BYTES={MAX_EVENT_BYTES}, "
          f"MAX_ARGUMENT_BYTES={MAX_ARGUMENT_BYTES}")
    print(f"{'stream':<60} {'seconds':>8} {'peak MB':>8}")
    worst_time, worst_memory = ("", 0.0), ("", 0.0)
    for name, run in CASES.items():
        seconds, peak = measure(run)
        print(f"{name:<60} {seconds:>8.3f} {peak:>8.1f}", flush=True)
        worst_time = max(worst_time, (name, seconds), key=lambda x: x[1])
        worst_memory = max(worst_memory, (name, peak), key=lambda x: x[1])
    print(f"worst time: {worst_time[0]}; worst memory: {worst_memory[0]}")
    print(f"RESULT hostile_streams_worst_seconds {worst_time[1]:.2f} aim<={AIM_SECONDS:g} "
          f"{'ok' if worst_time[1] <= AIM_SECONDS else 'missed'}")
    print(f"RESULT hostile_streams_worst_peak_mb {worst_memory[1]:.1f} aim<={AIM_MB:g} "
          f"{'ok' if worst_memory[1] <= AIM_MB else 'missed'}")
    try:
        import openai  # noqa: F401 - only to know whether the live cases can run
    except ImportError:
        print("live loop cases skipped: the openai SDK is not installed")
        return
    for name, (label, run, aim) in LIVE_CASES.items():
        seconds, peak = measure(run, runs=1)
        print(f"{name:<60} {seconds:>8.3f} {peak:>8.1f}", flush=True)
        print(f"RESULT live_{label}_seconds {seconds:.2f} aim<={aim:g} "
              f"{'ok' if seconds <= aim else 'missed'}")
        print(f"RESULT live_{label}_peak_mb {peak:.1f} aim<={AIM_MB:g} "
              f"{'ok' if peak <= AIM_MB else 'missed'}")


if __name__ == "__main__":
    main()
