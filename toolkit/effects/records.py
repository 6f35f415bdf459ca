"""Chapter 07: execution records: one per call id, moving through an explicit state machine.

A record answers "did the last run take effect?" after a timeout, a disconnect or a crash, and is
what an audit replays. Beside the chapter's states, ``timeout`` (outcome unknown) and
``awaiting_human`` make the uncertain cases explicit. A move missing from ``TRANSITIONS`` is a
host bug: it raises ``IllegalTransition``."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from toolkit.kernel import Status
from toolkit._ids import shown_call_id, shown_name
from toolkit._show import summarize


class RecordState(str, Enum):
    REQUESTED = "requested"
    APPROVED = "approved"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    AWAITING_HUMAN = "awaiting_human"


S = RecordState
#: The only moves a record may make. A move into ``running`` from ``failed`` or
#: ``timeout`` is a retry (and is counted as one).
TRANSITIONS: dict[RecordState, frozenset[RecordState]] = {
    S.REQUESTED: frozenset({S.APPROVED, S.REJECTED, S.AWAITING_HUMAN, S.CANCELLED}),
    S.AWAITING_HUMAN: frozenset({S.APPROVED, S.REJECTED, S.CANCELLED, S.SUCCEEDED, S.FAILED}),
    S.APPROVED: frozenset({S.RUNNING, S.CANCELLED}),
    # running -> rejected: the executor's own last check refused (e.g. a file swapped after approval);
    # nothing happened, so it is a refusal, not a failure.
    S.RUNNING: frozenset({S.SUCCEEDED, S.FAILED, S.REJECTED, S.TIMEOUT, S.CANCELLED}),
    # failed: retried (running) under the host's controller, or escalated.
    S.FAILED: frozenset({S.RUNNING, S.AWAITING_HUMAN}),
    # timeout: the outcome is unknown. Reconcile from records (succeeded / failed),
    # retry under the same key (running), or escalate.
    S.TIMEOUT: frozenset({S.RUNNING, S.SUCCEEDED, S.FAILED, S.AWAITING_HUMAN, S.CANCELLED}),
    S.SUCCEEDED: frozenset(),
    S.REJECTED: frozenset(),
    S.CANCELLED: frozenset(),
}

#: States a record may stop in for good.
FINAL: frozenset[RecordState] = frozenset(s for s, nxt in TRANSITIONS.items() if not nxt)

#: The record state a tool result's status lands in.
FROM_STATUS: dict[Status, RecordState] = {
    Status.SUCCEEDED: S.SUCCEEDED,
    Status.RECOVERABLE_FAILURE: S.FAILED,
    Status.FAILED: S.FAILED,
    Status.REJECTED: S.REJECTED,
    Status.TIMEOUT: S.TIMEOUT,
    Status.CANCELLED: S.CANCELLED,
}


class IllegalTransition(Exception):
    """A record was asked to make a move the transition table does not allow."""

    def __init__(self, call_id: str, source: RecordState, target: RecordState):
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[source])) or f"none: {source.value} is final"
        super().__init__(f"{call_id}: cannot go from {source.value} to {target.value} (allowed: {allowed})")
        self.call_id, self.source, self.target = call_id, source, target


class Tick:
    """A deterministic clock: 0, 1, 2, ... seconds (pass ``time.time`` for wall-clock time)."""

    def __init__(self, start: float = 0.0, step: float = 1.0):
        self._counter = itertools.count()
        self.start, self.step = start, step

    def __call__(self) -> float:
        return self.start + self.step * next(self._counter)


@dataclass(frozen=True)
class Transition:
    """One move of a record: from, to, when, a short note, the retry count and the failure class."""

    source: RecordState | None
    target: RecordState
    at: float
    note: str = ""
    retry: int = 0
    failure: str = ""

    def line(self) -> str:
        source = self.source.value if self.source else "-"
        detail = ": ".join(x for x in (self.failure, self.note) if x)
        note = f"  ({detail})" if detail else ""
        return f"t={self.at:g}  {source} -> {self.target.value}{note}"


Listener = Callable[["ExecutionRecord", Transition], None]


@dataclass
class ExecutionRecord:
    """The life of one call: who asked, which tool, a redacted summary, and every move."""

    call_id: str
    initiator: str
    tool: str
    summary: str
    clock: Callable[[], float] = field(default_factory=Tick, repr=False)
    listener: Listener | None = field(default=None, repr=False)
    transitions: list[Transition] = field(default_factory=list)
    retries: int = 0

    def __post_init__(self) -> None:
        if not self.transitions:
            self._append(Transition(None, S.REQUESTED, self.clock()))

    @property
    def state(self) -> RecordState:
        return self.transitions[-1].target

    @property
    def final(self) -> bool:
        return self.state in FINAL

    def can(self, target: RecordState) -> bool:
        return RecordState(target) in TRANSITIONS[self.state]

    def move(self, target: RecordState | str, note: str = "", failure: str = "") -> Transition:
        """Make one move; raises ``IllegalTransition`` if the table forbids it."""
        target = RecordState(target)
        source = self.state
        if target not in TRANSITIONS[source]:
            raise IllegalTransition(self.call_id, source, target)
        if target is S.RUNNING and source in (S.FAILED, S.TIMEOUT):
            self.retries += 1
        return self._append(Transition(source, target, self.clock(), note, self.retries, failure))

    def settle(self, status: Status, note: str = "", failure: str = "") -> Transition:
        """Move to the state a ``ToolResult`` status stands for (see ``FROM_STATUS``)."""
        return self.move(FROM_STATUS[Status(status)], note, failure)

    def path(self) -> list[str]:
        """The states visited, e.g. ``['requested', 'approved', 'running', 'succeeded']``."""
        return [t.target.value for t in self.transitions]

    def lines(self) -> list[str]:
        return [t.line() for t in self.transitions]

    def _append(self, transition: Transition) -> Transition:
        self.transitions.append(transition)
        if self.listener is not None:
            self.listener(self, transition)
        return transition


def open_record(call: Any, initiator: str, contract: Any = None, clock: Callable[[], float] | None = None,
                listener: Listener | None = None) -> ExecutionRecord:
    """Start the record of ``call`` in state ``requested``, its arguments summarised, redacted."""
    return ExecutionRecord(shown_call_id(call.call_id), initiator, shown_name(call.name),
                           summarize(call.arguments, getattr(contract, "secret_fields", ())),
                           clock or Tick(), listener)
