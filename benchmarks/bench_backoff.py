"""Backoff under contention: how much work each jitter variant of the controller wastes.

    python benchmarks/bench_backoff.py [--clients 100] [--trials 20]

A simulation, not a timing: ``clients`` callers fail at the same instant and all retry
against one server that serves one request per ``service`` seconds; a request that arrives
while the server is busy fails and the caller backs off with ``toolkit.kernel.backoff.step``
(d0 = 0.1 s, beta = 2, capped at 10 s, n_max = 60). Each trial seeds every caller's
``random.Random``, so the numbers repeat exactly. Reported per variant (mean over trials):

* attempts: total requests sent until every caller got through (the server's work);
* finish: simulated seconds until the last caller got through;
* escalated: callers that used up n_max and gave up.

Aim: full jitter sends at most half the attempts of un-jittered backoff (un-jittered callers
retry in lockstep, so every retry wave collides again).
"""
from __future__ import annotations

import argparse
import heapq
import random
import statistics

from toolkit.kernel import Jitter, RetryPolicy, step

AIM = 0.5


def contend(jitter: Jitter, clients: int, seed: int, service: float = 0.1) -> tuple[int, float, int]:
    """One trial: (attempts, finish time, escalated callers)."""
    policy = RetryPolicy(d0=0.1, beta=2, n_max=60, d_max=10, jitter=jitter)
    rngs = [random.Random(f"{seed}:{c}") for c in range(clients)]
    states = [policy.start() for _ in range(clients)]
    queue = [(0.0, c) for c in range(clients)]
    heapq.heapify(queue)
    busy_until, attempts, finish, escalated = 0.0, 0, 0.0, 0
    while queue:
        t, c = heapq.heappop(queue)
        attempts += 1
        if t >= busy_until:                       # the server is free: this caller gets through
            busy_until, finish = t + service, max(finish, t + service)
            continue
        decision = step(states[c], policy, rngs[c])
        if not decision.retry:
            escalated += 1
            continue
        states[c] = decision.state
        heapq.heappush(queue, (t + decision.wait, c))
    return attempts, finish, escalated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()
    print(f"{args.clients} callers, one server (0.1 s per request), {args.trials} seeded trials each")
    print(f"{'jitter':<13} {'attempts':>9} {'finish (s)':>11} {'escalated':>10}")
    means = {}
    for jitter in Jitter:
        runs = [contend(jitter, args.clients, seed) for seed in range(args.trials)]
        means[jitter] = tuple(statistics.mean(r[i] for r in runs) for i in range(3))
        attempts, finish, escalated = means[jitter]
        print(f"{jitter.value:<13} {attempts:>9.1f} {finish:>11.1f} {escalated:>10.1f}")
    ratio = means[Jitter.FULL][0] / means[Jitter.NONE][0]
    verdict = "ok" if ratio <= AIM else "missed"
    print(f"full jitter sends {ratio:.2f}x the attempts of un-jittered backoff (aim <= {AIM})")
    print(f"RESULT backoff_full_jitter_work_ratio {ratio:.2f} aim<={AIM} {verdict}")


if __name__ == "__main__":
    main()
