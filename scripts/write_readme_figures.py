"""The README's measured figures: a table written from a benchmark run, never by hand.

    python benchmarks/run_all.py                    # measures; writes artifacts/benchmarks.json
    python scripts/write_readme_figures.py          # rewrites README.md's table from that file
    python scripts/write_readme_figures.py --json PATH
    python scripts/write_readme_figures.py --check  # changes nothing; fails on a malformed table

The table sits between ``<!-- figures:begin -->`` and ``<!-- figures:end -->`` in README.md. Each
row of ``ROWS`` is one line of it: what is compared, the measured cell (a template filled with the
``RESULT`` values of ``benchmarks/run_all.py``'s JSON; a value the run did not measure shows as
"not measured"), and the aim. ``--check`` does not compare numbers with a fresh run (they are one
machine's figures); it checks that the markers, the header and every row are there, in order, each
with a measured cell and an aim, and the line that says where the figures come from.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DEFAULT_JSON = ROOT / "artifacts" / "benchmarks.json"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
HEADER = "| benchmark | measured | aim |\n|---|---|---|"
MISSING = "not measured"
SOURCE = ("Written by `python scripts/write_readme_figures.py` from one run of "
          "`python benchmarks/run_all.py`")

#: (what is compared, the measured cell's template, the aim): one row each, in this order.
ROWS = (
    ("`import toolkit` vs `import pydantic, jsonschema`", "{import_ratio}x", "at most 1.2x"),
    ("first verdict in a fresh interpreter vs `import toolkit` + one pydantic validation",
     "{first_verdict_vs_reference}x", "at most 2x"),
    ("full legality verdict vs bare pre-compiled `is_valid`", "{legality_ratio}x", "at most 1.5x"),
    ("keyed `call_atomic` vs bare INSERT per transaction (median of 5 interleaved rounds)",
     "{ledger_keyed_vs_bare_insert}x", "at most 1.3x"),
    ("ledger storm: worker processes killed with SIGKILL in the middle of their calls",
     "{ledger_storm_effects_per_key} effect per key, {ledger_storm_lost_results} lost, "
     "{ledger_storm_stuck_keys} stuck ({ledger_storm_keys} keys, {ledger_storm_kills} SIGKILLs)",
     "exactly 1, 0, 0"),
    ("read_file ladder vs realpath-then-open", "{read_file_ladder_ratio}x", "at most 3x"),
    ("streaming: 1 MB from 10,000 fragments vs `json.loads`", "{streaming_1mb_vs_json_loads}x",
     "at most 3x"),
    ("streaming: growth over 0.25-4 MB vs the growth of `json.loads`",
     "{streaming_growth_vs_json_loads}x", "at most 1.15x"),
    ("k parallel reads vs one call; k conflicting writes vs k calls",
     "{scheduler_k_reads_vs_one}x; {scheduler_k_writes_vs_k_calls}x",
     "at most 1.2x; at least 0.9x"),
    ("full jitter vs no jitter, attempts", "{backoff_full_jitter_work_ratio}x", "at most 0.5x"),
    ("worst hostile `Host.check`/`execute` call",
     "{hostile_worst_call_seconds} s, {hostile_worst_call_mb} MB", "under 1 s, 50 MB"),
    ("worst hostile stream",
     "{hostile_streams_worst_seconds} s, {hostile_streams_worst_peak_mb} MB", "under 1 s, 50 MB"),
    ("MCP round trip, course server vs the SDK's plain decorator server",
     "{mcp_round_trip_vs_plain_server}x", "at most 1.3x"),
    ("browser click-to-update, worst over 20 clicks per widget chapter (JupyterLab)",
     "{browser_click_to_update_worst_ms} ms", "at most 150 ms"),
    ("every notebook and solution under strict nbval vs as many one-cell notebooks, one worker",
     "{nbval_course_vs_one_cell}x for the course's own cells; the cells tagged `packaged-model` "
     "apart: {nbval_packaged_model_s} s of the model's time", "at most 1.6x"),
    ("a class on one hub: five students from spawn to everything stopped; memory per student",
     "{class_hub_cycle_5_students_s} s; {class_hub_student_rss_mib} MiB",
     "within 40 s; at most 256 MiB"),
)


class _Values(dict):
    def __missing__(self, key: str) -> str:
        return MISSING


def table(run: dict) -> str:
    """The text between the markers, from ``run`` (the JSON ``benchmarks/run_all.py`` writes)."""
    values = _Values({name: entry["value"] for name, entry in run["results"].items()})
    rows = []
    for what, measured, aim in ROWS:
        cell = measured.format_map(values)
        if cell.count(MISSING) == measured.count("{"):     # nothing of it measured in this run
            cell = MISSING
        rows.append(f"| {what} | {cell} | {aim} |")
    machine = run.get("machine", {})
    load = machine.get("load_at_start")
    busy = f", load average {load} when it started" if load is not None else ""
    source = (f"{SOURCE} ({machine.get('cpus', '?')} cores{busy}, "
              f"Python {machine.get('python', '?')}, finished {machine.get('finished', '?')}).")
    return "\n".join([HEADER, *rows, "", source])


def split(text: str) -> tuple[str, str, str]:
    """README.md as (before the table, the table, after it); ValueError without both markers."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"README.md needs one {BEGIN} and one {END}, in that order")
    before, rest = text.split(BEGIN)
    inside, after = rest.split(END)
    return before, inside.strip("\n"), after


def problems(inside: str) -> list[str]:
    """What is wrong with the table between the markers (empty when it is well formed)."""
    found = []
    if not inside.startswith(HEADER + "\n"):
        found.append("the header is not " + HEADER.splitlines()[0])
    lines = [line for line in inside.splitlines()[2:] if line.startswith("|")]
    if len(lines) != len(ROWS):
        found.append(f"{len(lines)} rows, not {len(ROWS)}")
    for (what, _, aim), line in zip(ROWS, lines):
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) != 3 or cells[0] != what or cells[2] != aim:
            found.append(f"row {line!r} is not | {what} | ... | {aim} |")
        elif not cells[1] or "{" in cells[1]:
            found.append(f"row {what!r} has no measured figure")
    if not re.search(re.escape(SOURCE) + r" \(.+\)\.$", inside, re.M):
        found.append("the line that names the run is missing")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON,
                        help="benchmarks/run_all.py's results")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; fail unless the table is well formed")
    options = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    before, inside, after = split(text)
    if options.check:
        found = problems(inside)
        for problem in found:
            print(f"README.md's figures: {problem}", file=sys.stderr)
        return 1 if found else 0
    if not options.json.is_file():
        print(f"{options.json} not found: run `python benchmarks/run_all.py` first",
              file=sys.stderr)
        return 2
    run = json.loads(options.json.read_text(encoding="utf-8"))
    README.write_text(f"{before}{BEGIN}\n{table(run)}\n{END}{after}", encoding="utf-8")
    print(f"README.md: figures from {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
