"""Chapter 06: a retry policy walked to its end: every decision ``step`` makes when every retry fails.

    walk(policy) = step, step, ... until the step that escalates      plan(policy) = the waits on the way

From ``(0, d0)`` with ``d0 = 1``, ``beta = 2`` and ``n_max = 4`` the waits are ``[1, 2, 4, 8]``, then escalation.
Built on ``toolkit.kernel.backoff.step`` alone; the panels and the thundering-herd measurements read it.
"""
from __future__ import annotations

import random

from toolkit.kernel.backoff import RetryDecision, RetryPolicy, RetryState, step


def walk(policy: RetryPolicy, start: RetryState | None = None, seed: int | None = 0) -> list[RetryDecision]:
    """Every decision from ``start`` (default ``(0, d0)``) when every retry fails: the retries, then escalation."""
    rng = random.Random(seed)
    decisions = [step(start or policy.start(), policy, rng)]
    while decisions[-1].retry:
        decisions.append(step(decisions[-1].state, policy, rng))
    return decisions


def plan(policy: RetryPolicy, start: RetryState | None = None, seed: int | None = 0) -> list[float]:
    """The waits a policy grants before escalating, e.g. ``[1, 2, 4, 8]``."""
    return [d.wait for d in walk(policy, start, seed) if d.retry]
