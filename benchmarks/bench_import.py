"""How long a fresh interpreter takes to `import toolkit`, against `import pydantic, jsonschema`.

    python benchmarks/bench_import.py [--runs 9]

Each statement runs in its own new interpreter (``python -c ...``), interleaved, several
times; the median wall time is kept. ``python -c pass`` is timed too, so the report shows
both the whole command and the import alone (command minus bare start-up).
Aim: importing the toolkit costs at most 1.2x importing the two libraries it builds on.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AIM = 1.2
STATEMENTS = {"bare start-up": "pass", "toolkit": "import toolkit",
              "pydantic+jsonschema": "import pydantic, jsonschema"}


def wall(statement: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True, cwd=ROOT)
    return time.perf_counter() - started


def measure(runs: int) -> dict[str, float]:
    for statement in STATEMENTS.values():  # warm the file cache and the bytecode caches once
        wall(statement)
    samples: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(runs):
        for name, statement in STATEMENTS.items():
            samples[name].append(wall(statement))
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="cold import time of toolkit vs pydantic + jsonschema")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    median = measure(args.runs)
    bare = median["bare start-up"]
    print(f"median of {args.runs} fresh interpreters ({sys.version.split()[0]}):")
    for name, seconds in median.items():
        extra = "" if name == "bare start-up" else f"   import alone {1000 * (seconds - bare):7.1f} ms"
        print(f"  {name:<20} {1000 * seconds:7.1f} ms{extra}")
    whole = median["toolkit"] / median["pydantic+jsonschema"]
    alone = (median["toolkit"] - bare) / max(median["pydantic+jsonschema"] - bare, 1e-9)
    verdict = "meets" if whole <= AIM else "MISSES"
    print(f"ratio toolkit / (pydantic+jsonschema): whole command {whole:.2f}x, import alone {alone:.2f}x"
          f" -> {verdict} the aim of <= {AIM}x")
    print(f"RESULT import_ratio {whole:.3f} aim<={AIM} {'ok' if whole <= AIM else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
