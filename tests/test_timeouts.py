"""After a timeout: no blind retries; the original key makes a retry an inquiry; else record, else a human."""
import pytest

from toolkit.kernel import ToolCall
from toolkit.kernel import FailureClass, Status
from course.worlds import (COMPENSATION, IssueTracker, RetryKind, TimeoutDecision, TimeoutRuntime,
                           classify_retry, compensation_table, create_issue_illustration)

KEY = "issue:login-button:v1"


def call(call_id, key=KEY, title="Login button does nothing"):
    return ToolCall("create_issue", {"title": title}, call_id, idempotency_key=key)


def test_the_illustration_counts():
    rows = {row["strategy"]: row for row in create_issue_illustration()}
    assert rows["retry blindly"]["issues"] == 2, "a blind retry after a lost response makes a second issue"
    for safe in ("idempotency key", "record lookup", "human confirmation"):
        assert rows[safe]["issues"] == 1, f"{safe} must leave exactly one issue"
    assert rows["idempotency key"]["decision"] == TimeoutDecision.RETRIED_WITH_KEY.value
    assert rows["record lookup"]["decision"] == TimeoutDecision.FOUND_IN_RECORD.value
    assert rows["human confirmation"]["decision"] == TimeoutDecision.CONFIRMED_BY_HUMAN.value
    assert rows["nothing can tell"] == {**rows["nothing can tell"], "decision": "awaiting_human", "issues": 1}
    assert (rows["retry with a new key"]["decision"], rows["retry with a new key"]["issues"]) == ("refused", 1)
    assert "call_2 was a new proposal" in rows["retry blindly"]["trace"]


@pytest.mark.parametrize("retry, kind", [
    (call("c2"), RetryKind.INQUIRY),
    (ToolCall("create_issue", '{"title": "Login button does nothing"}', "c2", KEY), RetryKind.INQUIRY),
    (call("c2", key=None), RetryKind.NEW_PROPOSAL),
    (call("c2", key="issue:login-button:v2"), RetryKind.NEW_PROPOSAL),
    (call("c2", title="Logout button does nothing"), RetryKind.CONFLICT),
    (ToolCall("close_issue", {"title": "Login button does nothing"}, "c2", KEY), RetryKind.CONFLICT),
])
def test_a_retry_without_the_original_key_is_a_new_proposal(retry, kind):
    assert classify_retry(call("c1"), retry) is kind


def test_a_call_without_a_key_has_no_inquiry():
    assert classify_retry(call("c1", key=None), call("c2", key=None)) is RetryKind.NEW_PROPOSAL


def test_the_kind_agrees_with_the_host():
    """One question, one answer: after a timeout, the host refuses exactly the retries
    ``classify_retry`` calls new proposals in the timed-out call's slot, and runs an inquiry."""
    import toolkit as tk
    from course.worlds import CREATE_INVOICE, ORDER, Books, retry_variants

    original = tk.request("create_invoice", ORDER, call_id="call_1")
    for label, retry in retry_variants().items():
        books = Books(orders={"order-431": {"approved": True}}, honour_keys=True)

        def lost_once(arguments, world):
            answer = books.issue(arguments)
            if len(books.invoices) == 1 and not answer.get("replayed"):   # made, the answer lost
                raise tk.ToolFailure(Status.TIMEOUT, "no_answer", "the answer was lost",
                                     FailureClass.TIMEOUT)
            return answer

        host = tk.Host.of([tk.Tool(CREATE_INVOICE, lost_once)],
                          tk.Caller().with_scopes("billing.write"), books)
        assert host.execute(original).status is Status.TIMEOUT
        kind, answer = classify_retry(original, retry, CREATE_INVOICE), host.execute(retry)
        second_action = answer.reason == "new_proposal_while_unknown"
        if kind is RetryKind.INQUIRY:
            assert answer.ok and not second_action and len(books.invoices) == 1, (label, answer)
        elif kind is RetryKind.NEW_PROPOSAL:   # no key at all is refused sooner: by the schema
            schema_refused = not answer.ok and answer.errors[0].code == "missing_required"
            assert (second_action or schema_refused) and len(books.invoices) == 1, (label, answer)
        else:   # a conflict is another slot: not the timed-out call, so not refused as its repeat
            assert kind is RetryKind.CONFLICT and not second_action, (label, answer)
    assert [classify_retry(original, r, CREATE_INVOICE) for r in retry_variants().values()] == [
        RetryKind.INQUIRY, RetryKind.NEW_PROPOSAL, RetryKind.NEW_PROPOSAL, RetryKind.CONFLICT]


def test_timeout_is_a_structured_unknown():
    runtime = TimeoutRuntime(IssueTracker(lose_responses=1))
    result = runtime.send(call("c1"))
    assert result.status is Status.TIMEOUT and result.failure_class is FailureClass.TIMEOUT
    assert result.reason == "outcome_unknown" and result.call_id == "c1"
    assert "execution record" in result.next_step and not result.errors[0].retryable
    assert "c1" in runtime.unresolved


def test_new_proposal_refused_while_unknown_then_allowed_as_a_separate_action():
    tracker = IssueTracker(keeps_references=True, lose_responses=1)
    runtime = TimeoutRuntime(tracker)
    runtime.send(call("c1"))
    decision, refused = runtime.retry(call("c1"), call("c2", key=None))
    assert decision is None and refused.status is Status.REJECTED and refused.call_id == "c2"
    assert refused.reason == "new_proposal_while_unknown" and len(tracker.issues) == 1
    decision, settled = runtime.retry(call("c1"), call("c3"))
    assert decision is TimeoutDecision.FOUND_IN_RECORD and settled.call_id == "c3" and settled.ok
    assert runtime.unresolved == {}
    decision, second = runtime.retry(call("c1"), call("c4", key="issue:login-button:v2"))
    assert second.ok and len(tracker.issues) == 2, "once the first is known, a new key is an honest second action"


def test_record_shows_nothing_then_retry_with_the_same_key():
    tracker = IssueTracker(keeps_references=True, lose_requests=1)
    runtime = TimeoutRuntime(tracker)
    assert runtime.send(call("c1")).status is Status.TIMEOUT and tracker.issues == []
    decision, result = runtime.retry(call("c1"), call("c2"))
    assert decision is TimeoutDecision.RETRIED_AFTER_RECORD and result.ok
    assert [i["key"] for i in tracker.issues] == [KEY]


def test_human_says_absent_then_one_send():
    tracker = IssueTracker(lose_requests=1)
    runtime = TimeoutRuntime(tracker, human=lambda c: "absent")
    runtime.send(call("c1"))
    decision, result = runtime.retry(call("c1"), call("c2"))
    assert decision is TimeoutDecision.CONFIRMED_BY_HUMAN and result.ok and len(tracker.issues) == 1


def test_conflicting_retry_is_refused():
    runtime = TimeoutRuntime(IssueTracker(lose_responses=1))
    runtime.send(call("c1"))
    decision, result = runtime.retry(call("c1"), call("c2", title="Something else"))
    assert decision is None and result.reason == "idempotency_conflict" and result.status is Status.REJECTED


def test_non_compensable_effects():
    rows = compensation_table()
    assert {r["effect"] for r in rows if not r["compensable"]} == \
        {"send a notification", "make a payment", "delete data"}
    assert len(rows) == len(COMPENSATION) and all(r["undo"] and r["before acting"] for r in rows)


def test_arguments_as_json_text_and_the_key_inside_them():
    """The timeout rules read the parsed arguments, and the key from the field the contract names."""
    import json

    from toolkit.kernel import Contract, Retry

    contract = Contract("create_issue", "Open an issue.", {"type": "object"}, retry=Retry.SAFE_WITH_KEY,
                        idempotency_field="key")
    tracker = IssueTracker(honours_keys=True, lose_responses=1)
    runtime = TimeoutRuntime(tracker, contract=contract)
    text = json.dumps({"title": "Login button does nothing", "key": KEY})
    first = ToolCall("create_issue", text, "c1")
    assert runtime.send(first).status is Status.TIMEOUT
    assert tracker.issues == [{"number": 1, "title": "Login button does nothing", "key": KEY}]
    again = ToolCall("create_issue", {"title": "Login button does nothing", "key": KEY}, "c2")
    assert classify_retry(first, again, contract) is RetryKind.INQUIRY
    decision, result = runtime.retry(first, again)
    assert decision is TimeoutDecision.RETRIED_WITH_KEY and result.ok and result.call_id == "c2"
    assert len(tracker.issues) == 1, "the retry under the key inside the text was an inquiry"
