"""Untrusted arguments always get a verdict with structured errors, never an exception."""
import json

from hypothesis import given, settings, strategies as st

import toolkit as tk
from course.worlds import CREATE_INVOICE, Books

CALLER = tk.Caller(scopes=frozenset({"billing.write"}))
WORLD = Books(orders={"order-431": {"approved": True}})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_like_value_gets_a_verdict(value):
    verdict = tk.check(tk.request("create_invoice", value), CREATE_INVOICE, CALLER, WORLD)
    assert verdict.legal in (0, 1)
    if verdict.legal == 0:
        assert verdict.errors and all(isinstance(e, tk.ToolError) for e in verdict.errors)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_as_arguments_gets_a_verdict(text):
    verdict = tk.check(tk.request("create_invoice", text), CREATE_INVOICE, CALLER, WORLD)
    assert verdict.legal == 0 and verdict.schema_ok.outcome is tk.Outcome.FAIL


def codes(arguments):
    return [e.code for e in tk.check(tk.request("create_invoice", arguments), CREATE_INVOICE, CALLER, WORLD).errors]


def test_each_kind_of_bad_input_has_its_own_code():
    assert codes('{"order_id": "order-431", ') == ["invalid_json"]
    assert codes("[1, 2]") == ["not_an_object"]
    assert codes(42) == ["not_an_object"]
    assert codes('{"a": 1, "a": 2}') == ["invalid_json"]
    assert codes('{"amount": NaN}') == ["invalid_json"]
    assert codes("x" * 300_000) == ["too_large"]
    deep = {"order_id": "order-431"}
    for _ in range(100):
        deep = {"nested": deep}
    assert codes(deep) == ["too_large"]
    assert codes(b"\xff\xfe") == ["invalid_json"]


def test_strict_meaning_of_valid():
    base = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "k"}
    assert codes({**base, "amount": "100"}) == ["wrong_type"]          # no lax coercion of "100"
    assert codes({**base, "amount": True}) == ["wrong_type"]           # a boolean is not a number
    assert codes({**base, "amount": None}) == ["wrong_type"]           # null is a wrong type, not missing
    assert codes({**base, "currency": "YEN"}) == ["enum"]
    assert codes({**base, "order_id": "order-431\n"}) == ["pattern"]   # $ means end of text
    assert codes("") == ["missing_required"] * 4                       # empty arguments are {}


def test_secrets_are_redacted_in_feedback():
    args = {"order_id": 5, "api_token": "sk-CANARY-123"}
    verdict = tk.check(tk.request("create_invoice", args), CREATE_INVOICE, CALLER, WORLD)
    assert "sk-CANARY-123" not in json.dumps([e.to_dict() for e in verdict.errors])


def test_wrong_arguments_never_reach_the_tool():
    ran = []
    host = tk.Host.of([tk.Tool(CREATE_INVOICE, lambda a, w: ran.append(a))], CALLER, WORLD)
    for bad in ["{", [], {"order_id": "order-431"}, {"x": 1}]:
        assert host.execute(tk.request("create_invoice", bad)).status is tk.Status.REJECTED
    assert ran == []
