"""Chapters 01 and 07: one call is a small transaction: the stages and branches of chapter 01's diagram.

The chapter 01 picture is not drawn by hand. Its main line is a list of
*stages*, each tagged with the execution-record state
(``toolkit.effects.records.RecordState``) the call is in once that stage has
passed; its side branches are *moves* of that record (``requested ->
rejected`` and so on). ``moves()`` checks every move against
``records.TRANSITIONS``, and the advice under each branch is read from
``toolkit.kernel.NEXT_STEP`` for the status that lands there. Change the state
machine and the diagram either follows or refuses to draw; it cannot quietly
disagree with the code. ``course.present.transaction_diagram`` only draws
what is listed here.
"""
from __future__ import annotations

from dataclasses import dataclass

from toolkit.kernel import NEXT_STEP, FailureClass, Status
from toolkit.effects import FROM_STATUS, TRANSITIONS, RecordState

S = RecordState


@dataclass(frozen=True)
class Stage:
    """One box of the main line: its name, the record state once it has passed (None: no record yet)."""

    name: str
    state: RecordState | None
    does: str


@dataclass(frozen=True)
class Branch:
    """A side branch: leaves ``stage`` as the record moves ``source -> target``."""

    stage: str
    label: str
    source: RecordState
    target: RecordState
    then: str
    failure: tuple[FailureClass, ...] = ()

    @property
    def advice(self) -> str:
        """What the model may do next, read from the code (``NEXT_STEP``, or the moves a person may make)."""
        status = status_of(self.target)
        if status is not None:
            return NEXT_STEP[status]
        choices = ", ".join(sorted(s.value for s in TRANSITIONS[self.target]))
        return f"a person decides; the record may then move to {choices}"


#: The main line, left to right: the chapter's "declare -> request(id) -> schema -> policy -> execute -> result(id)
#: -> write back", each stage tagged with the record state it leaves the call in.
STAGES: tuple[Stage, ...] = (
    Stage("user task", None, "a person asks for something"),
    Stage("declare", None, "the host lists its tools and their schemas"),
    Stage("request(id)", S.REQUESTED, "the model proposes a name, arguments and a call id"),
    Stage("schema", S.REQUESTED, "is the shape right? (checked; the record does not move)"),
    Stage("policy", S.APPROVED, "may it run here? path, permission, business rules"),
    Stage("execute", S.RUNNING, "the host runs the tool"),
    Stage("result(id)", S.SUCCEEDED, "status and evidence, under the same call id"),
    Stage("write back", S.SUCCEEDED, "the result joins the model's next round"),
)

#: The side branches of the chapter's drawing.
BRANCHES: tuple[Branch, ...] = (
    Branch("schema", "shape error", S.REQUESTED, S.REJECTED, "return reason", (FailureClass.SCHEMA,)),
    Branch("policy", "deny", S.REQUESTED, S.REJECTED, "return reason",
           (FailureClass.AUTHORIZATION, FailureClass.PRECONDITION)),
    Branch("execute", "timeout", S.RUNNING, S.TIMEOUT, "check records / idempotency key", (FailureClass.TIMEOUT,)),
    Branch("timeout", "unconfirmed", S.TIMEOUT, S.AWAITING_HUMAN, "human confirmation"),
)


def status_of(state: RecordState) -> Status | None:
    """The tool-result status that lands a record in ``state`` (``records.FROM_STATUS`` read backwards)."""
    statuses = [status for status, target in FROM_STATUS.items() if target is state]
    return statuses[-1] if statuses else None   # failed <- recoverable_failure and failed: take the plain one


def main_moves(stages: tuple[Stage, ...] = STAGES) -> list[tuple[RecordState, RecordState]]:
    """The record moves along the main line: consecutive stages whose states differ."""
    states = [s.state for s in stages if s.state is not None]
    return [(a, b) for a, b in zip(states, states[1:]) if a is not b]


def moves(stages: tuple[Stage, ...] = STAGES, branches: tuple[Branch, ...] = BRANCHES) -> list[tuple[RecordState, RecordState]]:
    """Every record move the diagram shows, main line first; raises ``ValueError`` if one is not allowed.

    "Allowed" means listed in ``toolkit.effects.records.TRANSITIONS``: the same table an
    ``ExecutionRecord`` enforces on every move.
    """
    drawn = main_moves(stages) + [(b.source, b.target) for b in branches]
    wrong = [f"{a.value} -> {b.value}" for a, b in drawn if b not in TRANSITIONS.get(a, frozenset())]
    if wrong:
        raise ValueError("the diagram shows moves the record does not allow: " + ", ".join(wrong))
    names = {s.name for s in stages} | {b.target.value for b in branches}
    lost = [b.stage for b in branches if b.stage not in names]
    if lost:
        raise ValueError(f"branches leave from stages that are not drawn: {lost}")
    return list(dict.fromkeys(drawn))


def not_drawn() -> list[tuple[RecordState, RecordState]]:
    """The moves ``TRANSITIONS`` allows that the diagram leaves out (retries, cancellations, ...)."""
    shown = set(moves())
    return [(a, b) for a in TRANSITIONS for b in sorted(TRANSITIONS[a], key=lambda s: s.value) if (a, b) not in shown]


__all__ = ["BRANCHES", "Branch", "STAGES", "Stage", "main_moves", "moves", "not_drawn", "status_of"]
