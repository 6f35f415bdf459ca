"""Chapter 06: jitter, the random part of a wait, drawn from the controller's delay ``d``.

Clients that fail together and wait exactly ``d`` come back together; jitter draws each wait around
``d`` instead (``toolkit.kernel.backoff`` reaches this module through ``jitter_wait`` alone):

    none           exactly d
    full           uniform on [0, d]
    equal          d/2 plus uniform on [0, d/2]
    decorrelated   uniform on [d0, 3 * previous wait], capped at d_max"""
from __future__ import annotations

import random
from enum import Enum


class Jitter(str, Enum):
    """How the actual wait is drawn from the exponential envelope ``d``."""

    NONE = "none"
    FULL = "full"
    EQUAL = "equal"
    DECORRELATED = "decorrelated"


def jitter_wait(jitter: Jitter, d: float, d0: float, d_max: float | None, last_wait: float | None,
                rng: random.Random | None) -> float:
    """The wait actually slept before the next attempt, drawn by ``jitter`` from the delay ``d``."""
    d = d if d_max is None else min(d_max, d)
    if jitter is Jitter.NONE:
        return d
    if rng is None:
        raise ValueError(f"jitter {jitter.value!r} needs a seeded random.Random")
    if jitter is Jitter.FULL:
        return rng.uniform(0.0, d)
    if jitter is Jitter.EQUAL:
        return d / 2 + rng.uniform(0.0, d / 2)
    wait = rng.uniform(d0, 3 * (last_wait if last_wait is not None else d0))
    return wait if d_max is None else min(d_max, wait)
