"""How streaming assembly scales: linear in the bytes, not in bytes x fragments.

Run:  python benchmarks/bench_streaming.py

Prints, for a write_file call whose arguments are about 1 MB of source text:

* assembling it from 10,000 fragments (collect, join once, strict parse)
  against one plain ``json.loads`` of the whole text (aim: at most 3x);
* how the time grows with the size, fitted over 0.25, 0.5, 1, 2 and 4 MB (same fragment size), against how
  ``json.loads`` itself grows over the same texts: json.loads is not perfectly linear on this machine either
  (caches), so the aim is that the assembler grows at most 1.15x as fast as json.loads over that range;
* re-parsing the whole buffer at every fragment, as lenient accumulators do,
  at growing sizes: its time grows with the square of the size;
* the same through the OpenAI server-sent-event reader, for context.

The argument cap (256 KB by default) is lifted for the measurement only.
"""
from __future__ import annotations

import gc
import json
import math
import time
from unittest import mock

from toolkit import _schema as schema
from toolkit.wire import OpenAIStream
from toolkit.kernel import Assembler

LINE = 'export const config = { "name": "demo", path: "src/config.ts", retries: 3 };\n'
FRAGMENT = 100   # characters per fragment: 1 MB arrives in about 10,000 fragments
BIG = 64 * 1024 * 1024


def arguments_text(size: int) -> str:
    content = (LINE * (size // len(LINE) + 1))[:size]
    return json.dumps({"path": "src/big.ts", "content": content})


def fragments(text: str, size: int = FRAGMENT) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def best(f, repeat: int = 15) -> float:
    """The fastest of ``repeat`` runs, in CPU seconds (other programs on the machine disturb it less).

    The cyclic garbage collector is paused while timing, as ``timeit`` does: its passes
    scale with everything alive in the process, not with the work being measured.
    """
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            f()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return min(times)


def collect(parts: list[str], repeat_ids: bool = False) -> Assembler:
    """Feed the fragments as OpenAI does: id and name on the first piece only (or, like some
    compatible servers, on every piece)."""
    asm = Assembler(max_chars=BIG)
    asm.add(0, call_id="call_1", name="write_file")
    if repeat_ids:
        for part in parts:
            asm.add(0, call_id="call_1", name="write_file", arguments=part)
    else:
        for part in parts:
            asm.add(0, arguments=part)
    return asm


def assemble(parts: list[str], repeat_ids: bool = False) -> None:
    [call] = collect(parts, repeat_ids).finish("tool_calls")
    assert call.arguments["path"] == "src/big.ts"


def collect_only(parts: list[str]) -> None:
    "".join(collect(parts).buffers[0].parts)


def reparse_every_fragment(parts: list[str]) -> None:
    """The quadratic way: after every fragment, join everything so far and try to parse it."""
    received: list[str] = []
    for part in parts:
        received.append(part)
        try:
            json.loads("".join(received))
        except ValueError:
            pass


def sse_body(parts: list[str]) -> str:
    head = '{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
    lines = [head + '{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":'
             '{"name":"write_file","arguments":""}}]},"finish_reason":null}]}']
    lines += [head + json.dumps({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) +
              ',"finish_reason":null}]}' for p in parts]
    lines.append(head + '{},"finish_reason":"tool_calls"}]}')
    return "".join(f"data: {line}\n\n" for line in lines) + "data: [DONE]\n\n"


def read_sse(body: str) -> None:
    reader = OpenAIStream(max_chars=BIG)
    out = reader.feed(body)
    assert len(out) == 1 and out[0].name == "write_file"


SIZES = (250_000, 500_000, 1_000_000, 2_000_000, 4_000_000)


def slope(sizes: tuple[int, ...], times: list[float]) -> float:
    """The least-squares exponent k in time ~ size**k (1 is linear)."""
    xs, ys = [math.log(s) for s in sizes], [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def growth_against_json_loads() -> tuple[float, float]:
    """Growth over SIZES (largest / smallest, from the fitted exponent) of the assembler and of json.loads."""
    texts = [arguments_text(size) for size in SIZES]
    pieces = [fragments(t) for t in texts]          # cut once, outside the timing: the server does that
    ours = [best(lambda: assemble(p), repeat=9) for p in pieces]
    theirs = [best(lambda: json.loads(t), repeat=9) for t in texts]
    span = SIZES[-1] / SIZES[0]
    for size, a, b in zip(SIZES, ours, theirs):
        print(f"  {size / 1e6:5.2f} MB  assemble {a * 1e3:8.2f} ms   json.loads {b * 1e3:7.2f} ms")
    return span ** slope(SIZES, ours), span ** slope(SIZES, theirs)


def verdict(name: str, value: float, aim: str) -> str:
    """The machine-readable line ``benchmarks/run_all.py`` collects."""
    op, bound = aim[:2], float(aim[2:])
    ok = value <= bound if op == "<=" else value >= bound
    return f"RESULT {name} {value:.2f} aim{aim} {'ok' if ok else 'missed'}"


def main() -> None:
    with mock.patch.object(schema, "MAX_ARGUMENT_BYTES", BIG):
        one, four = arguments_text(1_000_000), arguments_text(4_000_000)
        parts1, parts4 = fragments(one), fragments(four)
        loads1 = best(lambda: json.loads(one))
        asm1, asm4 = best(lambda: assemble(parts1)), best(lambda: assemble(parts4))
        collect1 = best(lambda: collect_only(parts1))
        strict1 = best(lambda: schema.parse_arguments(one))
        print(f"1 MB arguments, {len(parts1)} fragments of {FRAGMENT} characters")
        print(f"  json.loads of the whole text       {loads1 * 1e3:8.2f} ms")
        print(f"  assemble (collect + join + strict) {asm1 * 1e3:8.2f} ms   ratio {asm1 / loads1:5.2f}x  (aim <= 3x)")
        print(f"    of which collect + join          {collect1 * 1e3:8.2f} ms   ratio {collect1 / loads1:5.2f}x")
        print(f"    of which parse_arguments          {strict1 * 1e3:8.2f} ms   ratio {strict1 / loads1:5.2f}x")
        repeated = best(lambda: assemble(parts1, repeat_ids=True))
        print(f"  with id and name repeated in every fragment: {repeated * 1e3:6.2f} ms   "
              f"ratio {repeated / loads1:5.2f}x")
        print(f"4 MB arguments, {len(parts4)} fragments: 4 MB / 1 MB = {asm4 / asm1:4.2f}x; "
              f"json.loads itself {best(lambda: json.loads(four)) / loads1:4.2f}x")
        print("growth with size, fitted over 0.25-4 MB:")
        grow_ours, grow_theirs = growth_against_json_loads()
        print(f"  16x the bytes: assemble x{grow_ours:5.2f}, json.loads x{grow_theirs:5.2f}, "
              f"ratio {grow_ours / grow_theirs:4.2f} (aim <= 1.15)")

        print("re-parsing the whole buffer at every fragment (what lenient accumulators do):")
        previous, doublings = None, []
        for size in (50_000, 100_000, 200_000, 400_000):
            parts = fragments(arguments_text(size))
            slow = best(lambda: reparse_every_fragment(parts), repeat=3)
            ours = best(lambda: assemble(parts), repeat=5)
            growth = f"   x{slow / previous:4.1f} for 2x the bytes" if previous else ""
            print(f"  {size // 1000:4d} KB {len(parts):5d} fragments  re-parse {slow * 1e3:9.1f} ms   "
                  f"assemble {ours * 1e3:6.2f} ms   ({slow / ours:6.0f}x slower){growth}")
            if previous:
                doublings.append(slow / previous)
            previous = slow

        body1, body4 = sse_body(parts1), sse_body(parts4)
        sse1, sse4 = best(lambda: read_sse(body1), repeat=5), best(lambda: read_sse(body4), repeat=3)
        print(f"through the OpenAI SSE reader ({len(body1) / 1e6:.1f} MB of events for 1 MB of arguments):")
        print(f"  1 MB {sse1 * 1e3:8.2f} ms   ratio to json.loads {sse1 / loads1:5.1f}x   "
              f"(each of the 10,000 events is its own JSON document)")
        print(f"  4 MB {sse4 * 1e3:8.2f} ms   4 MB / 1 MB = {sse4 / sse1:4.2f}x")
        print(verdict("streaming_1mb_vs_json_loads", asm1 / loads1, "<=3"))
        print(verdict("streaming_growth_vs_json_loads", grow_ours / grow_theirs, "<=1.15"))
        print(verdict("streaming_reparse_growth_per_doubling", min(doublings), ">=3"))


if __name__ == "__main__":
    main()
