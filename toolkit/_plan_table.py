"""Chapter 08: a scheduler's plan as a small table, one line per call in wave order, then the refused items.

``Plan.text`` (``toolkit.kernel.scheduler``) reaches this module through ``plan_table`` alone; it draws
from ``Plan.rows``, so the table and the timeline plot show the same numbers.
"""
from __future__ import annotations

from typing import Any, Iterable


def plan_table(rows: list[dict[str, Any]], refused: Iterable[tuple[int, Any]]) -> str:
    """``wave  call  reads  writes  waits for``, sorted by wave (request order within one), then each refusal."""
    lines = [f"{'wave':<5} {'call':<24} {'reads':<22} {'writes':<22} waits for"]
    for row in sorted(rows, key=lambda r: r["wave"]):          # stable: request order within a wave
        call = f"{row['name']} #{row['call_id']}"
        lines.append(f"{row['wave']:<5} {call:<24} {', '.join(row['reads']) or '-':<22} "
                     f"{', '.join(row['writes']) or '-':<22} {'; '.join(row['waits_for']) or '-'}")
    lines += [f"{'-':<5} item {position} refused: {result.reason}" for position, result in refused]
    return "\n".join(lines)
