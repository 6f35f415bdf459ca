"""The retry controller: the chapter's step rule, its worked numbers, and the host's refusals."""
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolkit as tk
from toolkit._json import carried_key
from toolkit.kernel import (Action, Jitter, RetryPolicy, RetryController, RetryState, retry_verdict,
                            step)
from course.worlds.waits import plan, walk
from toolkit.effects import run_with_retries
from course.worlds import CREATE_INVOICE
from toolkit.kernel import READ_FILE_SCHEMA
from toolkit.kernel import Contract, Retry
from toolkit.kernel import FailureClass, Status, ToolFailure, ToolResult

SEED_POLICY = RetryPolicy(d0=1, beta=2, n_max=4)
KEY = "invoice:order-431:v1"
ARGS = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": KEY}
READ = Contract("read_file", "Read a file.", READ_FILE_SCHEMA, retry=Retry.SAFE)
SEND = Contract("send_message", "Send a message.", {"type": "object"}, retry=Retry.UNSAFE)


# ------------------------------------------------------------------ the chapter's numbers
def test_worked_example_from_n2_d2():
    decisions = walk(SEED_POLICY, RetryState(2, 2))
    assert [(d.state.n, d.state.d) for d in decisions if d.retry] == [(3, 4), (4, 8)]
    assert decisions[-1].action is Action.ESCALATE          # the following failure escalates
    assert len(decisions) == 3


def test_delays_from_d0_are_1_2_4_8():
    assert plan(SEED_POLICY) == [1, 2, 4, 8]


def test_step_at_ceiling_escalates_and_never_invents_a_fifth_retry():
    at_ceiling = RetryState(4, 16)
    decision = step(at_ceiling, SEED_POLICY)
    assert decision.action is Action.ESCALATE and not decision.retry
    assert decision.state == at_ceiling and decision.wait == 0
    assert len(plan(SEED_POLICY)) == SEED_POLICY.n_max


def test_step_is_pure():
    state = RetryState(1, 2)
    first, second = step(state, SEED_POLICY), step(state, SEED_POLICY)
    assert first == second and state == RetryState(1, 2)


@pytest.mark.parametrize("bad", [dict(beta=1.0), dict(beta=0.5), dict(d0=0), dict(n_max=-1), dict(d0=2, d_max=1)])
def test_policy_rejects_constants_that_do_not_back_off(bad):
    with pytest.raises(ValueError):
        RetryPolicy(**bad)


@settings(max_examples=200, deadline=None)
@given(d0=st.floats(0.01, 10), beta=st.floats(1.01, 4), n_max=st.integers(0, 12),
       cap=st.one_of(st.none(), st.floats(10, 1000)))
def test_plan_follows_the_closed_form(d0, beta, n_max, cap):
    policy = RetryPolicy(d0=d0, beta=beta, n_max=n_max, d_max=cap)
    delays = plan(policy)
    assert len(delays) == n_max
    expected = [d0 * beta ** k if cap is None else min(cap, d0 * beta ** k) for k in range(n_max)]
    assert all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) for a, b in zip(delays, expected))
    assert all(a <= b + 1e-9 for a, b in zip(delays, delays[1:]))
    assert all(d.state.n <= n_max for d in walk(policy))


def test_cap_holds_every_delay():
    assert plan(RetryPolicy(d0=1, beta=2, n_max=6, d_max=5)) == [1, 2, 4, 5, 5, 5]


# ------------------------------------------------------------------ jitter
@pytest.mark.parametrize("jitter", list(Jitter))
def test_jitter_is_seeded_and_deterministic(jitter):
    policy = RetryPolicy(d0=1, beta=2, n_max=8, d_max=30, jitter=jitter)
    assert plan(policy, seed=3) == plan(policy, seed=3)
    if jitter is not Jitter.NONE:
        assert plan(policy, seed=3) != plan(policy, seed=4)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_jitter_stays_inside_its_envelope(seed):
    base = RetryPolicy(d0=1, beta=2, n_max=8, d_max=30)
    envelope = plan(base)
    full = plan(RetryPolicy(d0=1, beta=2, n_max=8, d_max=30, jitter=Jitter.FULL), seed=seed)
    equal = plan(RetryPolicy(d0=1, beta=2, n_max=8, d_max=30, jitter=Jitter.EQUAL), seed=seed)
    assert all(0 <= w <= d for w, d in zip(full, envelope))
    assert all(d / 2 <= w <= d for w, d in zip(equal, envelope))
    previous = 1.0
    for w in plan(RetryPolicy(d0=1, beta=2, n_max=8, d_max=30, jitter=Jitter.DECORRELATED), seed=seed):
        assert 1.0 <= w <= min(30, 3 * previous) + 1e-9
        previous = w


def test_jitter_without_a_generator_is_refused():
    with pytest.raises(ValueError, match="seeded"):
        step(RetryState(0, 1), RetryPolicy(jitter=Jitter.FULL), rng=None)


def test_full_jitter_spreads_a_thundering_herd():
    """Ten clients failing together: without jitter they all retry at the same instant."""
    policy = RetryPolicy(d0=1, beta=2, n_max=1, jitter=Jitter.FULL)
    rng = random.Random(0)
    together = {step(RetryState(0, 1), RetryPolicy(d0=1, beta=2, n_max=1)).wait for _ in range(10)}
    spread = {round(step(RetryState(0, 1), policy, rng).wait, 6) for _ in range(10)}
    assert together == {1} and len(spread) == 10


# ------------------------------------------------------------------ what may be retried at all
def failed(status, klass=None, reason="x", call_id="c1"):
    return ToolResult(call_id, status, failure_class=klass, reason=reason)


def invoice_call(key=KEY, call_id="c1"):
    return tk.request("create_invoice", {**ARGS, "idempotency_key": key} if key else
                      {k: v for k, v in ARGS.items() if k != "idempotency_key"}, call_id=call_id)


@pytest.mark.parametrize("result", [
    failed(Status.REJECTED, FailureClass.SCHEMA),
    failed(Status.REJECTED, FailureClass.AUTHORIZATION),
    failed(Status.REJECTED, FailureClass.PRECONDITION),
    failed(Status.FAILED, FailureClass.POSTCONDITION),
    failed(Status.CANCELLED),
    failed(Status.SUCCEEDED),
])
def test_failures_a_retry_cannot_fix_are_refused(result):
    action, why = retry_verdict(READ, result, tk.request("read_file", {"path": "a.txt"}))
    assert action is Action.REFUSE and why


def test_recoverable_failure_of_a_safe_read_is_retried():
    action, _ = retry_verdict(READ, failed(Status.RECOVERABLE_FAILURE), tk.request("read_file", {"path": "a"}))
    assert action is Action.RETRY


def test_unsafe_effect_is_never_retried_automatically():
    action, why = retry_verdict(SEND, failed(Status.RECOVERABLE_FAILURE), tk.request("send_message", {}))
    assert action is Action.ESCALATE and "unsafe" in why


def test_keyed_effect_without_its_key_escalates():
    call = tk.request("create_invoice", {"order_id": "order-431"}, call_id="c1")
    action, why = retry_verdict(CREATE_INVOICE, failed(Status.RECOVERABLE_FAILURE), call)
    assert action is Action.ESCALATE and "idempotency key" in why


def test_timeout_retries_only_under_the_original_key():
    timeout = failed(Status.TIMEOUT, FailureClass.TIMEOUT)
    original = invoice_call()
    assert retry_verdict(CREATE_INVOICE, timeout, original)[0] is Action.RETRY
    action, why = retry_verdict(CREATE_INVOICE, timeout, original, retry=invoice_call("invoice:order-431:v2"))
    assert action is Action.REFUSE and "original key" in why
    # a key given on the call itself counts as well as one inside the arguments
    assert carried_key(tk.request("x", {}, call_id="c", idempotency_key="k-1")) == "k-1"
    # arguments that arrive as JSON text carry their key too
    assert carried_key(tk.request("create_invoice", json.dumps(ARGS), call_id="c"), CREATE_INVOICE) == KEY
    assert carried_key(tk.request("x", {"idempotency_key": KEY}, call_id="c")) is None   # no field named: no key
    clash = carried_key(tk.request("create_invoice", ARGS, call_id="c", idempotency_key="other"), CREATE_INVOICE)
    assert isinstance(clash, tk.ToolError) and clash.code == "idempotency_conflict"


def test_timeout_of_a_safe_read_may_be_retried():
    result = failed(Status.TIMEOUT, FailureClass.TIMEOUT)
    assert retry_verdict(READ, result, tk.request("read_file", {"path": "a"}))[0] is Action.RETRY


def test_changed_arguments_are_not_a_retry():
    original = tk.request("read_file", {"path": "a.txt"}, call_id="c1")
    action, why = retry_verdict(READ, failed(Status.RECOVERABLE_FAILURE), original,
                                retry=tk.request("read_file", {"path": "b.txt"}, call_id="c1"))
    assert action is Action.REFUSE and "new proposal" in why
    changed_amount = tk.request("create_invoice", {**ARGS, "amount": 90}, call_id="c1")
    assert retry_verdict(CREATE_INVOICE, failed(Status.TIMEOUT, FailureClass.TIMEOUT), invoice_call(),
                         retry=changed_amount)[0] is Action.REFUSE


def test_a_different_tool_is_not_a_retry():
    action, _ = retry_verdict(READ, failed(Status.RECOVERABLE_FAILURE), tk.request("read_file", {"path": "a"}),
                              retry=tk.request("write_file", {"path": "a"}))
    assert action is Action.REFUSE


# ------------------------------------------------------------------ the host's controller
def test_controller_keeps_n_max_per_call():
    controller = RetryController(SEED_POLICY)
    call, result = invoice_call(), failed(Status.RECOVERABLE_FAILURE)
    decisions = [controller.decide(CREATE_INVOICE, call, result) for _ in range(6)]
    assert [d.wait for d in decisions if d.retry] == [1, 2, 4, 8]
    assert [d.action for d in decisions[4:]] == [Action.ESCALATE, Action.ESCALATE]
    assert controller.retries_used == 4


def test_controller_budget_is_shared_across_calls():
    controller = RetryController(SEED_POLICY, budget=3)
    result = failed(Status.RECOVERABLE_FAILURE)
    actions = [controller.decide(CREATE_INVOICE, invoice_call(call_id=f"c{i}"), result).action for i in range(5)]
    assert actions == [Action.RETRY] * 3 + [Action.ESCALATE] * 2


def test_controller_deadline_counts_waits_and_running_time():
    controller = RetryController(SEED_POLICY, deadline=5)
    call, result = invoice_call(), failed(Status.RECOVERABLE_FAILURE)
    first = controller.decide(CREATE_INVOICE, call, result, took=0.5)      # 0.5 + 1 = 1.5
    second = controller.decide(CREATE_INVOICE, call, result, took=0.5)     # 2 + 2 = 4
    third = controller.decide(CREATE_INVOICE, call, result, took=0.5)      # 4.5 + 4 > 5
    assert (first.action, second.action, third.action) == (Action.RETRY, Action.RETRY, Action.ESCALATE)
    assert "deadline" in third.reason and controller.elapsed == pytest.approx(4.5)


# ------------------------------------------------------------------ the model asks, the host decides
class Flaky:
    """An invoice service that fails transiently ``failures`` times, honouring keys."""

    def __init__(self, failures, status=Status.RECOVERABLE_FAILURE):
        self.failures, self.status, self.invoices = failures, status, {}

    def run(self, args, world):
        if self.failures:
            self.failures -= 1
            if self.status is Status.TIMEOUT:            # the effect happens, the answer is lost
                self.invoices.setdefault(args["idempotency_key"], f"INV-{len(self.invoices) + 9}")
            raise ToolFailure(self.status, "rate_limited" if self.status is Status.RECOVERABLE_FAILURE
                              else "no_answer", failure_class=FailureClass.EXECUTION
                              if self.status is Status.RECOVERABLE_FAILURE else FailureClass.TIMEOUT)
        invoice = self.invoices.setdefault(args["idempotency_key"], f"INV-{len(self.invoices) + 9}")
        return {"invoice_id": invoice}


class World:
    def __init__(self, service):
        self.service = service

    def order(self, order_id):
        return {"approved": True}

    def invoices_with_key(self, key):
        return [1] if key in self.service.invoices else []


def invoice_host(service):
    caller = tk.Caller("agent-427", frozenset({"billing.write"}))
    return tk.Host.of([tk.Tool(CREATE_INVOICE, service.run)], caller, World(service))


def test_run_with_retries_backs_off_then_succeeds():
    service, slept = Flaky(failures=2), []
    tries = run_with_retries(invoice_host(service), invoice_call(), RetryController(SEED_POLICY),
                             sleep=slept.append)
    assert [t.result.status for t in tries] == [Status.RECOVERABLE_FAILURE] * 2 + [Status.SUCCEEDED]
    assert slept == [1, 2] and {t.result.call_id for t in tries} == {"c1"}


def test_a_model_that_asks_forever_is_stopped_at_n_max():
    tries = run_with_retries(invoice_host(Flaky(failures=99)), invoice_call(), RetryController(SEED_POLICY))
    assert len(tries) == SEED_POLICY.n_max + 1
    assert tries[-1].decision.action is Action.ESCALATE


def test_timeout_retry_with_a_new_key_is_refused_and_never_runs():
    service = Flaky(failures=1, status=Status.TIMEOUT)
    host = invoice_host(service)
    new_key = lambda call, result: invoice_call("invoice:order-431:v2")   # "it did not answer: send again"
    tries = run_with_retries(host, invoice_call(), RetryController(SEED_POLICY), ask=new_key)
    assert len(tries) == 1 and tries[0].decision.action is Action.REFUSE
    assert len(host.log) == 1 and list(service.invoices) == [KEY]        # one effect, no second invoice


def test_timeout_retry_under_the_same_key_is_an_inquiry():
    service = Flaky(failures=1, status=Status.TIMEOUT)
    tries = run_with_retries(invoice_host(service), invoice_call(), RetryController(SEED_POLICY))
    assert [t.result.status for t in tries] == [Status.TIMEOUT, Status.SUCCEEDED]
    assert service.invoices == {KEY: "INV-9"}                              # the retry found INV-9


# ------------------------------------------------------------------ formulas agree with the controller
def test_sympy_formulas_agree_with_the_controller():
    from course.present import formulas

    assert formulas.delays(1, 2, 4) == plan(SEED_POLICY) == [1, 2, 4, 8]
    assert formulas.total_wait(1, 2, 4) == sum(plan(SEED_POLICY)) == 15
    capped = RetryPolicy(d0=1, beta=2, n_max=6, d_max=5)
    assert formulas.delays(1, 2, 6, d_max=5) == plan(capped)
    assert formulas.closed_form_holds()
    for beta in (1.5, 2, 3):
        assert float(formulas.total_wait(1, beta, 5)) == pytest.approx(sum(plan(RetryPolicy(1, beta, 5))))


def test_sympy_worked_numbers_agree_with_the_toolkit():
    from course.present import formulas

    numbers = formulas.worked_numbers()
    assert numbers["score 0.9*10-2-1"] == round(tk.governed_score(tk.expected_value(0.9, 10), 2, 1), 9) == 6
    assert numbers["legal 1*1*1"] == tk.legal(1, 1, 1) == 1
    assert numbers["legal 0*1*1"] == tk.legal(0, 1, 1) == 0
    assert numbers["score read 8-1-1"] == tk.governed_score(8, 1, 1) == 6
    assert numbers["score edit 11-2-6"] == tk.governed_score(11, 2, 6) == 3
    assert numbers["score 10-2-1"] == tk.governed_score(10, 2, 1) == 7
    assert formulas.legal_product_text(0, 1, 1) == "0×1×1 = 0"


def test_formulas_render_latex():
    from course.present import formulas

    assert formulas.latex(formulas.delay_expr()) == r"d_{0} \beta^{n}"
    assert formulas.latex(formulas.total_wait_expr()) == r"\frac{d_{0} \left(\beta^{n} - 1\right)}{\beta - 1}"
    assert formulas.latex(formulas.score_expr()) == r"\mathbb{E}[Q] - \lambda_{c} C - \lambda_{r} R"
    assert formulas.indicator_latex().startswith(r"\mathbf{1}\{\texttt{schema\_ok} \land")


def test_a_retry_of_json_text_arguments_is_judged_on_the_parsed_value():
    """The model may send the retry as text and the original as a dict (or the reverse): the same call."""
    timeout = failed(Status.TIMEOUT, FailureClass.TIMEOUT)
    as_text = tk.request("create_invoice", json.dumps(ARGS), call_id="c1")
    respaced = tk.request("create_invoice", json.dumps({**ARGS, "amount": 100.0}, indent=2), call_id="c1")
    assert retry_verdict(CREATE_INVOICE, timeout, invoice_call(), retry=as_text)[0] is Action.RETRY
    assert retry_verdict(CREATE_INVOICE, timeout, as_text, retry=respaced)[0] is Action.RETRY
    changed = tk.request("create_invoice", json.dumps({**ARGS, "amount": 90}), call_id="c1")
    action, why = retry_verdict(CREATE_INVOICE, timeout, as_text, retry=changed)
    assert action is Action.REFUSE and "new proposal" in why
    other_key = tk.request("create_invoice", json.dumps({**ARGS, "idempotency_key": "v2"}), call_id="c1")
    assert retry_verdict(CREATE_INVOICE, timeout, as_text, retry=other_key)[0] is Action.REFUSE
