"""Chapter 04: how thick the safeguards must be: it follows the size of the side effect.

A read-only, reversible, retry-safe call may take the *lean path* (validate, run, return); one
that writes, sends or charges needs the full small-transaction treatment. A key protects only
where the service honours it (``SAFE_WITH_KEY``); for an ``UNSAFE`` effect the safeguard is the
execution record, and an effect that cannot be undone or checked gets a person."""
from __future__ import annotations

from dataclasses import dataclass

from toolkit.kernel import Contract, Retry

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
        """Read the four properties off a contract: a write, an irreversible effect, or an unsafe
        retry means a side effect."""
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
