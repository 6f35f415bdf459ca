"""Chapters 01 and 06: tool results: the structured state an executor returns against a call id.

Every call gets exactly one result, refused and cancelled ones included. A
failure carries three things a model needs to decide its next step: a status,
a failure class, and a machine-readable reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from toolkit.core.errors import ToolError


class Status(str, Enum):
    """How one call ended, as the model is told it (every call gets exactly one)."""

    SUCCEEDED = "succeeded"
    RECOVERABLE_FAILURE = "recoverable_failure"   # transient: wait, then retry
    FAILED = "failed"                             # ran, but did not establish its promise
    REJECTED = "rejected"                         # refused before running: change the arguments or give up
    TIMEOUT = "timeout"                           # outcome unknown: consult records, never retry blindly
    CANCELLED = "cancelled"                       # an outside signal stopped the round


class FailureClass(str, Enum):
    """Which part of the contract a failure points at."""

    SCHEMA = "schema"
    AUTHORIZATION = "authorization"
    PRECONDITION = "precondition"
    POSTCONDITION = "postcondition"
    TIMEOUT = "timeout"
    EXECUTION = "execution"


#: What each failed status means (the chapter's failure-type table, first column).
MEANING: dict[Status, str] = {
    Status.RECOVERABLE_FAILURE: "a transient fault (a lock, a rate limit)",
    Status.REJECTED: "permissions, the path or the state do not allow it",
    Status.TIMEOUT: "the remote state is unknown",
    Status.CANCELLED: "an outside signal stopped it",
    Status.FAILED: "it ran and did not keep its promise",
}

#: Which part of the machine each failure class points at (reading failures through the contract).
POINTS_AT: dict[FailureClass, str] = {
    FailureClass.SCHEMA: "the model formed the wrong expression",
    FailureClass.AUTHORIZATION: "the transition lies outside the caller's role",
    FailureClass.PRECONDITION: "the state was not ready",
    FailureClass.POSTCONDITION: "execution did not establish what the tool promised",
    FailureClass.TIMEOUT: "the agent is unsure of the external state",
    FailureClass.EXECUTION: "the tool or the service hit trouble while running",
}

#: What the host lets a model do next, by status (the chapter's failure-type table).
NEXT_STEP: dict[Status, str] = {
    Status.SUCCEEDED: "continue with the evidence",
    Status.RECOVERABLE_FAILURE: "wait, then retry within the host's budget",
    Status.FAILED: "report the broken promise; do not assume the effect",
    Status.REJECTED: "change the arguments, switch tools, or give up",
    Status.TIMEOUT: "check the execution record or use the same idempotency key; else ask a human",
    Status.CANCELLED: "stop the current round",
}


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model, paired with its request by ``call_id``."""

    call_id: str
    status: Status
    output: Any = None
    failure_class: FailureClass | None = None
    reason: str = ""
    errors: tuple[ToolError, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True only for ``succeeded``: every other status is a failure the model must read."""
        return self.status is Status.SUCCEEDED

    @property
    def next_step(self) -> str:
        """What the host lets the model do next after this result."""
        return NEXT_STEP[self.status]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, the shape a model is shown."""
        data: dict[str, Any] = {"call_id": self.call_id, "status": self.status.value}
        if self.ok:
            data["output"] = self.output
        else:
            data["failure_class"] = self.failure_class.value if self.failure_class else None
            data["reason"] = self.reason
            data["errors"] = [e.to_dict() for e in self.errors]
        if self.evidence:
            data["evidence"] = self.evidence
        return data


class ToolFailure(Exception):
    """Raised by a tool's implementation to report a classified failure."""

    def __init__(self, status: Status, reason: str, message: str = "",
                 failure_class: FailureClass = FailureClass.EXECUTION, error: ToolError | None = None):
        super().__init__(message or reason)
        self.status, self.reason, self.failure_class = status, reason, failure_class
        self.message = message or reason
        self.error = error   # a structured error the tool built itself (pointer, hint), passed on as is
