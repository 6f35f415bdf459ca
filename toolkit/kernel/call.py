"""Chapter 01: a tool call is a request, not an action, and every request gets exactly one result.

    model:  (name, arguments, call id)          -> a ToolCall: nothing has run
    host:   one ToolResult per call id          -> status, failure class, reason, errors (each a ToolError)

The model proposes ``(name, arguments, call id)``; nothing in this module runs
anything. The host decides later whether the request may cross the boundary,
and answers each call id once: a failure carries a status, a failure class and
a machine-readable reason, so the model can tell "salvageable" from "hopeless".
"""
from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Iterable

@dataclass(frozen=True, repr=False)
class ToolCall:
    """One unexecuted request from a model.

    ``arguments`` is kept exactly as received: a dict, a JSON string, or
    anything else a model produced. Validation decides what it means.
    """

    name: str
    arguments: Any
    call_id: str
    idempotency_key: str | None = None

    def __repr__(self) -> str:   # what a notebook cell or a log shows: secret-looking fields masked, as in summary()
        from toolkit._show import redact_arguments

        return (f"ToolCall(name={self.name!r}, arguments={redact_arguments(self.arguments)!r}, "
                f"call_id={self.call_id!r}, idempotency_key={self.idempotency_key!r})")

    def summary(self, secret_fields: Iterable[str] = ()) -> str:
        """A one-line rendering such as ``read_file({"path": "a.txt"}) #call_1``.

        Secret-looking fields (and ``secret_fields``, the contract's, where the caller knows them) are
        masked before the arguments are cut to 80 characters, so no fragment of a secret is printed.
        """
        from toolkit._ids import shown_call_id, shown_name
        from toolkit._show import redact_arguments

        shown = redact_arguments(self.arguments, secret_fields)
        try:
            args = json.dumps(shown, default=repr)   # keys in the order the model sent them
        except (TypeError, ValueError, RecursionError):  # an integer too long to print, a cycle
            args = f"<{type(shown).__name__}>"
        if len(args) > 80:
            args = args[:77] + "..."
        return f"{shown_name(self.name)}({args}) #{shown_call_id(self.call_id)}"


@dataclass
class CallIds:
    """Mints call ids for calls that arrive without one.

    Ids are deterministic (``call_1``, ``call_2``, ...) so that notebooks print
    the same thing every run, and they match every vendor's id rules
    (letters, digits, ``_`` and ``-``).
    """

    prefix: str = "call"
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)

    def mint(self) -> str:
        return f"{self.prefix}_{next(self._counter)}"


def request(name: str, arguments: Any, call_id: str | None = None, ids: CallIds | None = None,
            idempotency_key: str | None = None) -> ToolCall:
    """Build a ``ToolCall``, minting a call id when the model gave none."""
    if not call_id:
        call_id = (ids or _DEFAULT_IDS).mint()
    return ToolCall(name=name, arguments=arguments, call_id=call_id, idempotency_key=idempotency_key)


_DEFAULT_IDS = CallIds()


#: Error codes and the validation layer each belongs to.
CODES: dict[str, str] = {
    "invalid_json": "schema",
    "not_an_object": "schema",
    "too_large": "schema",
    "missing_required": "schema",
    "unexpected_property": "schema",
    "wrong_type": "schema",
    "enum": "schema",
    "pattern": "schema",
    "range": "schema",
    "length": "schema",
    "schema_violation": "schema",
    "unknown_tool": "schema",
    "not_authorized": "permission",
    "path_refused": "permission",
    "precondition_failed": "business",
    "approval_required": "business",
    "symbol_not_exported": "business",
    "postcondition_failed": "execution",
    "execution_failed": "execution",
    "timeout": "execution",
    "cancelled": "execution",
    "not_evaluable": "schema",
    "stream_incomplete": "schema",
    "stream_invalid": "schema",
    "response_incomplete": "schema",
    "invalid_call": "schema",
    "duplicate_call_id": "schema",
    "not_a_call": "schema",
    "call_id_mismatch": "execution",
    "missing_result": "execution",
    "duplicate_result": "execution",
    "orphan_result": "execution",
    "module_not_found": "business",
    "invalid_key": "schema",
    "not_serializable": "schema",
    "idempotency_conflict": "business",
    "in_progress": "execution",
    "outcome_unknown": "execution",
    "busy": "execution",
    "not_found": "execution",
    "not_applied": "execution",
}


@dataclass(frozen=True)
class ToolError:
    """One reason a call did not hold.

    ``pointer`` names the offending thing itself: ``$.path`` for a field
    (a missing field names the missing field, not its parent), or a
    description such as ``import publication_manifest.load_manifest``.
    ``retryable`` says whether the *model* can make the call pass by sending it
    again with corrected arguments (a schema error: yes; a missing permission:
    no). Whether the *host* repeats an effect is a different question, decided
    by the retry controller (``toolkit.kernel.backoff``).
    """

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
        data = asdict(self)
        data["layer"] = self.layer
        return data


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
