"""What the scheduler buys: independent reads overlap, conflicting writes queue.

Run:  python benchmarks/bench_scheduler.py

Each tool call sleeps 0.2 s (a slow disk or a remote service). For k calls:

* k reads of different files should take about one call's time (aim: at
  most 1.2x of a single call);
* k writes to the same file must run one after another: about k calls' time (aim: at least
  0.9x of k calls, i.e. no overlap);
* the chapter's mixed round (read A, read B, write C, then read C) takes two
  calls' time: the read of C waits for the write.
"""
from __future__ import annotations

import time

import toolkit as tk
from toolkit.wire import RoundReport, run_round

DELAY = 0.2
WRITE_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"], "additionalProperties": False}
READ_SCHEMA = {"type": "object",
               "properties": {"path": {"type": "string", "description": "A path relative to the workspace."}},
               "required": ["path"], "additionalProperties": False}
READ_FILE = tk.Contract("read_file", "Read a file.", READ_SCHEMA, reads=("file:{path}",))
WRITE_FILE = tk.Contract("write_file", "Replace a file.", WRITE_SCHEMA, writes=("file:{path}",))


def slow_host() -> tk.Host:
    files: dict[str, str] = {}

    def read(args: dict, world: object) -> dict:
        time.sleep(DELAY)
        return {"text": files.get(args["path"], "")}

    def write(args: dict, world: object) -> dict:
        time.sleep(DELAY)
        files[args["path"]] = args["content"]
        return {"bytes": len(args["content"])}

    host = tk.Host.of([tk.Tool(READ_FILE, read), tk.Tool(WRITE_FILE, write)])
    for contract in (READ_FILE, WRITE_FILE):
        contract.validator  # compile the schemas before timing anything
    return host


def timed(calls: list[tk.ToolCall], host: tk.Host, **options) -> tuple[float, RoundReport]:
    start = time.perf_counter()
    report = run_round(calls, host, **options)
    return time.perf_counter() - start, report


def main() -> None:
    host = slow_host()
    one, _ = timed([tk.request("read_file", {"path": "a"}, "r")], host)
    print(f"one call alone: {one:.3f} s")
    worst_reads, best_writes = 0.0, float("inf")
    print(f"{'k':>3} {'k reads':>10} {'/ one':>7} {'k writes, same file':>21} {'/ (k x one)':>12} {'waves':>6}")
    for k in (2, 4, 8):
        reads = [tk.request("read_file", {"path": f"f{i}"}, f"r{i}") for i in range(k)]
        writes = [tk.request("write_file", {"path": "same.txt", "content": str(i)}, f"w{i}") for i in range(k)]
        t_reads, r_report = timed(reads, host, max_workers=k)
        t_writes, w_report = timed(writes, host, max_workers=k)
        assert all(r.ok for r in r_report.results + w_report.results)
        worst_reads, best_writes = max(worst_reads, t_reads / one), min(best_writes, t_writes / (k * one))
        print(f"{k:>3} {t_reads:>9.3f}s {t_reads / one:>6.2f}x {t_writes:>20.3f}s {t_writes / (k * one):>11.2f}x "
              f"{r_report.plan.depth:>3}/{w_report.plan.depth}")
    mixed = [tk.request("read_file", {"path": "A"}, "read_A"), tk.request("read_file", {"path": "B"}, "read_B"),
             tk.request("write_file", {"path": "C", "content": "c"}, "write_C"),
             tk.request("read_file", {"path": "C"}, "read_C")]
    t_mixed, report = timed(mixed, host)
    print(f"read A, read B, write C, read C: {t_mixed:.3f} s = {t_mixed / one:.2f} calls' time, "
          f"waves {report.plan.waves}")
    print(f"RESULT scheduler_k_reads_vs_one {worst_reads:.2f} aim<=1.2 {'ok' if worst_reads <= 1.2 else 'missed'}")
    print(f"RESULT scheduler_k_writes_vs_k_calls {best_writes:.2f} aim>=0.9 "
          f"{'ok' if best_writes >= 0.9 else 'missed'}")


if __name__ == "__main__":
    main()
