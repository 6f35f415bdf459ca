"""Chapter 05: a timeout is a missing answer, not a failure: the effect may or may not have happened.

After a timeout the runtime never retries blindly: it turns "unknown" into "known" the cheapest
way there is (retry with the *original* key where the service honours keys, look the call up in
the service's record, ask a human), else the call stays ``awaiting_human``. A retry with the
original key is an *inquiry*; one without it is a *new proposal*, refused while the first call's
outcome is unknown. ``TimeoutRuntime`` talks to any service with ``honours_keys``,
``create_issue(title, key)`` (raising ``RemoteTimeout``) and ``find(key)`` (raising
``RecordUnavailable``); the stand-in is ``course.worlds.issue_tracker``."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable

from toolkit.kernel import NEXT_STEP, FailureClass, Status, ToolCall, ToolError, ToolResult
from toolkit._json import carried_key, parsed_arguments, same_arguments


class RemoteTimeout(Exception):
    """No response before the deadline. The request may have been applied."""


class RecordUnavailable(Exception):
    """The service keeps no record a caller could look a call up in."""



class RetryKind(str, Enum):
    INQUIRY = "inquiry"            # same tool, arguments and key: did the first call take effect?
    NEW_PROPOSAL = "new_proposal"  # no key, or another key: a second action in the world
    CONFLICT = "conflict"          # the original key with another tool or other arguments: refused

    @property
    def phrase(self) -> str:
        """The kind as a sentence says it: "an inquiry", "a new proposal", "a conflict"."""
        return {"inquiry": "an inquiry", "new_proposal": "a new proposal", "conflict": "a conflict"}[self.value]


def classify_retry(original: ToolCall, retry: ToolCall, contract: Any = None) -> RetryKind:
    """A retry without the original key is a new proposal; with it, an inquiry (``contract``: where
    the key travels inside the arguments)."""
    first, again = carried_key(original, contract), carried_key(retry, contract)
    if not isinstance(first, str) or again != first:
        return RetryKind.NEW_PROPOSAL
    if retry.name != original.name or not same_arguments(retry.arguments, original.arguments):
        return RetryKind.CONFLICT
    return RetryKind.INQUIRY


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
    contract: Any = None

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
