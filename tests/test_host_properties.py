"""Property: whatever a model sends, ``Host.check`` and ``Host.execute`` answer with a small, structured result.

Model-shaped input, generated: any JSON value or JSON text as arguments (NaN, infinities, numbers no double
holds, lone surrogates, deep nesting, documents near and over the size cap), any name (declared, near, empty,
huge, bytes, a number, None), any call id (valid, empty, huge, a number, bytes, with a surrogate), and things
that are not calls at all. For every example:

* nothing raises;
* every result passes ``json.dumps(..., allow_nan=False)`` and encodes as UTF-8;
* the caps hold, measured by size: at most ``MAX_ERRORS_PER_CALL`` errors, an echoed name or value of at most
  ``MAX_ECHO_CHARS``, a result id of at most ``MAX_CALL_ID_CHARS``, a refusal of bounded size whatever the
  input's size;
* a canary sent in a secret-named field never appears in the result or in the host's log;
* only a legal call reaches a tool, and a valid call id comes back unchanged.
"""
from __future__ import annotations

import json

from hypothesis import HealthCheck, event, given, settings, strategies as st

import toolkit as tk
from toolkit.kernel import Condition, Contract, ToolFailure
from toolkit._codes import CODES
from toolkit._caps import MAX_CALL_ID_CHARS, MAX_DEPTH, MAX_ECHO_CHARS, MAX_ERRORS_PER_CALL
from course.worlds import CREATE_INVOICE, Books

# ------------------------------------------------------------------ the host under test
PARTNER = Contract("call_partner", "ask the partner API",
                   {"type": "object",
                    "properties": {"q": {"type": "string", "pattern": r"^[a-z ]{1,20}$"},
                                   "token": {"type": "string"}, "pin": {"type": "string"},
                                   "api_keys": {"type": "array", "items": {"type": "string", "pattern": "^k-"}},
                                   "auth": {"type": "object", "properties": {"code": {"enum": ["a", "b"]}}},
                                   "mode": {"enum": ["fast", "slow", "fail", "crash", "echo"]}},
                    "required": ["q"], "additionalProperties": False},
                   secret_fields=("pin",),
                   preconditions=(Condition("not_blocked", "q is not 'blocked'",
                                            lambda a, w: True if a["q"] != "blocked" else tk.ToolError(
                                                "precondition_failed", "$.q", f"refused {a.get('token')}",
                                                received=a.get("token"), hint=f"token {a.get('pin')} is blocked"),
                                            field="q"),))


def partner(arguments, world):
    mode = arguments.get("mode", "fast")
    secret = f"{arguments.get('token')} {arguments.get('pin')} {json.dumps(arguments)}"
    if mode == "fail":   # a careless tool: its own error repeats every secret, in every text
        raise ToolFailure(tk.Status.REJECTED, "partner_refused", f"no: {secret}",
                          error=tk.ToolError("partner_refused", "$.token", f"no: {secret}", expected={"was": secret},
                                             received=arguments.get("token"), hint=secret))
    if mode == "crash":
        raise RuntimeError(secret)
    return {"answer": "ok", "q": arguments["q"]}


def make_host():
    books = Books(orders={"order-431": {"approved": True}})
    return tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue), tk.Tool(PARTNER, partner)],
                      caller=tk.Caller("agent", frozenset({"billing.write"})), world=books)


# ------------------------------------------------------------------ model-shaped input
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
TEXT = st.one_of(st.text(max_size=30), st.lists(st.one_of(st.text(max_size=3), SURROGATES), max_size=6).map("".join))
# huge values are built by .map, so that no strategy's repr (which hypothesis prints) holds them
NUMBERS = st.one_of(st.integers(), st.floats(), st.sampled_from([2 ** 53 + 1, float("nan"), -0.0, 1e308]),
                    st.sampled_from([308, 309, 400, 5000]).map(lambda e: -(10 ** e)),
                    st.just(1024).map(lambda e: 2 ** e))
JSON = st.recursive(st.none() | st.booleans() | NUMBERS | TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                    max_leaves=16)
CANARY = st.text("abcdefghijklmnopqrstuvwxyzäöüß0123456789", min_size=4, max_size=12).map(lambda s: f"CANARY-{s}")
DECLARED = st.fixed_dictionaries(
    {"q": st.one_of(st.sampled_from(["status", "blocked", "hello there"]), TEXT)},
    optional={"token": CANARY, "pin": CANARY, "api_keys": st.lists(st.one_of(CANARY, st.just("k-1")), max_size=3),
              "auth": st.fixed_dictionaries({"code": CANARY}), "mode": st.sampled_from(["fast", "fail", "crash"]),
              "extra": JSON})
PARTNER_CALLS = st.fixed_dictionaries(   # well-formed, so the tool's own paths (success, failure, crash) are reached
    {"q": st.sampled_from(["status", "blocked", "hello there"])},
    optional={"token": CANARY, "pin": CANARY, "mode": st.sampled_from(["fast", "fail", "crash"])})
INVOICE = st.fixed_dictionaries({"order_id": st.one_of(st.just("order-431"), st.just("order-٣"), TEXT),
                                 "amount": st.one_of(st.just(100), NUMBERS),
                                 "currency": st.sampled_from(["EUR", "YEN"]),
                                 "idempotency_key": st.one_of(st.just("inv:431:v1"), TEXT)})


def nested(depth: int) -> dict:
    value: dict = {"q": "deep"}
    for _ in range(depth):
        value = {"q": value}
    return value


BIG = {"long text": lambda: {"q": "x" * 300_000}, "long list": lambda: {"q": "status", "extra": ["k-1"] * 40_000},
       "many keys": lambda: {f"k{i}": i for i in range(20_000)}, "too deep": lambda: nested(MAX_DEPTH + 5),
       "deep": lambda: nested(MAX_DEPTH - 3),
       "many secrets": lambda: {"q": "status", "api_keys": ["CANARY-big"] * 5000},
       "long text as JSON": lambda: json.dumps({"q": "x" * 200_000}),
       "digits": lambda: '{"amount": 1' + "0" * 4000 + "}",
       "over the cap": lambda: "[" * 300_000}


def as_text(value) -> str:
    """JSON text as a vendor would send it (NaN spelled as NaN); a number json.dumps refuses is written by hand."""
    try:
        return json.dumps(value)
    except ValueError:
        return '{"q": "status", "amount": 1' + "0" * 5000 + "}"


ARGUMENTS = st.one_of(DECLARED, INVOICE, JSON, TEXT, st.sampled_from(sorted(BIG)).map(lambda k: BIG[k]()),
                      st.one_of(DECLARED, INVOICE, JSON).map(as_text),
                      st.sampled_from(['{"q": "\\ud83d"}', '{"q": "a", "q": "b"}', '{"q": 1e400}', "[1, 2]",
                                       '{"q": ', "", "\x00", '{"\\udfff": 1}', '{"q": NaN}']),
                      st.binary(max_size=20))
NAMES = st.one_of(st.sampled_from(["create_invoice", "call_partner", "create_invoic", "call-partner", ""]), TEXT,
                  st.integers(129, 3_000_000).map(lambda n: "x" * n), st.binary(max_size=10), st.none(),
                  st.integers(), st.lists(st.text(max_size=3), max_size=2))
IDS = st.one_of(st.from_regex(r"\Acall_[A-Za-z0-9_-]{1,20}\Z"), TEXT, st.just(""), st.none(), st.integers(),
                st.binary(max_size=8), st.integers(MAX_CALL_ID_CHARS + 1, 1_000_000).map(lambda n: "c" * n))
NOT_CALLS = st.one_of(JSON, st.builds(object), st.binary(max_size=8),
                      st.fixed_dictionaries({"name": NAMES, "arguments": JSON, "call_id": IDS}))


# ------------------------------------------------------------------ what must hold for every example
def spellings(secret: str) -> set[str]:
    """The ways text may spell a secret: as is, JSON-escaped (ASCII or not), as repr."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1]}


def canaries_in(arguments) -> set[str]:
    found, stack = set(), [arguments]
    if isinstance(arguments, str):
        try:
            stack = [json.loads(arguments)]
        except (ValueError, RecursionError):
            return set()
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(list(item.keys()) + list(item.values()))
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item.startswith("CANARY-"):
            found.add(item)
    return found


def assert_small_and_safe(result: tk.ToolResult, secrets: set[str], host: tk.Host) -> str:
    data = result.to_dict()
    text = json.dumps(data, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")
    assert isinstance(result.call_id, str) and 0 < len(result.call_id) <= MAX_CALL_ID_CHARS
    assert len(result.errors) <= MAX_ERRORS_PER_CALL
    for error in result.errors:
        assert error.code in CODES or error.layer == "execution"
        assert len(error.pointer) <= MAX_DEPTH * (MAX_ECHO_CHARS + 2) + 1
        if error.layer == "schema":
            shown = error.received if isinstance(error.received, str) else json.dumps(error.received,
                                                                                      ensure_ascii=False)
            assert len(shown) <= MAX_ECHO_CHARS, error
            assert len(error.message) <= 3 * MAX_ECHO_CHARS + 200, error
    if not result.ok:
        assert len(text) <= 64 * 1024      # a refusal stays small whatever the size of what was sent
    logged = " ".join([repr(host.log[-1]), host.log[-1].call.summary()]) if host.log else ""
    for secret in secrets:
        for form in spellings(secret):
            assert form not in text and form not in json.dumps(data), f"{secret!r} reached the result"
            assert form not in logged, f"{secret!r} reached the host's log"
    return text


def check_and_execute(name, arguments, call_id):
    host = make_host()
    call = tk.ToolCall(name, arguments, call_id)
    verdict = host.check(call)
    assert verdict.legal in (0, 1) and len(verdict.errors) <= MAX_ERRORS_PER_CALL
    if verdict.legal == 0:
        assert verdict.errors and all(isinstance(e, tk.ToolError) for e in verdict.errors)
    result = host.execute(call)
    secrets = canaries_in(arguments) if name == "call_partner" else set()
    assert_small_and_safe(result, secrets, host)
    if isinstance(name, str) and len(name) > MAX_ECHO_CHARS:
        assert all(len(str(e.received)) <= MAX_ECHO_CHARS for e in result.errors)
    if isinstance(call_id, str) and 0 < len(call_id) <= MAX_CALL_ID_CHARS and "\ud800" > max(call_id, default=""):
        assert result.call_id == call_id
    if not verdict.legal:                      # only a legal call reaches a tool
        assert result.status is tk.Status.REJECTED and result.errors == verdict.errors[:MAX_ERRORS_PER_CALL]
    elif result.status is tk.Status.REJECTED:  # a legal call refused by the tool itself
        assert result.reason == "partner_refused"
    assert len(host.log) == 1
    event(f"{result.status.value}: {result.reason or 'ok'}{' (canaries sent)' if secrets else ''}")


@settings(max_examples=500, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(name=NAMES, arguments=ARGUMENTS, call_id=IDS)
def test_any_call_gets_a_small_structured_answer(name, arguments, call_id):
    check_and_execute(name, arguments, call_id)


@settings(max_examples=1000, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(name=st.sampled_from(["create_invoice", "call_partner"]),
       arguments=st.one_of(ARGUMENTS, PARTNER_CALLS, PARTNER_CALLS.map(as_text)),
       call_id=st.from_regex(r"\Acall_[A-Za-z0-9_-]{1,20}\Z"))
def test_any_arguments_to_a_declared_tool_get_a_small_structured_answer(name, arguments, call_id):
    check_and_execute(name, arguments, call_id)


@settings(max_examples=200, deadline=None, database=None)
@given(thing=NOT_CALLS)
def test_anything_that_is_not_a_call_is_refused(thing):
    host = make_host()
    verdict = host.check(thing)
    assert verdict.legal == 0 and [e.code for e in verdict.errors] == ["not_a_call"]
    result = host.execute(thing)
    assert result.reason == "not_a_call"
    assert_small_and_safe(result, set(), host)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.builds(tk.ToolCall, st.sampled_from(["call_partner", "create_invoice", "nope"]),
                                st.one_of(DECLARED, INVOICE),
                                st.one_of(st.sampled_from(["c1", "c2", "c3"]), IDS)), max_size=6))
def test_a_round_answers_every_call_and_runs_each_id_once(calls):
    host = make_host()
    results = host.run_round(calls)
    assert len(results) == len(calls) and len(host.log) == len(calls)
    ran = [r.call_id for r in results if r.status is not tk.Status.REJECTED]
    assert len(ran) == len(set(ran))
    for call, result in zip(calls, results):
        assert_small_and_safe(result, canaries_in(call.arguments) if call.name == "call_partner" else set(), host)
