"""Chapter 05: the create_issue illustration: a tracker that acts, then loses its answer.

``IssueTracker`` is a remote issue tracker in memory whose response can be
lost after it created the issue. ``create_issue_illustration`` plays each
strategy after such a timeout (retry blindly, the idempotency key, a record
lookup, a person, nothing, a new key) through
``toolkit.effects.timeouts.TimeoutRuntime`` and counts the issues that exist
afterwards. One is the right answer. ``COMPENSATION`` is the chapter's table of effects that can or cannot
be undone after the fact, and what must hold before the first attempt.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from toolkit.kernel import ToolCall
from toolkit.effects import RecordUnavailable, RemoteTimeout, TimeoutRuntime, classify_retry

TITLE = "Login button does nothing"
ISSUE_KEY = "issue:login-button:v1"


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


__all__ = ["IssueTracker", "create_issue_illustration"]


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
