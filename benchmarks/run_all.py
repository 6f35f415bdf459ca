"""Run every benchmark in this folder (bench_*.py), one after the other, and sum up their RESULT lines.

    python benchmarks/run_all.py                    # all; results in artifacts/benchmarks.json
    python benchmarks/run_all.py --only import mcp  # bench_import.py and bench_mcp.py only
    python benchmarks/run_all.py --only class_hub --room   # and a room: 20 students apart (root)
    python scripts/write_readme_figures.py          # then README.md's table, from that file

Benchmarks are not tests: they print what they measure and always exit 0 when they ran;
a missed aim is reported, not failed. Each runs in its own interpreter. The list is every
``bench_*.py`` here (import, legality, ledger, ledger_storm, streaming, hostile_streams, scheduler,
read_file, backoff, browser, ...): a new benchmark joins by its file name. ``--room`` adds the
class hub with twenty students, one Unix user each (``bench_class_hub.py 20 --apart``): it takes
minutes, so only when asked.

Each ``RESULT name value aim<=X ok`` line a benchmark prints becomes one entry of the JSON file
(``--json PATH``, default ``artifacts/benchmarks.json``, which git ignores): ``{"results": {name:
{"value": ..., "aim": ..., "verdict": ...}}, "machine": {...}}``, the numbers as printed. The
machine's entry notes its load average when the run started: wall-clock figures (the hostile
calls, the browser, the class hub) run slower on a machine that is busy with other work.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE.parent / "artifacts" / "benchmarks.json"


def parse_result(line: str) -> tuple[str, dict[str, str]]:
    """``RESULT name value [aim...] [verdict]`` -> ``(name, {"value", "aim", "verdict"})``."""
    fields = line.removeprefix("RESULT ").split()
    name, rest = fields[0], fields[1:]
    aim = next((f.removeprefix("aim") for f in rest[1:] if f.startswith("aim")), "")
    verdict = rest[-1] if len(rest) > 1 and not rest[-1].startswith("aim") else ""
    return name, {"value": rest[0] if rest else "", "aim": aim, "verdict": verdict}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only bench_NAME.py")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where the results go")
    parser.add_argument("--room", action="store_true",
                        help="also the class hub with twenty students apart (minutes; as root)")
    options = parser.parse_args(argv)
    names = sorted(p.name for p in HERE.glob("bench_*.py"))
    if options.only:
        names = [n for n in names if n.removeprefix("bench_").removesuffix(".py") in options.only]
    runs = [[name] for name in names]
    if options.room:
        runs.append(["bench_class_hub.py", "20", "--apart"])
    results, broken, lines = {}, [], []
    # the machine's load when the run starts: other work slows the wall-clock figures
    load = round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None
    if options.only and options.json.is_file():     # a partial run updates the figures it measured
        results = json.loads(options.json.read_text(encoding="utf-8"))["results"]
    for name, *args in runs:
        print(f"=== {' '.join([name, *args])}", flush=True)
        done = subprocess.run([sys.executable, str(HERE / name), *args], cwd=HERE.parent,
                              capture_output=True, text=True)
        print(done.stdout, end="")
        if done.returncode != 0:
            print(done.stderr, end="", file=sys.stderr)
            broken.append(name)
        for line in done.stdout.splitlines():
            if line.startswith("RESULT "):
                lines.append(line)
                key, entry = parse_result(line)
                results[key] = {**entry, "benchmark": name}
    print("=== summary")
    for line in lines:
        print("  " + line.removeprefix("RESULT "))
    options.json.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "system": platform.system(),
               "cpus": os.cpu_count(), "load_at_start": load,
               "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    written = json.dumps({"machine": machine, "results": results}, indent=1)
    options.json.write_text(written + "\n", encoding="utf-8")
    print(f"results: {options.json}")
    if broken:
        print("benchmarks that crashed: " + ", ".join(broken), file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
