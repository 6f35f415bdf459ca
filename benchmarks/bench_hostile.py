"""The worst a single hostile request costs the host: time and peak memory of one ``Host.check`` / ``Host.execute``.

    python benchmarks/bench_hostile.py

Measured over model-shaped input of the kinds ``tests/test_host_properties.py`` generates, at their largest:
a tool name of 10 million characters (ASCII and not), a bytes name, a call id of 10 million characters, argument
documents just under the 256 KB cap (one long text, 36,000 array items that each break a pattern, 15,000
unexpected keys, the same as JSON text, deep nesting), documents and text over the cap, 256 KB of ``[``, 250 KB
of text that is not JSON (escaped quotes; secret fields cut off), a 4,000-digit number, lone surrogates, NaN, and
a legal call whose tool fails with a long message full of secrets.

The MCP boundary (chapter 09) gets its own lines: hostile listed schemas, adopted as ``McpHost``
adopts them (a ``$ref`` to a socket that never answers, to a file, to itself; a pattern RE2 cannot
run; 1,200 patterns just under ``MAX_SCHEMA_BYTES``, 10,000 over it), the worst
patterns (``^(a+)+$``, ``(.*a){20}``, ``\\d+\\d+\\d+x``... on 250 KB), the worst remote answers (20
MB of text, 1.9 MB of structured content full of secrets), and the course's MCP server's memory
(RSS) after 10,000 reads of 65 KB. The hostile streams of ``bench_hostile_streams.py`` (the wire
readers) are measured here the same way, so that one line can name the worst schema, pattern,
remote answer and stream, with its time and memory, and the server's growth.

Each input is built before timing; each call is timed alone (best of 3 runs, so a stray pause of the machine is
not charged to the host), and then run once more under ``tracemalloc`` for the peak memory it allocated.
Aim: every call under 1 s and 50 MB on this machine. The line for the worst case names it.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

AIM_SECONDS, AIM_MB = 1.0, 50.0
CATASTROPHIC = (r"^(a+)+$", r"^(a|aa)+$", r"^(.*a){20}$", r"^(\w+\s?)*$", r"\d+\d+\d+x")


def host():
    import toolkit as tk
    from toolkit.kernel import Contract, ToolFailure
    from course.worlds import CREATE_INVOICE, Books

    partner = Contract("call_partner", "ask the partner API",
                       {"type": "object", "properties": {"q": {"type": "string", "pattern": r"^[a-z ]{1,20}$"},
                                                         "token": {"type": "string"},
                                                         "api_keys": {"type": "array",
                                                                      "items": {"type": "string", "pattern": "^k-"}}},
                        "required": ["q"], "additionalProperties": False})

    def careless(arguments, world):
        raise ToolFailure(tk.Status.FAILED, "partner_down", "partner said: " + json.dumps(arguments) * 50)

    books = Books(orders={"order-431": {"approved": True}})
    match = Contract("match", "a field under every classic catastrophic pattern",
                     {"type": "object", "properties": {"s": {"type": "string", "allOf": [
                         {"pattern": p} for p in CATASTROPHIC]}}})
    return tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue), tk.Tool(partner, careless),
                       tk.Tool(match, lambda arguments, world: "matched")],
                      caller=tk.Caller("agent", frozenset({"billing.write"})), world=books)


def cases() -> dict:
    """name -> a function building the (name, arguments, call id) to send; built before anything is measured."""
    cap = 256 * 1024
    ok = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "inv:431:v1"}

    def nested(depth):
        value = {"q": "deep"}
        for _ in range(depth):
            value = {"q": value}
        return value

    return {
        "name of 10M characters": lambda: ("x" * 10_000_000, ok, "c1"),
        "name of 10M non-ASCII characters": lambda: ("é" * 10_000_000, ok, "c1"),
        "bytes name of 10 MB": lambda: (b"x" * 10_000_000, ok, "c1"),
        "call id of 10M characters": lambda: ("create_invoice", ok, "c" * 10_000_000),
        "256 KB in one field": lambda: ("create_invoice", {**ok, "order_id": "x" * (cap - 200)}, "c1"),
        "36,000 items breaking a pattern": lambda: ("call_partner", {"q": "status", "api_keys": ["sk-x"] * 36_000},
                                                    "c1"),
        "15,000 unexpected keys": lambda: ("create_invoice", {**ok, **{f"k{i:05}": i for i in range(15_000)}}, "c1"),
        "250 KB of JSON text, 31,000 bad items": lambda: ("call_partner", json.dumps(
            {"q": "status", "api_keys": ["sk-x"] * 31_000}), "c1"),
        "15,000 unexpected keys as JSON text": lambda: ("create_invoice", json.dumps(
            {**ok, **{f"k{i:05}": i for i in range(15_000)}}), "c1"),
        "over the cap: 40,000 items": lambda: ("call_partner", {"q": "status", "api_keys": ["sk-x"] * 40_000}, "c1"),
        "nesting 31 deep": lambda: ("call_partner", nested(30), "c1"),
        "nesting 10,000 deep": lambda: ("call_partner", nested(10_000), "c1"),
        "text over the cap": lambda: ("call_partner", "x" * (cap + 1), "c1"),
        "256 KB of [": lambda: ("call_partner", "[" * cap, "c1"),
        "250 KB of escaped quotes, not JSON": lambda: ("call_partner", '"\\' * 125_000, "c1"),
        "250 KB of secret fields, cut off": lambda: ("call_partner", '{"password": "hunter2", ' * 10_000, "c1"),
        "a 4,000-digit number": lambda: ("create_invoice", '{"amount": 1' + "0" * 4000 + "}", "c1"),
        "a number of 5,000 digits in a dict": lambda: ("create_invoice", {**ok, "amount": 10 ** 5000}, "c1"),
        "40,000 lone surrogates": lambda: ("call_partner", {"q": "\ud83d" * 40_000}, "c1"),
        "NaN": lambda: ("create_invoice", {**ok, "amount": float("nan")}, "c1"),
        "catastrophic patterns on 250 KB": lambda: ("match", {"s": "a" * 250_000 + "!"}, "c1"),
        "catastrophic patterns on 250 KB of digits": lambda: ("match", {"s": "1" * 250_000}, "c1"),
        "a tool failing with 200 KB of secrets": lambda: ("call_partner", {"q": "status", "token": "t" * 4000}, "c1"),
        "an argument key of 10M characters": lambda: ("call_partner", {"q": "x", "k" * 10**7: 1},
                                                      "c1"),
        "an argument key of 10M non-ASCII": lambda: ("call_partner", {"q": "x", "é" * 10**7: 1},
                                                     "c1"),
    }


def measure(build, method: str) -> tuple[float, float, str]:
    """(best seconds, peak MB, outcome) of one call of ``host().<method>`` on the input ``build`` makes."""
    import toolkit as tk

    name, arguments, call_id = build()
    call = tk.ToolCall(name, arguments, call_id)
    times, outcome = [], ""
    for _ in range(3):
        target = host()
        started = time.perf_counter()
        try:
            answer = getattr(target, method)(call)
        except Exception as exc:   # what the host promises never to do; reported, not hidden
            answer, outcome = None, f"raised {type(exc).__name__}"
        times.append(time.perf_counter() - started)
    if answer is not None:
        errors = answer.errors
        outcome = (answer.status.value if method == "execute" else f"legal={answer.legal}") + \
            (f" {errors[0].code}" if errors else "")
    target = host()
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    try:
        getattr(target, method)(call)
    except Exception:
        pass
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    return min(times), peak / 1e6, outcome


def timed(work) -> tuple[float, float, str]:
    """(best seconds of 3, peak MB, outcome) of ``work()``: its answer or what it raised."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        try:
            outcome = str(work())[:60]
        except Exception as exc:   # a refusal is an outcome here
            outcome = f"raised {type(exc).__name__}: {str(exc)[:60]}"
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    with contextlib.suppress(Exception):
        work()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return min(times), peak / 1e6, outcome


def hostile_schemas(url: str) -> dict:
    """Schemas a server may list, each adopted as ``McpHost`` adopts it (left out, or compiled)."""
    def obj(properties: dict, **more) -> dict:
        return {"type": "object", "properties": properties, **more}
    return {
        "a $ref to a silent socket (adopt)": obj({"a": {"$ref": url}}),
        "a $ref to a file (adopt)": obj({"a": {"$ref": "file:///etc/passwd"}}),
        "a $ref to itself (adopt)": obj({"a": {"$ref": "#/properties/a"}}),
        "a pattern RE2 cannot run (adopt)": obj({"a": {"type": "string", "pattern": r"^(a)\1$"}}),
        "1,200 patterns, 62 KB (adopt)": obj(
            {f"p{i}": {"type": "string", "pattern": f"^(a+)+{i}$"} for i in range(1_200)}),
        "10,000 patterns, 540 KB (adopt)": obj(
            {f"p{i}": {"type": "string", "pattern": f"^(a+)+{i}$"} for i in range(10_000)}),
    }


def stream_rows() -> list[tuple[str, float, float]]:
    """The hostile streams of bench_hostile_streams.py, each measured as the calls are here."""
    from bench_hostile_streams import CASES

    rows = [(label, *timed(run)) for label, run in CASES.items()]
    for label, seconds, mb, outcome in rows:
        print(f"{label[:40]:<40} {'stream':<8} {seconds:>8.3f} {mb:>8.1f}  {outcome[:40]}")
    return [(label, seconds, mb) for label, seconds, mb, _ in rows]


def mcp_rows() -> tuple[list[tuple[str, float, float]], float]:
    """The MCP boundary's worst cases: a schema, answers, the course's server over 10,000 reads."""
    import gc
    import socket
    import tempfile

    import psutil
    from mcp import types

    from toolkit.mcp import adopt_tool, answer_call, remote_output, serving_host

    rows = []
    with socket.create_server(("127.0.0.1", 0)) as silent:   # accepts, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/schema.json"
        for label, schema in hostile_schemas(url).items():   # the listing as the SDK read it
            tool = types.Tool(name="t", input_schema=schema)
            rows.append((label, *timed(lambda: adopt_tool(tool))))
    text = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 20_000_000)])
    rows.append(("a 20 MB text answer", *timed(lambda: remote_output(text))))
    secrets = {f"field{i}": {"token": "t" * 40, "note": "sk-" + "a" * 40, "n": i}
               for i in range(14_000)}
    structured = types.CallToolResult(content=[], structured_content=secrets)
    rows.append(("1.9 MB of structured secrets", *timed(lambda: len(remote_output(structured)))))
    for label, seconds, mb, outcome in rows:
        print(f"{label:<40} {'mcp':<8} {seconds:>8.3f} {mb:>8.1f}  {outcome}")
    with tempfile.TemporaryDirectory() as folder:
        with open(f"{folder}/big.txt", "w", encoding="utf-8") as big:
            big.write("line of text\n" * 5_000)
        host, process = serving_host(folder), psutil.Process()
        answer_call(host, "read_file", {"path": "big.txt"}, "mcp_0")
        gc.collect()
        before = process.memory_info().rss
        started = time.perf_counter()
        for n in range(1, 10_001):
            answer_call(host, "read_file", {"path": "big.txt"}, f"mcp_{n}")
        seconds = time.perf_counter() - started
        gc.collect()
        grown = (process.memory_info().rss - before) / 1e6
    label = "MCP server: 10,000 reads of 65 KB"
    print(f"{label:<40} {'serve':<8} {seconds:>8.3f} {grown:>8.1f}  RSS growth")
    print(f"RESULT mcp_server_rss_growth_mb_after_10000_reads {grown:.1f} aim<={AIM_MB:g} "
          f"{'ok' if grown <= AIM_MB else 'missed'}")
    return [(label, seconds, mb) for label, seconds, mb, _ in rows], grown


def main() -> int:
    host().check  # import everything (jsonschema, regress) before timing
    import toolkit as tk

    host().check(tk.ToolCall("create_invoice", {}, "warm-up"))
    rows = []
    print(f"{'input':<40} {'call':<8} {'seconds':>8} {'peak MB':>8}  outcome")
    for label, build in cases().items():
        for method in ("check", "execute"):
            seconds, mb, outcome = measure(build, method)
            rows.append((label, method, seconds, mb))
            print(f"{label:<40} {method:<8} {seconds:>8.3f} {mb:>8.1f}  {outcome}")
    kinds = {"pattern": [r for r in rows if "pattern" in r[0]]}
    slowest = max(rows, key=lambda r: r[2])
    largest = max(rows, key=lambda r: r[3])
    print(f"slowest: {slowest[0]} ({slowest[1]}); largest: {largest[0]} ({largest[1]})")
    print(f"RESULT hostile_worst_call_seconds {slowest[2]:.3f} aim<={AIM_SECONDS:g} "
          f"{'ok' if slowest[2] <= AIM_SECONDS else 'missed'}")
    print(f"RESULT hostile_worst_call_mb {largest[3]:.1f} aim<={AIM_MB:g} {'ok' if largest[3] <= AIM_MB else 'missed'}")
    mcp, grown = mcp_rows()
    kinds["schema"] = [(label, "mcp", s, mb) for label, s, mb in mcp if "(adopt)" in label]
    kinds["remote answer"] = [(label, "mcp", s, mb) for label, s, mb in mcp
                              if "(adopt)" not in label]
    kinds["stream"] = [(label, "stream", s, mb) for label, s, mb in stream_rows()]
    worst = []
    for kind, found in kinds.items():
        slow, big = max(found, key=lambda r: r[2]), max(found, key=lambda r: r[3])
        worst.append(f"{kind} {slow[2]:.3f} s ({slow[0]}), {big[3]:.1f} MB ({big[0]})")
        name = kind.replace(" ", "_")
        print(f"RESULT hostile_worst_{name}_seconds {slow[2]:.3f} aim<={AIM_SECONDS:g} "
              f"{'ok' if slow[2] <= AIM_SECONDS else 'missed'}")
        print(f"RESULT hostile_worst_{name}_mb {big[3]:.1f} aim<={AIM_MB:g} "
              f"{'ok' if big[3] <= AIM_MB else 'missed'}")
    print("worst of each kind: " + "; ".join(worst) +
          f"; the MCP server after 10,000 reads of 65 KB: {grown:+.1f} MB of RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
