"""The first verdict in a fresh interpreter, against importing the toolkit and validating one pydantic model.

    python benchmarks/bench_first_verdict.py [--runs 5]

Every chapter and every notebook under nbval pays for its first ``host.check`` once. Each statement below runs in
its own new interpreter, interleaved, ``--runs`` times; the median wall time is kept, minus a bare start-up.
Aim: the first verdict (``import toolkit``, build the ``create_invoice`` host, one check) within 2x the reference
(``import toolkit`` plus one pydantic model validation).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AIM = 2.0
FIRST_VERDICT = """
import toolkit as tk
from course.worlds import CREATE_INVOICE, Books
books = Books(orders={"order-431": {"approved": True}})
host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], tk.Caller("agent", frozenset({"billing.write"})), books)
verdict = host.check(tk.request("create_invoice", {"order_id": "order-431", "amount": 100, "currency": "EUR",
                                                   "idempotency_key": "invoice:order-431:v1"}))
assert verdict.legal == 1
"""
REFERENCE = """
import toolkit
import pydantic
class Invoice(pydantic.BaseModel):
    order_id: str
    amount: float
    currency: str
    idempotency_key: str
Invoice.model_validate({"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "k"})
"""
STATEMENTS = {"bare start-up": "pass", "first verdict": FIRST_VERDICT, "toolkit + pydantic model": REFERENCE}


def wall(statement: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True, cwd=ROOT)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    for statement in STATEMENTS.values():       # warm the file and bytecode caches once
        wall(statement)
    samples: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(args.runs):
        for name, statement in STATEMENTS.items():
            samples[name].append(wall(statement))
    median = {name: statistics.median(values) for name, values in samples.items()}
    bare = median["bare start-up"]
    verdict, reference = median["first verdict"] - bare, median["toolkit + pydantic model"] - bare
    for name, value in median.items():
        print(f"  {name:<26} {value * 1000:8.1f} ms (median of {args.runs})")
    ratio = verdict / reference
    print(f"first verdict {verdict * 1000:.0f} ms, reference {reference * 1000:.0f} ms (start-up removed)")
    print(f"RESULT first_verdict_vs_reference {ratio:.2f} aim<={AIM} {'ok' if ratio <= AIM else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
