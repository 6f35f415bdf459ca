"""The contract core under attack: no secret in what it returns, logs or prints; bad input gets a structured refusal.

Each test here was written against a way the core broke when tried as a hostile model (or a careless tool
author) would: a secret echoed by a tool's own error, a secret in an array under a secret-named field, a secret
the scrubber missed because it was JSON-escaped, a lone surrogate or a 5,000-digit number that passed the schema
layer and broke a later ``json.dumps`` or UTF-8 encode, a pattern the ``$`` rewrite made invalid, a tool name of
ten million characters, ``Host.check(None)``.
"""
from __future__ import annotations

import dataclasses
import json

import pytest

import toolkit as tk
from toolkit._caps import MAX_CALL_ID_CHARS, MAX_ECHO_CHARS, MAX_ERRORS_PER_CALL, MAX_NAME_CHARS
from toolkit._show import REDACTED, is_secret_name, scrub, summarize
from toolkit.kernel import Condition, Contract, ToolFailure
from toolkit.effects import open_record
from course.worlds import CREATE_INVOICE, Books

CANARY = "sk-CANARY-7f3a9c"
PASSWORD = "hunter2-CANARY-pw"
UNICODE_SECRET = "pässwörd-CANARY-ü"
BILLING = tk.Caller("agent", frozenset({"billing.write"}))
ARGS = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "inv:431:v1"}


def forms(secret: str) -> list[str]:
    """Every way a secret may be written into text: as is, JSON-escaped (ASCII or not), as repr."""
    return sorted({secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
                   repr(secret)[1:-1], ascii(secret)[1:-1]})


def texts(obj, depth=0):
    """Every string held anywhere inside ``obj`` (mappings, sequences, dataclasses), keys included."""
    if depth > 40:
        return
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from texts(k, depth + 1)
            yield from texts(v, depth + 1)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from texts(v, depth + 1)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from texts(getattr(obj, f.name), depth + 1)


def leaks(obj, *secrets: str) -> list[str]:
    """The forms of ``secrets`` found in ``obj``: in any string it holds, or rendered as a log or a model sees it."""
    found = [str(obj), repr(obj), json.dumps(obj, default=repr), json.dumps(obj, default=repr, ensure_ascii=False),
             *texts(obj)]
    return sorted({f for s in secrets for f in forms(s) for text in found if f in text})


def plain_contract(name="partner", schema=None, **fields) -> Contract:
    schema = schema or {"type": "object", "properties": {"q": {"type": "string"}, "token": {"type": "string"},
                                                         "password": {"type": "string"}},
                        "additionalProperties": False}
    return Contract(name, "a partner API", schema, **fields)


# =================================================================== section 2: secrets
def test_a_tools_own_error_has_every_text_scrubbed():
    def tool(arguments, world):
        error = tk.ToolError("partner_refused", "$.token", f"refused {arguments['token']}",
                             expected={"token": arguments["token"], "nested": [arguments["password"]]},
                             received=arguments["token"], hint=f"do not send {arguments['password']} again")
        raise ToolFailure(tk.Status.REJECTED, "partner_refused", error=error)

    host = tk.Host.of([tk.Tool(plain_contract(), tool)])
    result = host.execute(tk.request("partner", {"q": "x", "token": CANARY, "password": PASSWORD}, "c1"))
    assert result.status is tk.Status.REJECTED and result.errors[0].pointer == "$.token"
    assert leaks(result.to_dict(), CANARY, PASSWORD) == []
    assert REDACTED in result.errors[0].hint and REDACTED in json.dumps(result.errors[0].expected)


def test_errors_a_contracts_conditions_return_are_scrubbed():
    def pre(arguments, world):
        return tk.ToolError("precondition_failed", "$.token", "no", received=arguments["token"],
                            hint=f"token {arguments['token']} is revoked")

    def post(arguments, output, world):
        return tk.ToolError("postcondition_failed", "$", "no", received={"sent": arguments["password"]})

    host = tk.Host.of([tk.Tool(plain_contract(preconditions=(Condition("live", "token is live", pre),)),
                               lambda a, w: "ok"),
                       tk.Tool(plain_contract("partner2", postconditions=(Condition("p", "p", post),)),
                               lambda a, w: "ok")])
    refused = host.execute(tk.request("partner", {"token": CANARY}, "c1"))
    broken = host.execute(tk.request("partner2", {"password": PASSWORD}, "c2"))
    assert refused.reason == "precondition_failed" and broken.reason == "postcondition_failed"
    assert leaks([refused.to_dict(), broken.to_dict()], CANARY, PASSWORD) == []


@pytest.mark.parametrize("arguments, schema", [
    ({"api_keys": ["hunter2-CANARY-pw"]},
     {"type": "object", "properties": {"api_keys": {"type": "array", "items": {"type": "string", "pattern": "^k-"}}}}),
    ({"auth": {"code": "hunter2-CANARY-pw"}},
     {"type": "object", "properties": {"auth": {"type": "object",
                                                "properties": {"code": {"type": "string", "pattern": "^[0-9]+$"}}}}}),
    ({"password": {"value": "hunter2-CANARY-pw"}},
     {"type": "object", "properties": {"password": {"type": "object",
                                                    "properties": {"value": {"enum": ["a", "b"]}}}}}),
])
def test_schema_errors_below_a_secret_field_are_redacted(arguments, schema):
    contract = Contract("t", "t", schema)
    verdict = tk.check(tk.request("t", arguments, "c1"), contract)
    assert verdict.legal == 0 and verdict.errors
    assert leaks([e.to_dict() for e in verdict.errors], PASSWORD) == []


def test_scrub_catches_json_escaped_and_repr_forms():
    for secret in (UNICODE_SECRET, 'quote"and\\back-CANARY', "line1\nline2-CANARY", "it's-CANARY"):
        text = " | ".join([json.dumps({"v": secret}), json.dumps({"v": secret}, ensure_ascii=False),
                           repr({"v": secret}), str([secret]), ascii(secret)])
        assert leaks(scrub(text, {secret}), secret) == [], secret


def test_a_tool_failure_that_json_dumps_its_arguments_leaks_nothing():
    def tool(arguments, world):
        raise ToolFailure(tk.Status.FAILED, "bad", f"partner said no to {json.dumps(arguments)}")

    host = tk.Host.of([tk.Tool(plain_contract(), tool)])
    result = host.execute(tk.request("partner", {"q": "x", "password": UNICODE_SECRET}, "c1"))
    assert result.status is tk.Status.FAILED and leaks(result.to_dict(), UNICODE_SECRET) == []


@pytest.mark.parametrize("name", ["pwd", "pass", "passphrase", "access_key", "auth", "bearer", "jwt", "session_id",
                                  "otp", "pin", "ssn", "signature", "ssh_key", "card_number", "cvv",
                                  "user_pwd", "x-auth", "login.pass", "cardNumber", "sessionId", "SSHKey",
                                  "accessKey", "AccessKeyId", "sessionid", "PIN", "bearerToken", "jwt_token",
                                  "api_key", "password", "client_secret", "Authorization"])
def test_secret_field_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["pinned", "passenger", "author", "authority", "spinner", "compass", "passage",
                                  "path", "order_id", "amount", "signal", "session", "card", "keyboard", "opinion",
                                  "description", "bypass", "otpauthor"])
def test_names_that_only_look_secret(name):
    assert not is_secret_name(name)


def test_a_call_summary_masks_secret_fields():
    args = {"account": "acct-CANARY-9", "q": "status", "password": PASSWORD, "note": f"use {CANARY}"}
    call = tk.ToolCall("partner", args, "c1")
    assert leaks(call.summary(), PASSWORD, CANARY) == []
    assert "acct-CANARY-9" in call.summary() and "acct-CANARY-9" not in call.summary(secret_fields=("account",))
    text = tk.ToolCall("partner", json.dumps(args), "c2")           # the same arguments as JSON text
    assert leaks(text.summary(), PASSWORD, CANARY) == []
    long = tk.ToolCall("partner", {"q": "x" * 60, "password": PASSWORD * 3}, "c3")   # the secret straddles the cut
    assert "hunter" not in long.summary() and len(long.summary()) < 120


def test_a_call_summary_without_secrets_is_unchanged():
    assert tk.ToolCall("read_file", {"path": "a.txt"}, "call_1").summary() == 'read_file({"path": "a.txt"}) #call_1'
    assert tk.ToolCall("f", '{"a": 1}', "c").summary() == 'f("{\\"a\\": 1}") #c'


def test_record_summary_is_masked_before_it_is_cut():
    # a credential in free text right at the cut: cutting first left "sk-CAN...", which no shape matches
    shaped = summarize({"note": "a" * 100 + " " + CANARY})
    assert "sk-CAN" not in shaped and len(shaped) <= 120
    # a secret's value repeated in a plain field straddling the cut
    repeated = summarize({"password": PASSWORD, "z_note": "x" * 70 + PASSWORD})
    assert "hunter" not in repeated and len(repeated) <= 120
    assert "hunter" not in summarize({"password": PASSWORD, "z_note": "x" * 70 + PASSWORD})
    record = open_record(tk.ToolCall("partner", {"q": "y" * 90, "token": CANARY, "z": CANARY}, "c1"), "agent")
    assert "sk-CAN" not in record.summary


@pytest.mark.parametrize("as_text", [False, True])
def test_the_host_log_keeps_a_redacted_copy(as_text):
    seen = []
    contract = plain_contract(secret_fields=("q",))
    host = tk.Host.of([tk.Tool(contract, lambda a, w: seen.append(dict(a)) or "ok")])
    arguments = {"q": "acct-CANARY-9", "token": CANARY, "password": PASSWORD}
    call = tk.request("partner", json.dumps(arguments) if as_text else arguments, "c1")
    result = host.execute(call)
    assert result.ok and seen == [arguments]                       # the tool itself got the real values
    attempt = host.log[-1]
    assert attempt.call.call_id == "c1" and attempt.verdict.legal == 1
    assert leaks([attempt.call.arguments, attempt.verdict.arguments, attempt.call.summary(), str(attempt)],
                 CANARY, PASSWORD, "acct-CANARY-9") == []
    assert call.arguments == (json.dumps(arguments) if as_text else arguments)   # the caller's call is untouched


def test_the_host_log_copy_of_unparsable_text_is_scrubbed():
    host = tk.Host.of([tk.Tool(plain_contract(), lambda a, w: "ok")])
    host.execute(tk.request("partner", '{"token": "' + CANARY + '", ', "c1"))
    host.execute(tk.request("partner", '{"q": "x", "password": "' + PASSWORD + '", "q": ', "c2"))
    assert leaks([a.call.arguments for a in host.log], CANARY, PASSWORD) == []
    assert '"q": "x"' in host.log[-1].call.arguments                    # the rest stays readable


# =================================================================== section 4: bad input
def invoice(arguments, call_id="c1", name="create_invoice"):
    return tk.Host.of([tk.Tool(CREATE_INVOICE, lambda a, w: {"invoice_id": "INV-1"})], BILLING,
                      Books(orders={"order-431": {"approved": True}})), tk.ToolCall(name, arguments, call_id)


def refusal(arguments, call_id="c1", name="create_invoice"):
    host, call = invoice(arguments, call_id, name)
    verdict = host.check(call)
    result = host.execute(call)
    assert verdict.legal == 0 and result.status is tk.Status.REJECTED
    data = result.to_dict()
    json.dumps(data, allow_nan=False, ensure_ascii=False).encode("utf-8")   # serialisable, encodable as UTF-8
    assert len(verdict.errors) <= MAX_ERRORS_PER_CALL and len(result.errors) <= MAX_ERRORS_PER_CALL
    return verdict.errors, data


@pytest.mark.parametrize("arguments, code, pointer", [
    ('{"order_id": "order-\\ud83d", "amount": 1, "currency": "EUR", "idempotency_key": "k"}',
     "invalid_json", "$.order_id"),
    ({**ARGS, "order_id": "order-\ud83d"}, "not_serializable", "$.order_id"),
    ('{"\\udc00": 1}', "invalid_json", "$"),
    ({**ARGS, "idempotency_key": "k\udfff"}, "not_serializable", "$.idempotency_key"),
    ({**ARGS, "amount": 10 ** 5000}, "not_serializable", "$.amount"),
    ({**ARGS, "amount": -(10 ** 400)}, "not_serializable", "$.amount"),
    ('{"amount": 1' + "0" * 4000 + "}", "invalid_json", "$.amount"),
    ('{"amount": 1e400}', "invalid_json", "$.amount"),
    ({**ARGS, "amount": float("nan")}, "not_serializable", "$.amount"),
    ({"lines": [{"qty": float("inf")}]}, "not_serializable", "$.lines[0].qty"),
])
def test_values_that_are_not_json_are_refused_at_the_schema_layer(arguments, code, pointer):
    errors, _ = refusal(arguments)
    assert [(e.code, e.pointer) for e in errors] == [(code, pointer)]
    assert errors[0].layer == "schema"


def test_big_numbers_a_double_holds_still_pass():
    host, call = invoice({**ARGS, "amount": 10 ** 300})
    assert host.check(call).legal == 1


def pattern_contract(pattern, field="v"):
    return Contract("p", "p", {"type": "object", "properties": {field: {"type": "string", "pattern": pattern}}})


def passes(pattern, value):
    verdict = tk.check(tk.request("p", {"v": value}, "c1"), pattern_contract(pattern))
    return verdict.legal == 1


def test_patterns_have_their_ecma_262_meaning():
    assert passes(r"^[$]\d+$", "$12") and not passes(r"^[$]\d+$", "$12\n") and not passes(r"^[$]\d+$", "12")
    assert passes(r"^order-\d+$", "order-431") and not passes(r"^order-\d+$", "order-٣")
    assert not passes(r"^order-\d+$", "order-431\n")               # $ is the end of the text
    assert not passes(r"^\w+$", "é") and passes(r"^\p{L}+$", "é")  # \w is ASCII; \p{..} is Unicode
    assert passes("^a", "abc") and not passes("a$", "ab")           # unanchored search, as JSON Schema says
    host, call = invoice({**ARGS, "order_id": "order-٣"})
    assert [e.code for e in host.check(call).errors] == ["pattern"]


def test_pattern_properties_have_their_ecma_262_meaning():
    contract = Contract("p", "p", {"type": "object", "patternProperties": {r"^x\d$": {"type": "integer"}},
                                   "additionalProperties": False})
    assert tk.check(tk.request("p", {"x1": 1}, "c"), contract).legal == 1
    refused = tk.check(tk.request("p", {"x٣": 1}, "c"), contract)
    assert [(e.code, e.pointer) for e in refused.errors] == [("unexpected_property", "$.x٣")]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"v": {"type": "string", "pattern": "("}}},
    {"type": "object", "properties": {"v": {"type": "array", "items": {"pattern": "[a-"}}}},
    {"type": "object", "patternProperties": {"(?P<x>a)": {}}},
    {"type": "object", "properties": {"v": {"anyOf": [{"pattern": "a{2,1}"}]}}},
])
def test_a_pattern_that_cannot_compile_is_a_contract_error_at_declaration(schema):
    from toolkit.kernel import ContractError

    with pytest.raises(ContractError, match="pattern"):
        Contract("bad", "bad", schema)


def test_a_property_named_pattern_is_not_a_pattern():
    contract = Contract("p", "p", {"type": "object", "properties": {"pattern": {"type": "string"}},
                                   "examples": [{"pattern": "("}]})
    assert tk.check(tk.request("p", {"pattern": "("}, "c"), contract).legal == 1


@pytest.mark.parametrize("name", ["x" * 10_000_000, "create_invoic" + "e" * 500, b"create_invoice", None, 42,
                                  ["create_invoice"], "create\ud83dinvoice", ""])
def test_any_tool_name_gets_a_short_structured_refusal(name):
    errors, data = refusal(ARGS, name=name)
    assert [e.code for e in errors] == ["unknown_tool"]
    error = errors[0]
    assert isinstance(error.received, str) and len(error.received) <= MAX_ECHO_CHARS
    assert len(error.message) <= MAX_ECHO_CHARS + 60 and len(error.hint) <= 200
    assert len(json.dumps(data)) < 2000


def test_a_near_miss_within_the_cap_is_still_suggested():
    errors, _ = refusal(ARGS, name="create_invoce")
    assert "create_invoice" in errors[0].hint
    assert MAX_NAME_CHARS >= len("create_invoice")


@pytest.mark.parametrize("call_id", [None, "", 12, b"c1", "c" * (MAX_CALL_ID_CHARS + 1), "c\ud83d", ["c1"],
                                     "x" * 10_000_000])
def test_a_call_id_that_is_not_short_text_is_refused(call_id):
    errors, data = refusal(ARGS, call_id=call_id)
    assert [e.code for e in errors] == ["invalid_call"] and errors[0].pointer == "$.call_id"
    assert isinstance(data["call_id"], str) and len(data["call_id"]) <= MAX_CALL_ID_CHARS
    assert len(errors[0].received) <= MAX_ECHO_CHARS


@pytest.mark.parametrize("thing", [None, "create_invoice", 42, {"name": "create_invoice", "arguments": {}},
                                   b"\xff", object()])
def test_check_never_raises_on_something_that_is_not_a_call(thing):
    host, _ = invoice(ARGS)
    verdict = host.check(thing)
    assert verdict.legal == 0 and [e.code for e in verdict.errors] == ["not_a_call"]
    assert tk.check(thing, CREATE_INVOICE).legal == 0
    result = host.execute(thing)
    assert result.reason == "not_a_call" and json.dumps(result.to_dict(), allow_nan=False)


def test_a_hostile_call_id_attribute_on_a_non_call_is_not_echoed_whole():
    class Fake:
        call_id = "x" * 1_000_000
    host, _ = invoice(ARGS)
    assert len(host.execute(Fake()).call_id) <= MAX_CALL_ID_CHARS


def test_errors_per_call_are_capped_and_the_rest_counted():
    errors, data = refusal({**ARGS, **{f"extra_{i}": i for i in range(500)}})
    assert len(errors) == MAX_ERRORS_PER_CALL
    assert errors[-1].code == "schema_violation" and "485 more" in errors[-1].message


def test_received_is_never_echoed_beyond_the_cap():
    errors, _ = refusal({**ARGS, "order_id": "x" * 200_000})
    assert errors[0].code == "pattern" and len(errors[0].received) <= MAX_ECHO_CHARS
    big = Contract("e", "e", {"type": "object", "properties": {"v": {"enum": ["a"]}}})
    error = tk.check(tk.request("e", {"v": ["y" * 1000] * 50}, "c"), big).errors[0]
    assert len(json.dumps(error.to_dict())) < 1000


def test_a_round_with_a_shared_call_id_runs_neither_call():
    ran = []
    host = tk.Host.of([tk.Tool(plain_contract(), lambda a, w: ran.append(1) or "sent")])
    results = host.run_round([tk.ToolCall("partner", {"q": "a"}, "c1"), tk.ToolCall("partner", {"q": "b"}, "c1"),
                              tk.ToolCall("partner", {"q": "c"}, None), tk.ToolCall("partner", {"q": "d"}, "c2")])
    assert [r.status for r in results] == [tk.Status.REJECTED] * 3 + [tk.Status.SUCCEEDED]
    assert [r.reason for r in results[:3]] == ["duplicate_call_id", "duplicate_call_id", "invalid_call"]
    assert ran == [1] and [a.result.reason for a in host.log[:3]] == ["duplicate_call_id"] * 2 + ["invalid_call"]


def test_a_record_of_a_hostile_call_stays_small():
    record = open_record(tk.ToolCall("x" * 1_000_000, {"q": 10 ** 5000}, "c" * 1_000_000), "agent")
    assert len(record.tool) <= MAX_ECHO_CHARS and len(record.call_id) <= MAX_CALL_ID_CHARS
    assert len(record.summary) <= 120
    assert open_record(tk.ToolCall("read_file", {"path": "a"}, "call_1"), "agent").call_id == "call_1"


def test_a_tool_message_with_a_lone_surrogate_can_still_be_stored():
    def tool(arguments, world):
        raise ToolFailure(tk.Status.FAILED, "bad", "partner sent \ud83d back",
                          error=tk.ToolError("bad", "$", "half \udc00 a pair", received="\ud800"))

    result = tk.Host.of([tk.Tool(plain_contract(), tool)]).execute(tk.request("partner", {"q": "x"}, "c1"))
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")
    assert "\ufffd" in result.errors[0].message
