"""Chapter 01: a tool call is a request, not an action, and every request gets exactly one result.

    model:  (name, arguments, call id)          -> a ToolCall: nothing has run
    host:   one ToolResult per call id          -> status, failure class, reason, errors (each a ToolError)

Nothing here runs anything: the host decides later whether a request may cross the boundary, and a failure
tells the model, by status and failure class, whether it is salvageable or hopeless.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Iterable

from toolkit._codes import CODES


@dataclass(frozen=True, repr=False)
class ToolCall:
    """One unexecuted request from a model; ``arguments`` are kept exactly as received (validation decides)."""

    name: str
    arguments: Any
    call_id: str
    idempotency_key: str | None = None

    def __repr__(self) -> str:   # what a cell or a log shows: secret-looking fields masked
        from toolkit._show import redact_arguments
        return (f"ToolCall(name={self.name!r}, arguments={redact_arguments(self.arguments)!r}, "
                f"call_id={self.call_id!r}, idempotency_key={self.idempotency_key!r})")

    def summary(self, secret_fields: Iterable[str] = ()) -> str:
        """The one printed line of a call, ``read_file({"path": "a.txt"}) #call_1``, secrets masked."""
        from toolkit._show import call_line
        return call_line(self.name, self.arguments, self.call_id, secret_fields)


def request(name: str, arguments: Any, call_id: str | None = None, ids: Any = None,
            idempotency_key: str | None = None) -> ToolCall:
    """Build a ``ToolCall``, minting a call id when the model gave none (``call_1``, ...: ``ids``, a ``CallIds``)."""
    from toolkit._ids import mint_call_id
    return ToolCall(name, arguments, call_id or mint_call_id(ids), idempotency_key)


@dataclass(frozen=True)
class ToolError:
    """One reason a call did not hold: ``pointer`` names the offending thing (``$.path``); ``retryable`` says
    whether the *model* can make it pass by resending corrected arguments (the host's retries: ``backoff``)."""

    code: str
    pointer: str
    message: str
    expected: Any = None
    received: Any = None
    hint: str = ""
    retryable: bool = True

    @property
    def layer(self) -> str:
        """The validation layer that raised this error (schema, permission, business, execution)."""
        return CODES.get(self.code, "execution")

    def line(self) -> str:
        """The transcript line, ``<pointer>: <message>``."""
        return f"{self.pointer}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "layer": self.layer}


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
        return NEXT_STEP[self.status]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, the shape a model is shown: the output, or why there is none."""
        data: dict[str, Any] = {"call_id": self.call_id, "status": self.status.value}
        if self.ok:
            data["output"] = self.output
        else:
            data.update(failure_class=self.failure_class.value if self.failure_class else None, reason=self.reason,
                        errors=[e.to_dict() for e in self.errors])
        return {**data, "evidence": self.evidence} if self.evidence else data


class ToolFailure(Exception):
    """Raised by a tool's implementation to report a classified failure (``error``: one it built itself)."""

    def __init__(self, status: Status, reason: str, message: str = "",
                 failure_class: FailureClass = FailureClass.EXECUTION, error: ToolError | None = None):
        super().__init__(message or reason)
        self.status, self.reason, self.failure_class = status, reason, failure_class
        self.message, self.error = message or reason, error
