"""The legality indicator, the three layers, and the chapter's worked numbers."""
import pytest

import toolkit as tk
from toolkit._codes import CODES
from course.worlds import CREATE_INVOICE, Books

BILLING = tk.Caller("agent-427", frozenset({"billing.write"}))
GOOD = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "invoice:order-431:v1"}


def host(caller=BILLING, approved=True):
    books = Books(orders={"order-431": {"approved": approved}})
    return tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], caller, books), books


def test_indicator_worked_numbers():
    assert tk.legal(1, 1, 1) == 1      # (1,1,1) -> 1x1x1 = 1
    assert tk.legal(0, 1, 1) == 0      # (0,1,1) -> 0x1x1 = 0: authorization cannot rescue a malformed call


def test_all_three_tests_logged_for_a_legal_call():
    h, books = host()
    result = h.execute(tk.request("create_invoice", GOOD, call_id="c1"))
    verdict = h.log[-1].verdict
    assert [t.outcome for t in verdict.tests] == [tk.Outcome.PASS] * 3
    assert result.status is tk.Status.SUCCEEDED and result.call_id == "c1"
    assert result.evidence == {"invoice_id": "INV-9", "ledger_entry": "invoice:order-431:v1"}
    assert len(books.invoices) == 1


@pytest.mark.parametrize("caller, approved, args, blocked, klass", [
    (BILLING, True, {**GOOD, "amount": "100"}, ("schema_ok",), "schema"),
    (tk.Caller("intern"), True, GOOD, ("auth_ok",), "authorization"),
    (BILLING, False, GOOD, ("Pre",), "precondition"),
    (BILLING, True, {**GOOD, "amount": -5}, ("Pre",), "precondition"),
    (tk.Caller("intern"), False, GOOD, ("auth_ok", "Pre"), "authorization"),
])
def test_blocked_call_names_every_failing_test(caller, approved, args, blocked, klass):
    h, books = host(caller, approved)
    result = h.execute(tk.request("create_invoice", args))
    assert h.log[-1].verdict.blocked_by == blocked
    assert result.status is tk.Status.REJECTED and result.failure_class.value == klass
    assert books.invoices == []


def test_precondition_over_bad_arguments_is_not_evaluable():
    h, _ = host()
    verdict = h.check(tk.request("create_invoice", {"order_id": 431}))
    assert verdict.schema_ok.outcome is tk.Outcome.FAIL
    assert verdict.auth_ok.outcome is tk.Outcome.PASS
    assert verdict.pre.outcome is tk.Outcome.NOT_EVALUABLE
    assert verdict.legal == 0


def test_missing_field_is_named_once_each():
    h, _ = host()
    verdict = h.check(tk.request("create_invoice", {"order_id": "order-431"}))
    pointers = [e.pointer for e in verdict.errors if e.code == "missing_required"]
    assert pointers == ["$.amount", "$.currency", "$.idempotency_key"]


def test_unknown_tool_lists_nearest_names():
    h, _ = host()
    verdict = h.check(tk.request("create_invoce", {}))
    (error,) = verdict.errors
    assert error.code == "unknown_tool" and "create_invoice" in error.hint


def test_contract_card_matches_the_chapter():
    assert CREATE_INVOICE.card().splitlines() == [
        "tool create_invoice(order_id, amount, currency, idempotency_key)",
        "  requires: caller has billing.write; order is approved; amount > 0",
        "  ensures: exactly one invoice is durably associated with idempotency_key",
        "  retry: safe with same idempotency_key",
        "  risk: external financial record",
        "  evidence: invoice id and ledger entry",
    ]


def test_the_printed_product_shows_a_test_that_could_not_run_as_a_dash():
    from toolkit._printed import legal_line
    assert legal_line(0, 1, 1) == "legal = 0 x 1 x 1 = 0"          # the worked example, every test evaluated
    assert legal_line(1, 1, 1) == "legal = 1 x 1 x 1 = 1"
    malformed = tk.check(tk.request("create_invoice", {**GOOD, "amount": "100"}, call_id="c"), CREATE_INVOICE,
                         BILLING, Books(orders={"order-431": {"approved": True}}))
    assert malformed.pre.outcome is tk.Outcome.NOT_EVALUABLE
    assert malformed.lines()[-1] == "legal = 0 x 1 x – = 0"
    assert tk.legal(tk.Outcome.NOT_EVALUABLE, 1, 1) == 0 and malformed.legal == 0   # a dash never counts as a pass
    not_a_call = tk.check({"name": "x"}, None)
    assert not_a_call.lines()[-1] == "legal = 0 x – x – = 0"


def test_pre_asks_two_questions_and_the_layer_map_says_so():
    from toolkit.kernel import LAYER_OF, LAYERS, PRE_QUESTIONS
    assert [layer.test for layer in LAYERS] == ["schema_ok", "auth_ok", "Pre"]
    assert "ready" in LAYER_OF["Pre"].asks and "approval" in LAYER_OF["Pre"].asks
    assert set(PRE_QUESTIONS) == {"precondition_failed", "approval_required"}
    assert all(CODES[code] == LAYER_OF["Pre"].name for code in PRE_QUESTIONS)
