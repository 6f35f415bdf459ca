"""Chapter 06: exercise 06's given planner: the waits a backoff step grants from the first failure.

The student writes the step (escalate at the ceiling, otherwise one more retry
and a longer delay) and the host's veto. Running a step until it escalates is
plumbing, so it is given here: ``planned_waits(step, d0, beta, n_max)`` starts
at ``(n, d) = (0, d0)``, applies ``step(n, d, beta, n_max)`` and lists the
delay of every state a retry was granted from. A step that never escalates is
stopped after ``MAX_PLANNED`` grants, so a wrong answer cannot loop for ever.
"""
from __future__ import annotations

from typing import Any, Callable

MAX_PLANNED = 1000     # grants at most: a step that never escalates is cut off here


def planned_waits(step: Callable[..., Any], d0: float, beta: float, n_max: int) -> list[float]:
    """The waits ``step`` grants from the first failure until it escalates (at most ``MAX_PLANNED``)."""
    granted: list[float] = []
    n, d = 0, d0
    while len(granted) < MAX_PLANNED:
        action, (n_next, d_next) = step(n, d, beta, n_max)
        if action == "escalate":
            break
        granted.append(d)
        n, d = n_next, d_next
    return granted


__all__ = ["MAX_PLANNED", "planned_waits"]
