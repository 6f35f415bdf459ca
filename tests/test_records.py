"""Execution records: the explicit state machine, retry counting, redacted summaries."""
import itertools

import pytest

import toolkit as tk
from toolkit.kernel import Contract
from toolkit.kernel import Status
from toolkit.effects import (FINAL, FROM_STATUS, TRANSITIONS, ExecutionRecord, IllegalTransition, RecordState, Tick,
                             open_record)
from toolkit._show import summarize

CANARY = "sk-CANARY-123"


def record(call_id="call_1"):
    return open_record(tk.request("create_invoice", {"order_id": "order-431"}, call_id=call_id), "agent-427")


def test_a_new_record_is_requested_and_keeps_who_and_what():
    r = record()
    assert r.state is RecordState.REQUESTED and r.path() == ["requested"]
    assert (r.call_id, r.initiator, r.tool, r.retries) == ("call_1", "agent-427", "create_invoice", 0)
    assert r.summary == '{"order_id": "order-431"}'


def test_happy_path_follows_the_chapter_line():
    r = record()
    for state in ("approved", "running", "succeeded"):
        r.move(state)
    assert r.path() == ["requested", "approved", "running", "succeeded"]
    assert r.final and [t.at for t in r.transitions] == [0, 1, 2, 3]


def test_every_state_of_the_chapter_is_present():
    assert {s.value for s in RecordState} == {"requested", "approved", "running", "succeeded", "failed", "rejected",
                                        "cancelled", "timeout", "awaiting_human"}
    assert FINAL == {RecordState.SUCCEEDED, RecordState.REJECTED, RecordState.CANCELLED}
    assert set(TRANSITIONS) == set(RecordState)


def reach(target):
    """A record brought to ``target`` along allowed moves (breadth-first over the table)."""
    paths = {RecordState.REQUESTED: []}
    frontier = [RecordState.REQUESTED]
    while frontier:
        nxt = []
        for s in frontier:
            for t in TRANSITIONS[s]:
                if t not in paths:
                    paths[t] = paths[s] + [t]
                    nxt.append(t)
        frontier = nxt
    r = record()
    for s in paths[target]:
        r.move(s)
    return r


def test_every_state_is_reachable():
    for state in RecordState:
        assert reach(state).state is state


@pytest.mark.parametrize("source, target", [(s, t) for s, t in itertools.product(RecordState, RecordState)
                                            if t not in TRANSITIONS[s]])
def test_every_move_outside_the_table_raises(source, target):
    r = reach(source)
    before = list(r.transitions)
    with pytest.raises(IllegalTransition) as err:
        r.move(target)
    assert f"from {source.value} to {target.value}" in str(err.value)
    assert err.value.call_id == "call_1" and r.transitions == before       # nothing changed


def test_illegal_move_message_lists_what_was_allowed():
    r = record()
    r.move("approved")
    r.move("running")
    r.move("succeeded")
    with pytest.raises(IllegalTransition, match="succeeded is final"):
        r.move("running")
    with pytest.raises(IllegalTransition, match=r"allowed: .*approved"):
        record().move("succeeded")           # nothing may succeed without running


def test_unknown_state_name_is_a_programming_error():
    with pytest.raises(ValueError):
        record().move("done")


def test_retries_are_moves_back_into_running():
    r = record()
    r.move("approved")
    r.move("running")
    r.move("failed", "rate_limited", "execution")
    r.move("running")
    r.move("timeout", "no_answer", "timeout")
    r.move("running")
    r.move("succeeded")
    assert r.retries == 2 and [t.retry for t in r.transitions] == [0, 0, 0, 0, 1, 1, 2, 2]
    assert "(execution: rate_limited)" in r.lines()[3]


def test_timeout_can_be_reconciled_or_escalated():
    for target in ("succeeded", "failed", "awaiting_human"):
        r = reach(RecordState.TIMEOUT)
        r.move(target, "reconciled from the service's records")
        assert r.state.value == target


@pytest.mark.parametrize("status, state", [(s, FROM_STATUS[s]) for s in Status])
def test_settle_maps_every_result_status(status, state):
    r = reach(RecordState.RUNNING) if state is not RecordState.REJECTED else record()
    r.settle(status)
    assert r.state is state


def test_listener_sees_every_transition_in_order():
    seen = []
    r = ExecutionRecord("c9", "agent-427", "read_file", "{}", listener=lambda rec, t: seen.append(t.target))
    r.move("approved")
    r.move("cancelled")
    assert seen == [RecordState.REQUESTED, RecordState.APPROVED, RecordState.CANCELLED]


def test_tick_clock_is_deterministic():
    a, b = Tick(), Tick(start=10, step=0.5)
    assert [a() for _ in range(3)] == [0, 1, 2] and [b() for _ in range(3)] == [10, 10.5, 11]


# ------------------------------------------------------------------ argument summaries
SECRET = Contract("call_api", "x", {"type": "object"}, secret_fields=("account_number",))


@pytest.mark.parametrize("arguments", [
    {"q": "x", "api_key": CANARY},
    {"q": "x", "headers": {"Authorization": f"Bearer {CANARY}"}},
    {"q": "x", "account_number": CANARY},
    {"q": "x", "auth": [{"token": CANARY}]},
    '{"q": "x", "api_key": "' + CANARY + '"}',
    '{"q": "x", "api_key": "' + CANARY + '"',          # cut JSON: never copied
    b'{"token": "' + CANARY.encode() + b'"}',
])
def test_summary_never_holds_a_secret(arguments):
    call = tk.request("call_api", arguments, call_id="c1")
    summary = open_record(call, "agent-427", SECRET).summary
    assert CANARY not in summary
    assert "x" in summary or "unparsed" in summary or "[redacted]" in summary


def test_summary_keeps_what_helps_troubleshooting():
    summary = summarize({"path": "src/app.py", "command": "pytest -q", "password": "hunter2"})
    assert "src/app.py" in summary and "pytest -q" in summary and "hunter2" not in summary


def test_long_summaries_are_cut():
    assert len(summarize({"text": "a" * 1000})) == 120


def test_the_chapter01_diagram_lists_only_moves_the_record_allows():
    """``call_stages`` is what the chapter 01 diagram draws; every move it lists is a legal record move."""
    from course.worlds import BRANCHES, STAGES, Branch, main_moves, moves, not_drawn, status_of

    drawn = moves()
    assert all(b in TRANSITIONS[a] for a, b in drawn)
    assert set(drawn) | set(not_drawn()) == {(a, b) for a in TRANSITIONS for b in TRANSITIONS[a]}
    assert main_moves()[0] == (RecordState.REQUESTED, RecordState.APPROVED) and STAGES[0].state is None
    assert status_of(RecordState.TIMEOUT) is Status.TIMEOUT and status_of(RecordState.AWAITING_HUMAN) is None
    assert "a person decides" in BRANCHES[-1].advice
    with pytest.raises(ValueError, match="does not allow"):
        moves(branches=BRANCHES + (Branch("schema", "skip", RecordState.REQUESTED, RecordState.SUCCEEDED, "x"),))
