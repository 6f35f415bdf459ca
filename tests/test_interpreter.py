"""The evaluate loop: refusal is a normal transition, and the ledger stands between retries and effects."""
import toolkit as tk
from course.worlds import ScriptedPolicy
from course.worlds import CREATE_INVOICE, Books

ARGS = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "invoice:order-431:v1"}


def setup():
    books = Books(orders={"order-431": {"approved": True}})
    host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], tk.Caller(scopes=frozenset({"billing.write"})), books)
    return host, books


def test_rejection_becomes_an_observation_and_the_policy_corrects_itself():
    host, books = setup()

    def correct(state):
        last = state.last
        assert last.kind == "rejected" and last.result.reason == "missing_required"
        return tk.request("create_invoice", ARGS, call_id="c2", idempotency_key=ARGS["idempotency_key"])

    policy = ScriptedPolicy([tk.request("create_invoice", {"order_id": "order-431"}, call_id="c1"), correct])
    state = tk.evaluate(tk.State("invoice order 431"), policy, host, tk.MemoryLedger())
    assert state.done and [o.kind for o in state.observations] == ["rejected", "result"]
    assert state.observations[1].result.status is tk.Status.SUCCEEDED
    assert len(books.invoices) == 1 and len(host.log) == 2


def test_retry_with_the_same_key_replays_and_does_not_duplicate():
    host, books = setup()
    ledger = tk.MemoryLedger()
    call = tk.request("create_invoice", ARGS, idempotency_key=ARGS["idempotency_key"])
    state = tk.evaluate(tk.State("t"), ScriptedPolicy([call, call]), host, ledger)
    assert len(ledger) == 1 and len(books.invoices) == 1
    assert state.observations[0].result == state.observations[1].result


def test_retry_without_the_original_key_is_a_new_proposal():
    host, books = setup()
    first = tk.request("create_invoice", ARGS, call_id="a")
    fresh = tk.request("create_invoice", {**ARGS, "idempotency_key": "invoice:order-431:v2"}, call_id="b")
    tk.evaluate(tk.State("t"), ScriptedPolicy([first, fresh]), host, tk.MemoryLedger())
    assert [i["invoice_id"] for i in books.invoices] == ["INV-9", "INV-10"]   # two invoices for order-431


def test_the_key_inside_the_arguments_is_the_ledger_key():
    host, books = setup()
    calls = [tk.request("create_invoice", ARGS, call_id=c) for c in ("a", "b")]   # two deliveries, new call ids
    state = tk.evaluate(tk.State("t"), ScriptedPolicy(calls), host, tk.MemoryLedger())
    assert len(books.invoices) == 1
    assert [o.result.call_id for o in state.observations] == ["a", "b"]


def test_disagreeing_keys_are_refused():
    host, books = setup()
    call = tk.request("create_invoice", ARGS, call_id="a", idempotency_key="other-key")
    state = tk.evaluate(tk.State("t"), ScriptedPolicy([call]), host, tk.MemoryLedger())
    assert books.invoices == [] and state.observations[0].result.reason == "idempotency_conflict"


def test_a_verdict_answers_for_its_own_call_only():
    host, books = setup()
    good = tk.request("create_invoice", ARGS, call_id="good")
    bad = tk.request("create_invoice", {"order_id": "order-431"}, call_id="bad")
    result = host.execute(bad, host.check(good))       # a borrowed verdict is not trusted
    assert result.status is tk.Status.REJECTED and result.call_id == "bad" and books.invoices == []


def test_ledger_rule_two_branches():
    effects = []

    def f(x):
        effects.append(x)
        return f"INV-{8 + len(effects)}"

    L0 = {}
    L1, y1 = tk.invoke(f, "order-431", "invoice-431", L0)
    L2, y2 = tk.invoke(f, "order-431", "invoice-431", L1)
    assert (len(L0), len(L1), len(L2)) == (0, 1, 1)
    assert y1 == y2 == "INV-9" and len(effects) == 1


def test_loop_is_bounded():
    host, _ = setup()
    forever = ScriptedPolicy([lambda s: tk.request("nope", {})] * 1000)
    state = tk.evaluate(tk.State("t"), forever, host, max_steps=5)
    assert len(state.observations) == 5 and not state.done


def test_same_key_with_different_arguments_is_a_conflict_not_a_replay():
    host, books = setup()
    first = tk.request("create_invoice", ARGS, call_id="a")
    changed = tk.request("create_invoice", {**ARGS, "amount": 999}, call_id="b")
    state = tk.evaluate(tk.State("t"), ScriptedPolicy([first, changed]), host, tk.MemoryLedger())
    second = state.observations[1].result
    assert len(books.invoices) == 1
    assert second.call_id == "b" and second.status is tk.Status.REJECTED
    assert second.errors[0].code == "idempotency_conflict"


# --------------------------------------------------------------------------- arguments as JSON text

def test_json_text_arguments_with_the_same_key_make_one_invoice(tmp_path):
    """Vendors deliver arguments as text: the key and the fingerprint come from the parsed, validated value."""
    import json

    text = json.dumps(ARGS)
    for make in (tk.MemoryLedger, lambda: tk.DurableLedger(tmp_path / "l.db")):
        host, books = setup()
        ledger = make()
        results = [tk.invoke_with_ledger(host, tk.request("create_invoice", args, cid), ledger)
                   for cid, args in (("call_1", text), ("call_2", text), ("call_3", ARGS))]
        assert [r.status for r in results] == [tk.Status.SUCCEEDED] * 3, [r.to_dict() for r in results]
        assert [r.call_id for r in results] == ["call_1", "call_2", "call_3"]
        assert len(books.invoices) == 1 and len(ledger) == 1, "text and dict are the same call under one key"
        if isinstance(ledger, tk.DurableLedger):
            assert [e["key"] for e in ledger.entries()] == [ARGS["idempotency_key"]]
            ledger.close()


def test_invoke_with_ledger_checks_the_call_before_the_ledger_sees_it():
    host, books = setup()
    ledger = tk.MemoryLedger()
    refused = tk.invoke_with_ledger(host, tk.request("create_invoice", '{"order_id": "order-431"', "c1"), ledger)
    assert refused.status is tk.Status.REJECTED and refused.reason == "invalid_json" and refused.call_id == "c1"
    assert len(ledger) == 0 and ledger.pending() == [] and books.invoices == []


def test_the_transcript_prints_arguments_redacted():
    from toolkit.kernel import Contract, Retry

    secret, token = "hunter2-correct-horse", "sk-live-0123456789abcdef"
    contract = Contract("send_report", "Send a report.", {"type": "object"}, retry=Retry.SAFE_WITH_KEY,
                        idempotency_field="idempotency_key", secret_fields=("signing",))
    host = tk.Host.of([tk.Tool(contract, lambda a, w: {"sent": True})])
    calls = [tk.request("send_report", {"password": secret, "signing": "s3cr3t-signing", "note": f"use {token}",
                                        "idempotency_key": "r1"}, "c1"),
             tk.request("send_report", f'{{"api_key": "{token}", "idempotency_key": "r2"}}', "c2")]
    state = tk.evaluate(tk.State("report"), ScriptedPolicy(calls), host, tk.MemoryLedger())
    text = "\n".join(state.transcript())
    assert [o.result.status for o in state.observations] == [tk.Status.SUCCEEDED] * 2
    for shown in (secret, token, "s3cr3t-signing"):
        assert shown not in text, text
    assert "[redacted]" in text and "send_report(" in text and "#c1" in text and "#c2" in text
