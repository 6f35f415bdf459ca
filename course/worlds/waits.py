"""Chapter 06: the waits a retry policy produces, seen from outside: one client's plan, and a crowd's.

For one client, ``plan_rows`` lays the controller's run out as a table: the
planned delay ``d`` of each retry beside the wait actually drawn (they are
equal without jitter). For many clients failing together, ``jitter_waits``
draws every client's waits under each jitter variant, ``arrival_times`` says
when each retry lands, and ``peak_load`` counts the worst wave: without
jitter the whole crowd comes back at the same instants.

Everything comes from ``toolkit.kernel.backoff``'s pure ``step``, the one the host runs: ``walk`` takes
every step a policy makes when every retry fails, ``plan`` lists the waits on the way. Randomness is
seeded, so a notebook prints the same numbers on every run.
"""
from __future__ import annotations

from dataclasses import replace
from itertools import accumulate
from typing import Sequence

import random

from toolkit.kernel import Jitter, RetryDecision, RetryPolicy, RetryState, step


def walk(policy: RetryPolicy, start: RetryState | None = None, seed: int | None = 0) -> list[RetryDecision]:
    """Every decision from ``start`` (default ``(0, d0)``) when every retry fails: the retries, then escalation."""
    rng = random.Random(seed)
    decisions = [step(start or policy.start(), policy, rng)]
    while decisions[-1].retry:
        decisions.append(step(decisions[-1].state, policy, rng))
    return decisions


def plan(policy: RetryPolicy, start: RetryState | None = None, seed: int | None = 0) -> list[float]:
    """The waits a policy grants before escalating, e.g. ``[1, 2, 4, 8]`` from ``(0, d0)`` with ``d0 = 1``,
    ``beta = 2`` and ``n_max = 4``."""
    return [d.wait for d in walk(policy, start, seed) if d.retry]


def plan_rows(policy: RetryPolicy, seed: int = 0) -> list[dict]:
    """One row per granted retry: its number, the planned delay ``d``, the wait drawn, and the state after.

    ``d`` of retry ``k`` is the delay of the state it was granted from (capped
    by ``d_max``); without jitter the wait equals it.
    """
    rows, state = [], policy.start()
    for decision in walk(policy, seed=seed):
        if not decision.retry:
            break
        planned = state.d if policy.d_max is None else min(policy.d_max, state.d)
        rows.append({"retry": decision.state.n, "d": planned, "wait": decision.wait,
                     "after": str(decision.state)})
        state = decision.state
    return rows


def jitter_waits(policy: RetryPolicy, clients: int = 20, seed: int = 0) -> dict[str, list[list[float]]]:
    """For every jitter variant, the waits each client draws when every one of its retries fails.

    Client ``c`` draws from ``random.Random(seed + c)``, so every variant meets
    the same clients and a notebook prints the same numbers on every run.
    """
    return {j.value: [plan(replace(policy, jitter=j), seed=seed + c) for c in range(clients)] for j in Jitter}


def arrival_times(waits: Sequence[float]) -> list[float]:
    """When each retry arrives, counting from the first failure (attempts themselves take no time)."""
    return list(accumulate(waits))


def peak_load(waits_per_client: Sequence[Sequence[float]], window: float = 0.1) -> int:
    """The most retries, across all clients, that arrive within any ``window`` seconds of each other."""
    times = sorted(t for waits in waits_per_client for t in arrival_times(waits))
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] > window:
            start += 1
        best = max(best, end - start + 1)
    return best


__all__ = ["arrival_times", "jitter_waits", "peak_load", "plan", "plan_rows", "walk"]
