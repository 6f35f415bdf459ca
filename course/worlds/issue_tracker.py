"""Chapter 05: the create_issue illustration: a tracker that acts, then loses its answer.

``IssueTracker`` is a remote issue tracker in memory whose response can be
lost after it created the issue. ``TimeoutRuntime`` settles such a timeout without a blind retry:
it turns "unknown" into "known" the cheapest way there is (retry with the original key where the
tracker honours keys, look the call up in its record, ask a human), else the call stays
``awaiting_human``; a new proposal is refused while the first call's outcome is unknown
(``classify_retry``: a retry with the original key is an *inquiry* into whether the first call took
effect, one without it a *new proposal*, a second action in the world: the rule
``toolkit.kernel.Host.execute`` keeps, read through its own ``retry_slot``).
``create_issue_illustration`` plays each strategy (retry blindly, the idempotency key, a record
lookup, a person, nothing, a new key) and counts the issues that exist afterwards. One is the right
answer. ``COMPENSATION`` is the chapter's table of effects that can or cannot be undone after the
fact, and what must hold before the first attempt.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable

from toolkit.kernel import (NEXT_STEP, Contract, FailureClass, Retry, Status, ToolCall, ToolError,
                            ToolResult)
from toolkit._json import carried_key, parsed_arguments
from toolkit._unknown import retry_slot

TITLE = "Login button does nothing"
ISSUE_KEY = "issue:login-button:v1"

#: create_issue as the tracker declares it: a second run opens a second issue, so it is safe to
#: repeat only under its key (beside the call, or in ``key``).
CREATE_ISSUE = Contract(
    "create_issue", "Open an issue in the tracker.",
    {"type": "object", "properties": {"title": {"type": "string"}, "key": {"type": "string"}},
     "required": ["title"]}, retry=Retry.SAFE_WITH_KEY, idempotency_field="key")


class RetryKind(str, Enum):
    INQUIRY = "inquiry"            # same tool, arguments and key: did the first call take effect?
    NEW_PROPOSAL = "new_proposal"  # no key, or another key: a second action in the world
    CONFLICT = "conflict"          # the original key with another tool or other arguments: refused

    @property
    def phrase(self) -> str:
        """The kind as a sentence says it: "an inquiry", "a new proposal", "a conflict"."""
        return {"inquiry": "an inquiry", "new_proposal": "a new proposal",
                "conflict": "a conflict"}[self.value]


def classify_retry(original: ToolCall, retry: ToolCall, contract: Any = CREATE_ISSUE) -> RetryKind:
    """The host's own rule (``toolkit._unknown.retry_slot``: the slot is the tool and its arguments
    without the key), read as a kind: under no key or another key, a new proposal; under the
    original key in the original slot, an inquiry; the original key in another slot, a conflict."""
    (slot, key), (again_slot, again_key) = (retry_slot(c, contract, parsed_arguments(c.arguments))
                                            for c in (original, retry))
    if key is None or again_key != key:
        return RetryKind.NEW_PROPOSAL
    return RetryKind.INQUIRY if again_slot == slot else RetryKind.CONFLICT


class RemoteTimeout(Exception):
    """No response before the deadline. The request may have been applied."""


class RecordUnavailable(Exception):
    """The service keeps no record a caller could look a call up in."""


class TimeoutDecision(str, Enum):
    """How the runtime settled a call whose first answer was a timeout."""

    RETRIED_WITH_KEY = "retried_with_key"          # the service honours keys: the retry was an inquiry
    FOUND_IN_RECORD = "found_in_record"            # the record shows it happened: not sent again
    RETRIED_AFTER_RECORD = "retried_after_record"  # the record shows it did not happen: sent again, same key
    CONFIRMED_BY_HUMAN = "confirmed_by_human"      # a person checked and said it exists: not sent again
    AWAITING_HUMAN = "awaiting_human"              # nothing could tell: stopped, waiting for a person


def _timeout(call: ToolCall, reason: str, message: str) -> ToolResult:
    error = ToolError("timeout", f"tool {call.name}", message, hint=NEXT_STEP[Status.TIMEOUT], retryable=False)
    return ToolResult(call.call_id, Status.TIMEOUT, failure_class=FailureClass.TIMEOUT, reason=reason,
                      errors=(error,))


@dataclass
class TimeoutRuntime:
    """Sends ``create_issue`` calls and settles timeouts without blind retries. ``human`` (optional)
    answers ``"exists"``, ``"absent"`` or None; ``log`` collects one line per step; ``contract``
    names the key field."""

    tracker: Any
    human: Callable[[ToolCall], str | None] | None = None
    log: list[str] = field(default_factory=list)
    unresolved: dict[str, ToolCall] = field(default_factory=dict)   # call id -> call with unknown outcome
    contract: Any = CREATE_ISSUE

    def key_of(self, call: ToolCall) -> str | None:
        """The key ``call`` carries (beside it or in the contract's field); disagreeing keys count as none."""
        key = carried_key(call, self.contract)
        return key if isinstance(key, str) else None

    def _send(self, call: ToolCall) -> ToolResult:
        arguments = parsed_arguments(call.arguments)
        title = arguments.get("title", "") if isinstance(arguments, dict) else ""
        try:
            output = self.tracker.create_issue(str(title), self.key_of(call))
        except RemoteTimeout:
            self.unresolved[call.call_id] = call
            self.log.append(f"{call.call_id}: timeout, outcome unknown")
            return _timeout(call, "outcome_unknown", "no response before the deadline; the issue may exist")
        self.unresolved.pop(call.call_id, None)
        verb = "the service recognizes the key and returns" if output["replayed"] else "created"
        self.log.append(f"{call.call_id}: {verb} {output['issue']}")
        return ToolResult(call.call_id, Status.SUCCEEDED, output=output, evidence={"issue": output["issue"]})

    def send(self, call: ToolCall) -> ToolResult:
        """First attempt. A timeout comes back as ``Status.TIMEOUT`` and the call is remembered as unresolved."""
        return self._send(call)

    def retry(self, original: ToolCall, proposal: ToolCall) -> tuple[TimeoutDecision | None, ToolResult]:
        """Handle a proposed retry of ``original``: an inquiry settles it, a conflict is refused, a
        new proposal is refused while the original's outcome is unknown and sent as a separate
        action once it is known."""
        kind = classify_retry(original, proposal, self.contract)
        self.log.append(f"{proposal.call_id}: retry of {original.call_id} is {kind.phrase}")
        if kind is RetryKind.INQUIRY:
            decision, result = self.resolve(original)
            return decision, replace(result, call_id=proposal.call_id)  # one result per call id
        if kind is RetryKind.CONFLICT:
            error = ToolError("idempotency_conflict", "$.idempotency_key", "key already used with other arguments",
                              hint="repeat the original call to ask about it, or use a new key", retryable=False)
            return None, ToolResult(proposal.call_id, Status.REJECTED, failure_class=FailureClass.PRECONDITION,
                                    reason="idempotency_conflict", errors=(error,))
        if original.call_id in self.unresolved:
            self.log.append(f"{proposal.call_id}: refused while {original.call_id}'s outcome is unknown")
            error = ToolError("outcome_unknown", f"call {original.call_id}",
                              "the first call's outcome is unknown; this retry has no original key, so it would "
                              "be a second action", hint="retry with the original key, check the record, or ask "
                              "a human", retryable=False)
            return None, ToolResult(proposal.call_id, Status.REJECTED, failure_class=FailureClass.PRECONDITION,
                                    reason="new_proposal_while_unknown", errors=(error,))
        return None, self._send(proposal)

    def resolve(self, call: ToolCall) -> tuple[TimeoutDecision, ToolResult]:
        """Turn a timed-out call's unknown outcome into a known one: key, then record, then a human."""
        key = self.key_of(call)
        if self.tracker.honours_keys and key:
            result = self._send(call)
            if result.ok:
                return TimeoutDecision.RETRIED_WITH_KEY, result
        if key:
            try:
                found = self.tracker.find(key)
            except RecordUnavailable:
                pass
            else:
                if found is not None:
                    self.unresolved.pop(call.call_id, None)
                    self.log.append(f"{call.call_id}: record shows {found['issue']}; not sent again")
                    return TimeoutDecision.FOUND_IN_RECORD, ToolResult(call.call_id, Status.SUCCEEDED, output=found,
                                                                evidence={"issue": found["issue"], "from": "record"})
                self.log.append(f"{call.call_id}: record shows nothing; sending again with the same key")
                result = self._send(call)
                if result.ok:
                    return TimeoutDecision.RETRIED_AFTER_RECORD, result
        answer = self.human(call) if self.human else None
        if answer == "exists":
            self.unresolved.pop(call.call_id, None)
            self.log.append(f"{call.call_id}: a person confirms the issue exists; not sent again")
            return TimeoutDecision.CONFIRMED_BY_HUMAN, ToolResult(call.call_id, Status.SUCCEEDED,
                                                           output={"confirmed_by": "human"},
                                                           evidence={"from": "human confirmation"})
        if answer == "absent":
            self.log.append(f"{call.call_id}: a person confirms nothing was created; sending again")
            result = self._send(call)
            if result.ok:
                return TimeoutDecision.CONFIRMED_BY_HUMAN, result
        self.log.append(f"{call.call_id}: cannot tell; awaiting a person")
        return TimeoutDecision.AWAITING_HUMAN, _timeout(call, "awaiting_human",
                                                 "outcome unknown and nothing can tell; a person must check")


@dataclass
class IssueTracker:
    """A remote issue tracker, in memory.

    ``honours_keys``: a known key returns the first issue instead of a new one.
    ``keeps_references``: each issue stores the caller's key, so ``find`` can
    look a call up afterwards. ``lose_responses``: the next N responses are
    lost *after* the issue was created; ``lose_requests``: the next N requests
    are lost *before* arriving. Either way the caller sees the same timeout.
    """

    honours_keys: bool = False
    keeps_references: bool = False
    lose_responses: int = 0
    lose_requests: int = 0
    issues: list[dict[str, Any]] = field(default_factory=list)

    def create_issue(self, title: str, key: str | None = None) -> dict[str, Any]:
        if self.lose_requests > 0:
            self.lose_requests -= 1
            raise RemoteTimeout("no response within the deadline")
        if self.honours_keys and key:
            for issue in self.issues:
                if issue["key"] == key:
                    return self._respond(issue, replayed=True)
        issue = {"number": len(self.issues) + 1, "title": title, "key": key}
        self.issues.append(issue)
        return self._respond(issue)

    def _respond(self, issue: dict[str, Any], replayed: bool = False) -> dict[str, Any]:
        if self.lose_responses > 0:
            self.lose_responses -= 1
            raise RemoteTimeout("no response within the deadline")
        return {"issue": f"#{issue['number']}", "title": issue["title"], "replayed": replayed}

    def find(self, key: str) -> dict[str, Any] | None:
        """The issue created under ``key``, or None; raises ``RecordUnavailable`` if no references are kept."""
        if not self.keeps_references:
            raise RecordUnavailable("this tracker does not record callers' keys")
        for issue in self.issues:
            if issue["key"] == key:
                return {"issue": f"#{issue['number']}", "title": issue["title"], "replayed": False}
        return None


# --------------------------------------------------------------------------- the illustration

def _issue_call(call_id: str, key: str | None = ISSUE_KEY) -> ToolCall:
    return ToolCall("create_issue", {"title": TITLE}, call_id, idempotency_key=key)


def _blind() -> dict[str, Any]:
    tracker = IssueTracker(lose_responses=1)
    first, again = _issue_call("call_1", None), _issue_call("call_2", None)
    trace = []
    for call in (first, again):  # no runtime in the way: the caller just sends it again
        try:
            trace.append(f"{call.call_id}: created {tracker.create_issue(TITLE)['issue']}")
        except RemoteTimeout:
            trace.append(f"{call.call_id}: timeout, outcome unknown")
    trace.append(f"call_2 was {classify_retry(first, again).phrase}")
    return {"strategy": "retry blindly", "decision": "sent again", "issues": len(tracker.issues), "trace": trace}


def _settled(strategy: str, tracker: IssueTracker, human: Callable[[ToolCall], str | None] | None = None,
             retry_key: str | None = ISSUE_KEY) -> dict[str, Any]:
    runtime = TimeoutRuntime(tracker, human)
    first = _issue_call("call_1")
    runtime.send(first)  # the response is lost: Status.TIMEOUT
    decision, _ = runtime.retry(first, _issue_call("call_2", retry_key))
    shown = decision.value if decision else "refused"
    return {"strategy": strategy, "decision": shown, "issues": len(tracker.issues), "trace": list(runtime.log)}


def create_issue_illustration() -> list[dict[str, Any]]:
    """Each strategy after a ``create_issue`` timeout, and how many issues exist afterwards.

    The response to the first call is lost after the issue was created, so
    exactly one issue is the right answer.
    """
    def person(call: ToolCall) -> str:  # a person opens the tracker and looks
        return "exists" if any(i["title"] == TITLE for i in checked.issues) else "absent"

    checked = IssueTracker(lose_responses=1)
    return [
        _blind(),
        _settled("idempotency key", IssueTracker(honours_keys=True, lose_responses=1)),
        _settled("record lookup", IssueTracker(keeps_references=True, lose_responses=1)),
        _settled("human confirmation", checked, human=person),
        _settled("nothing can tell", IssueTracker(lose_responses=1)),
        _settled("retry with a new key", IssueTracker(lose_responses=1), retry_key="issue:login-button:v2"),
    ]


@dataclass(frozen=True)
class Compensation:
    """Can an effect be undone after the fact, and what must hold before the first attempt?"""

    effect: str
    compensable: bool
    undo: str
    before_acting: str


COMPENSATION: tuple[Compensation, ...] = (
    Compensation("create an issue", True, "close the duplicate; the history still shows both",
                 "an idempotency key or a record lookup"),
    Compensation("send a notification", False, "a read message cannot be unread; a correction is a second message",
                 "a key the sender honours; approval for wide sends"),
    Compensation("make a payment", False, "a refund is a new transaction; the charge stays on the statement",
                 "a key the payment service honours"),
    Compensation("delete data", False, "gone unless a copy exists; a restore is a new write, not an undo",
                 "human approval; a soft delete first"),
)


def compensation_table() -> list[dict[str, Any]]:
    """The effects above as plain rows, ready to print."""
    return [{"effect": c.effect, "compensable": c.compensable, "undo": c.undo, "before acting": c.before_acting}
            for c in COMPENSATION]
