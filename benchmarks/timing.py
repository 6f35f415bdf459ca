"""Shared timing helper for the benchmarks (run them as scripts: ``python benchmarks/bench_x.py``)."""
from __future__ import annotations

import statistics
import timeit


def time_each(cases: dict, repeat: int, number: int) -> dict[str, tuple[float, float]]:
    """name -> (best, median) seconds per call over ``repeat`` interleaved batches of ``number`` calls.

    Interleaving the cases batch by batch spreads any background load evenly over them,
    so their ratio is fairer than timing one case after the other.
    """
    batches: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            batches[name].append(timeit.timeit(fn, number=number) / number)
    return {name: (min(b), statistics.median(b)) for name, b in batches.items()}
