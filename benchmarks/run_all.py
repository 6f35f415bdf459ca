"""Run every benchmark in this folder (bench_*.py), one after the other, and sum up their RESULT lines.

    python benchmarks/run_all.py

Benchmarks are not tests: they print what they measure and always exit 0 when they ran;
a missed aim is reported, not failed. Each runs in its own interpreter. The list is every
``bench_*.py`` here (import, legality, ledger, ledger_storm, streaming, hostile_streams, scheduler,
read_file, backoff, browser, ...): a new benchmark joins by its file name.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    results, broken = [], []
    for name in sorted(p.name for p in HERE.glob("bench_*.py")):
        print(f"=== {name}", flush=True)
        done = subprocess.run([sys.executable, str(HERE / name)], cwd=HERE.parent, capture_output=True, text=True)
        print(done.stdout, end="")
        if done.returncode != 0:
            print(done.stderr, end="", file=sys.stderr)
            broken.append(name)
        results += [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    print("=== summary")
    for line in results:
        print("  " + line.removeprefix("RESULT "))
    if broken:
        print("benchmarks that crashed: " + ", ".join(broken), file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
