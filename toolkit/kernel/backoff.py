"""Chapter 06: backing off instead of hammering: the host's retry controller.

The chapter's controller is two lines::

    n_{t+1} = min(n_max, n_t + 1)        d_{t+1} = beta * d_t,   beta > 1

with escalation when ``n_t == n_max``. ``n`` counts the attempts made so far;
the first call is not counted, so right after it fails the state is
``(0, d0)``, and ``d`` is the delay to wait before the next one. From ``(0, 1)``
with ``beta = 2`` and ``n_max = 4`` the waits are 1, 2, 4, 8 and the failure
after retry four escalates instead of inventing retry five; the worked example
``(2, 2) -> (3, 4) -> (4, 8)`` is a run that started from a smaller delay and
stops at the same place.

``step`` is that rule as a pure function; ``plan`` lists the delays a policy
produces; ``RetryController`` is what a host runs when a model asks to try
again; ``toolkit.effects.retries.run_with_retries`` drives a host with both
sides in place, and ``toolkit.effects.waits`` shows the waits from outside.

The split of authority is the point. The model may *ask* to retry; the host's
controller *decides*, and it says no when

* the failure class is one a retry cannot fix (a rejected, malformed or
  unauthorized call: change the arguments instead),
* the effect is not safe to repeat (``Retry.UNSAFE``, or ``Retry.SAFE_WITH_KEY``
  without the original idempotency key),
* a timeout left the outcome unknown and the retry would not be an inquiry
  under the same key,
* the host's budget (retries) or deadline (seconds) is spent, or ``n_max`` is
  reached: then it escalates instead of inventing retry number ``n_max + 1``.

Jitter (none, full, equal, decorrelated) spreads retries from many clients so
they do not arrive in waves; it draws from a seeded ``random.Random``, so a
notebook prints the same delays on every run.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable

from toolkit.kernel.contract import Contract, Retry
from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolResult
from toolkit._json import carried_key, same_arguments


def step(state: RetryState, policy: RetryPolicy, rng: random.Random | None = None) -> RetryDecision:
    """One failure observed in ``state``: retry (and move to the next state) or escalate.

    Pure: the same state, policy and random generator state give the same
    decision. At ``n == n_max`` the answer is ``ESCALATE``; there is never a
    retry number ``n_max + 1``.
    """
    if state.n >= policy.n_max:
        return RetryDecision(Action.ESCALATE, state, 0.0, f"all n_max={policy.n_max} retries used")
    wait = _draw(state, policy, rng)
    grown = policy.beta * state.d
    if policy.d_max is not None:
        grown = min(policy.d_max, grown)
    nxt = RetryState(min(policy.n_max, state.n + 1), grown, wait)
    return RetryDecision(Action.RETRY, nxt, wait, "transient failure; back off and retry")


class Jitter(str, Enum):
    """How the actual wait is drawn from the exponential envelope ``d``."""

    NONE = "none"                  # wait exactly d
    FULL = "full"                  # U(0, d)
    EQUAL = "equal"                # d/2 + U(0, d/2)
    DECORRELATED = "decorrelated"  # min(cap, U(d0, 3 * previous wait))


class Action(str, Enum):
    RETRY = "retry"        # wait ``RetryDecision.wait`` seconds, then run the same call again
    ESCALATE = "escalate"  # stop retrying; a person (or a record lookup) takes over
    REFUSE = "refuse"      # a retry cannot help or is not safe; say why and do not run it


@dataclass(frozen=True)
class RetryPolicy:
    """The host's retry policy: the controller's constants, plus the extras beyond the chapter.

    ``d0`` is the first delay, ``beta`` the growth factor (> 1), ``n_max`` the
    ceiling on retries, ``d_max`` an optional cap on any delay.
    """

    d0: float = 1.0
    beta: float = 2.0
    n_max: int = 4
    d_max: float | None = None
    jitter: Jitter = Jitter.NONE

    def __post_init__(self) -> None:
        # A policy is written by the host, not by a model: a bad one is a programming error.
        if not self.beta > 1:
            raise ValueError(f"beta must be greater than 1 (got {self.beta}): a retry must back off")
        if self.d0 <= 0:
            raise ValueError(f"d0 must be positive (got {self.d0})")
        if self.n_max < 0:
            raise ValueError(f"n_max must be at least 0 (got {self.n_max})")
        if self.d_max is not None and self.d_max < self.d0:
            raise ValueError(f"d_max ({self.d_max}) must be at least d0 ({self.d0})")

    def start(self) -> "RetryState":
        """The state right after the first failure: no retries yet, next delay ``d0``."""
        return RetryState(0, self.d0)


@dataclass(frozen=True)
class RetryState:
    """``(n, d)``: retries made so far, and the delay to wait before the next one.

    ``last_wait`` is the wait actually drawn last time (decorrelated jitter reads it).
    """

    n: int
    d: float
    last_wait: float | None = None

    @property
    def pair(self) -> tuple[int, float]:
        return (self.n, _tidy(self.d))

    def __str__(self) -> str:
        n, d = self.pair
        return f"(n={n}, d={d:g})"


@dataclass(frozen=True)
class RetryDecision:
    """What the controller decided: an action, the state after it, the wait, and why."""

    action: Action
    state: RetryState
    wait: float = 0.0
    reason: str = ""

    @property
    def retry(self) -> bool:
        return self.action is Action.RETRY

    @property
    def escalate(self) -> bool:
        return self.action is Action.ESCALATE

    def line(self) -> str:
        if self.retry:
            return f"retry after {_tidy(self.wait):g}s -> {self.state}"
        return f"{self.action.value}: {self.reason}"


def _draw(state: RetryState, policy: RetryPolicy, rng: random.Random | None) -> float:
    """The wait actually slept, drawn from the envelope ``d`` by the policy's jitter."""
    d = state.d if policy.d_max is None else min(policy.d_max, state.d)
    if policy.jitter is Jitter.NONE:
        return d
    if rng is None:
        raise ValueError(f"jitter {policy.jitter.value!r} needs a seeded random.Random")
    if policy.jitter is Jitter.FULL:
        return rng.uniform(0.0, d)
    if policy.jitter is Jitter.EQUAL:
        return d / 2 + rng.uniform(0.0, d / 2)
    previous = state.last_wait if state.last_wait is not None else policy.d0
    wait = rng.uniform(policy.d0, 3 * previous)
    return wait if policy.d_max is None else min(policy.d_max, wait)


def walk(policy: RetryPolicy, start: RetryState | None = None, seed: int | None = 0) -> list[RetryDecision]:
    """Every decision from ``start`` when every retry fails: retries, then one escalation."""
    rng = random.Random(seed)
    state = start or policy.start()
    decisions = []
    while True:
        decision = step(state, policy, rng)
        decisions.append(decision)
        if not decision.retry:
            return decisions
        state = decision.state


def plan(policy: RetryPolicy, start: RetryState | None = None, seed: int | None = 0) -> list[float]:
    """The waits a policy would produce before escalating, e.g. ``[1, 2, 4, 8]``."""
    return [_tidy(d.wait) for d in walk(policy, start, seed) if d.retry]


def _tidy(x: float) -> float:
    """Show 4.0 as 4 and 0.30000000000000004 as 0.3 (display only)."""
    r = round(x, 9)
    return int(r) if r == int(r) else r


# ------------------------------------------------------------------ the host's controller
#: Failure classes a retry cannot repair: the call itself must change.
NEVER_RETRY: frozenset[FailureClass] = frozenset({
    FailureClass.SCHEMA, FailureClass.AUTHORIZATION, FailureClass.PRECONDITION, FailureClass.POSTCONDITION})


def retry_verdict(contract: Contract | None, result: ToolResult, original: ToolCall,
                  retry: ToolCall | None = None,
                  never_retry: Iterable[FailureClass] = NEVER_RETRY) -> tuple[Action, str]:
    """May this failure be retried at all? ``(RETRY, why)`` or ``(REFUSE/ESCALATE, why)``.

    This is the part of the decision that does not depend on counts or time:
    the failure's class and the effect's retry semantics.
    """
    retry = retry or original
    if not isinstance(retry, ToolCall):
        return Action.REFUSE, "the model's retry request is not a tool call"
    never = frozenset(never_retry)
    if result.status is Status.SUCCEEDED:
        return Action.REFUSE, "the call succeeded; there is nothing to retry"
    if result.status is Status.CANCELLED:
        return Action.REFUSE, "cancelled: stop the current round"
    if result.status is Status.REJECTED:
        klass = result.failure_class.value if result.failure_class else "rejected"
        return Action.REFUSE, f"rejected ({klass}): change the arguments, switch tools, or give up"
    if result.status is Status.FAILED:
        return Action.REFUSE, "the tool ran and did not keep its promise; report it, do not repeat it"
    if result.failure_class in never:
        return Action.REFUSE, f"{result.failure_class.value} failure: a retry cannot fix it"
    if retry.name != original.name:
        return Action.REFUSE, "a retry must be the same tool; a different tool is a new proposal"
    if contract is None:
        return Action.REFUSE, f"no contract for {original.name!r}; cannot tell whether a retry is safe"
    key, again = carried_key(original, contract), carried_key(retry, contract)
    key, again = (k if isinstance(k, str) else None for k in (key, again))   # disagreeing keys count as none
    if contract.retry is Retry.UNSAFE:
        return Action.ESCALATE, "the effect is not safe to repeat (retry: unsafe); check the record or ask a human"
    if contract.retry is Retry.SAFE_WITH_KEY:
        if not key:
            return Action.ESCALATE, "the original call had no idempotency key; a retry could act twice"
        if again != key:
            if result.status is Status.TIMEOUT:
                return Action.REFUSE, "timeout: the outcome is unknown; retry only under the original key"
            return Action.REFUSE, "a retry must carry the original idempotency key; a new key is a new act"
    if not same_arguments(retry.arguments, original.arguments):   # dict or JSON text: the parsed value counts
        return Action.REFUSE, "a retry repeats the same arguments; changed arguments are a new proposal"
    return Action.RETRY, "retry allowed"


@dataclass
class RetryController:
    """The host-owned retry controller for one run of the agent.

    ``budget`` caps the total number of retries across all calls (``None``: only
    ``n_max`` per call); ``deadline`` caps the total seconds spent waiting and
    running (``None``: no deadline). Per call id it keeps the ``(n, d)`` state.
    Randomness comes from ``random.Random(seed)``.
    """

    policy: RetryPolicy = field(default_factory=RetryPolicy)
    budget: int | None = None
    deadline: float | None = None
    seed: int = 0
    never_retry: frozenset[FailureClass] = NEVER_RETRY
    retries_used: int = 0
    elapsed: float = 0.0
    states: dict[str, RetryState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def state_of(self, call_id: str) -> RetryState:
        return self.states.get(call_id, self.policy.start())

    def decide(self, contract: Contract | None, original: ToolCall, result: ToolResult,
               retry: ToolCall | None = None, took: float = 0.0) -> RetryDecision:
        """The model asked to retry ``original`` (optionally as ``retry``) after ``result``.

        ``took`` is how long the failed attempt ran; it counts toward the
        deadline. A granted retry updates the call's state and the budget.
        """
        self.elapsed += max(0.0, took)
        state = self.state_of(original.call_id)
        action, why = retry_verdict(contract, result, original, retry, self.never_retry)
        if action is not Action.RETRY:
            return RetryDecision(action, state, 0.0, why)
        if self.budget is not None and self.retries_used >= self.budget:
            return RetryDecision(Action.ESCALATE, state, 0.0, f"the host's retry budget ({self.budget}) is spent")
        decision = step(state, self.policy, self.rng)
        if not decision.retry:
            return decision
        if self.deadline is not None and self.elapsed + decision.wait > self.deadline:
            return RetryDecision(Action.ESCALATE, state, 0.0,
                            f"waiting {_tidy(decision.wait):g}s would pass the {self.deadline:g}s deadline")
        self.states[original.call_id] = decision.state
        self.retries_used += 1
        self.elapsed += decision.wait
        return decision


__all__ = ["Action", "RetryDecision", "Jitter", "NEVER_RETRY", "RetryPolicy", "RetryController", "RetryState",
           "plan", "retry_verdict", "step", "walk"]
