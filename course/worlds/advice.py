"""Chapters 02 and 04: what the chapters advise: a refusal's usual cause, how thick the safeguards.

A refusal the model never sees teaches it nothing: ``cause_of`` looks an error code up (codes
without a row get the general answer). A read-only, reversible, retry-safe call may take the *lean
path* (validate, run, return); one that writes, sends or charges needs the full small-transaction
treatment. A key protects only where the service honours it (``SAFE_WITH_KEY``); for an ``UNSAFE``
effect the safeguard is the execution record, and an effect that cannot be undone or checked gets
a person.
"""
from __future__ import annotations

from dataclasses import dataclass

from toolkit.kernel import Contract, Retry, ToolError


@dataclass(frozen=True)
class Cause:
    """Why an error usually happens, and what the model can do once it is told."""

    usually: str
    model_can: str


#: The usual cause of each common refusal, by error code, in layer order.
CAUSES: dict[str, Cause] = {
    "missing_required": Cause("the task did not give the model the value",
                              "ask the user for it, or look it up with another tool"),
    "wrong_type": Cause("the model filled a field with the wrong kind of value (a list for a string)",
                        "send the same value in the declared type"),
    "enum": Cause("the model guessed a value that sounds right but is not on the list",
                  "pick one of the allowed values the error lists"),
    "unexpected_property": Cause("the model used field names from another tool or an older version",
                                 "rename the fields to the declared ones"),
    "invalid_json": Cause("the output was cut short or is not JSON at all",
                          "send the whole call again as one JSON object"),
    "unknown_tool": Cause("the model named a tool the host never declared",
                          "choose among the declared tools, or say in words that none fits"),
    "not_authorized": Cause("the call lies outside the caller's role",
                            "stop, or ask someone who holds the scope"),
    "path_refused": Cause("the path leads outside the area the tool may touch",
                          "use a path inside the workspace"),
    "precondition_failed": Cause("the world is not ready, or an unclear description led the model to a tool "
                                 "that cannot do this job",
                                 "wait, fix the state first, or switch tools"),
    "approval_required": Cause("nobody has yet said this call is what they want",
                               "ask the user to confirm this exact call"),
}

#: What a model can do with any other refusal.
GENERAL = Cause("something the layers checked did not hold", "read the error, then change the call or give up")


def cause_of(error: ToolError) -> Cause:
    """The usual cause of ``error`` and the model's next move (the general answer for an unlisted code)."""
    return CAUSES.get(error.code, GENERAL)


#: Each safeguard and what it prevents (the chapter's safeguard table).
SAFEGUARDS: dict[str, str] = {
    "call id": "results that do not match requests",
    "idempotency key": "a repeat run producing a duplicate side effect",
    "execution record": "not being able to tell whether the last run took effect",
    "human approval": "an irreversible action being blindly replayed",
}

#: When each safeguard is worth its cost (the same table, last column).
WHEN_TO_USE: dict[str, str] = {
    "call id": "parallel, streaming and multi-round calls",
    "idempotency key": "a remote create or a payment, where the receiving service honours the key",
    "execution record": "a timeout, a disconnect, recovery after a crash",
    "human approval": "deletion, publishing, a large payment",
}


@dataclass(frozen=True)
class TaskProperties:
    """The four properties that change the verdict on the same tool, read off its contract."""

    reversible: bool
    side_effect: bool
    retry: Retry
    self_checkable: bool

    @classmethod
    def of(cls, contract: Contract) -> "TaskProperties":
        """The four properties of a contract (a write, no undo, an unsafe retry: a side effect)."""
        side_effect = bool(contract.writes) or not contract.reversible or contract.retry is not Retry.SAFE
        return cls(reversible=contract.reversible, side_effect=side_effect,
                   retry=contract.retry, self_checkable=bool(contract.postconditions or contract.evidence))


def required_safeguards(contract: Contract) -> tuple[str, ...]:
    """The safeguards a contract's task properties call for; every call gets a call id, a key only
    where the service honours it, an unsafe effect the execution record."""
    p = TaskProperties.of(contract)
    needed = ["call id"]
    if p.side_effect:
        needed += ["idempotency key", "execution record"] if p.retry is Retry.SAFE_WITH_KEY else ["execution record"]
    if not p.reversible and (contract.needs_approval or not p.self_checkable):
        needed.append("human approval")
    return tuple(needed)


def lean_path(contract: Contract) -> bool:
    """True when the call may skip the full state machine: read-only, reversible, safe to repeat."""
    return required_safeguards(contract) == ("call id",)
