"""Chapter 06: backing off instead of hammering: the host's retry controller.

    n_{t+1} = min(n_max, n_t + 1)        d_{t+1} = beta * d_t,   beta > 1,   escalate when n_t = n_max

``n`` counts the retries so far (``(0, d0)`` right after the first failure) and ``d`` is the delay before the
next. With beta = 2 and n_max = 4: (2, 2) -> (3, 4) -> (4, 8), and the next failure escalates; from (0, 1) the
waits are 1, 2, 4, 8. ``step`` is the rule. The model may *ask* to retry; ``RetryController.decide`` *decides*:
``retry_verdict`` refuses what a retry cannot fix or must not repeat (an unsafe effect, a keyed one without its
original key), and ``decide`` escalates when the budget, the deadline or ``n_max`` is spent. Jitter, the random
part of a wait, is drawn in ``toolkit._jitter``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable

from toolkit.kernel.contract import Contract, Retry
from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolResult
from toolkit._jitter import Jitter, jitter_wait
from toolkit._json import carried_key, same_arguments


def step(state: RetryState, policy: RetryPolicy, rng: random.Random | None = None) -> RetryDecision:
    """One more failure in ``state``: retry and move to the next state, or, at ``n_max``, escalate. Pure."""
    if state.n >= policy.n_max:                             # escalate: there is no retry number n_max + 1
        return RetryDecision(Action.ESCALATE, state, 0.0, f"all n_max={policy.n_max} retries used")
    n_next = min(policy.n_max, state.n + 1)                 # n' = min(n_max, n + 1)
    d_next = policy.beta * state.d                          # d' = beta * d
    if policy.d_max is not None:                            # an optional cap on any one delay
        d_next = min(policy.d_max, d_next)
    wait = jitter_wait(policy.jitter, state.d, policy.d0, policy.d_max, state.last_wait, rng)   # d, or drawn from d
    return RetryDecision(Action.RETRY, RetryState(n_next, d_next, wait), wait, "transient failure; back off and retry")


class Action(str, Enum):
    RETRY = "retry"        # wait ``RetryDecision.wait`` seconds, then run the same call again
    ESCALATE = "escalate"  # stop retrying; a person (or a record lookup) takes over
    REFUSE = "refuse"      # a retry cannot help or is not safe; say why and do not run it


@dataclass(frozen=True)
class RetryPolicy:
    """The host's constants: first delay ``d0``, growth ``beta`` (> 1), ceiling ``n_max``, optional cap ``d_max``."""

    d0: float = 1.0
    beta: float = 2.0
    n_max: int = 4
    d_max: float | None = None
    jitter: Jitter = Jitter.NONE

    def __post_init__(self) -> None:   # written by the host, not a model: a bad policy is a programming error
        if not (self.beta > 1 and self.d0 > 0 and self.n_max >= 0 and (self.d_max is None or self.d_max >= self.d0)):
            raise ValueError(f"a policy must back off: beta > 1, d0 > 0, n_max >= 0, d_max >= d0 (got {self})")

    def start(self) -> RetryState:
        """The state right after the first failure: no retries yet, next delay ``d0``."""
        return RetryState(0, self.d0)


@dataclass(frozen=True)
class RetryState:
    """``(n, d)``: retries made so far and the delay before the next; ``last_wait`` is the wait drawn last time."""

    n: int
    d: float
    last_wait: float | None = None

    def __str__(self) -> str:
        return f"(n={self.n}, d={self.d:g})"


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

    def line(self) -> str:
        return f"retry after {self.wait:g}s -> {self.state}" if self.retry else f"{self.action.value}: {self.reason}"


#: Failure classes a retry cannot repair: the call itself must change.
NEVER_RETRY: frozenset[FailureClass] = frozenset({
    FailureClass.SCHEMA, FailureClass.AUTHORIZATION, FailureClass.PRECONDITION, FailureClass.POSTCONDITION})


def retry_verdict(contract: Contract | None, result: ToolResult, original: ToolCall,
                  retry: ToolCall | None = None,
                  never_retry: Iterable[FailureClass] = NEVER_RETRY) -> tuple[Action, str]:
    """May this failure be retried at all, whatever the counts and the clock? ``(action, why)``."""
    if not isinstance(retry := retry or original, ToolCall):
        return Action.REFUSE, "the model's retry request is not a tool call"
    if result.status is Status.SUCCEEDED:
        return Action.REFUSE, "the call succeeded; there is nothing to retry"
    if result.status is Status.CANCELLED:
        return Action.REFUSE, "cancelled: stop the current round"
    if result.status is Status.REJECTED:
        klass = result.failure_class.value if result.failure_class else "rejected"
        return Action.REFUSE, f"rejected ({klass}): change the arguments, switch tools, or give up"
    if result.status is Status.FAILED:
        return Action.REFUSE, "the tool ran and did not keep its promise; report it, do not repeat it"
    if result.failure_class in frozenset(never_retry):
        return Action.REFUSE, f"{result.failure_class.value} failure: a retry cannot fix it"
    if retry.name != original.name:
        return Action.REFUSE, "a retry must be the same tool; a different tool is a new proposal"
    if contract is None:
        return Action.REFUSE, f"no contract for {original.name!r}; cannot tell whether a retry is safe"
    key, again = (k if isinstance(k, str) else None for k in (carried_key(original, contract),
                                                              carried_key(retry, contract)))   # disagreeing: none
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
    """The host's controller for one run: ``(n, d)`` per call id, an optional ``budget`` of retries and
    ``deadline`` in seconds; waits are drawn from ``random.Random(seed)``."""

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

    def decide(self, contract: Contract | None, original: ToolCall, result: ToolResult,
               retry: ToolCall | None = None, took: float = 0.0) -> RetryDecision:
        """The model asked to retry ``original`` (as ``retry``) after ``result``; ``took``: how long it ran."""
        self.elapsed += max(0.0, took)
        state = self.states.get(original.call_id, self.policy.start())
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
                                 f"waiting {decision.wait:g}s would pass the {self.deadline:g}s deadline")
        self.states[original.call_id], self.retries_used = decision.state, self.retries_used + 1
        self.elapsed += decision.wait
        return decision
