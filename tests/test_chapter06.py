"""Chapter 6, backing off: the worked numbers, the slider panel driven from Python, the herd drawing and its data,
the failure table, and the host's final word on retries."""
import re
from pathlib import Path

import nbformat
import pytest

import toolkit as tk
from toolkit.kernel import (Action, Jitter, RetryPolicy, RetryController, RetryState, retry_verdict,
                            step)
from course.worlds.waits import plan, walk
from toolkit.effects import run_with_retries
from course.worlds import arrival_times, jitter_waits, peak_load, plan_rows
from course.worlds import CREATE_INVOICE
from toolkit.kernel import NEXT_STEP
from course.worlds import MEANING, POINTS_AT
from course.present import formulas
from course.present.backoff_panel import BackoffPanel, plan_text
from course.present.retry_plots import herd_svg

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "06_backoff_and_retries.ipynb"
POLICY = RetryPolicy(d0=1, beta=2, n_max=4)
KEY = "invoice:order-431:v1"
ARGS = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", "idempotency_key": KEY}


# ------------------------------------------------------------------ the worked numbers
def test_controller_from_2_2_goes_3_4_then_4_8_then_escalates():
    decisions = walk(POLICY, RetryState(2, 2))
    assert [(d.state.n, d.state.d) for d in decisions if d.retry] == [(3, 4), (4, 8)]
    assert decisions[-1].action is Action.ESCALATE and len(decisions) == 3
    assert all(step(RetryState(4, 8), POLICY).action is Action.ESCALATE for _ in range(3))   # no fifth retry


def test_delays_from_d0_1_are_1_2_4_8_and_wait_15():
    assert plan(POLICY) == formulas.delays(1, 2, 4) == [1, 2, 4, 8]
    assert sum(plan(POLICY)) == formulas.total_wait(1, 2, 4) == 15
    assert formulas.closed_form_holds()


# ------------------------------------------------------------------ the panel
def shown_waits(text: str) -> list[float]:
    """The wait column of the panel's table, as numbers."""
    rows = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    return [float(r[2].rstrip("s")) for r in rows]


def test_panel_starts_at_the_chapter_numbers():
    panel = BackoffPanel()
    text = panel.text()
    assert text.splitlines()[0] == "policy: d0=1s, beta=2, n_max=4, jitter=none"
    assert text.splitlines()[1] == (f"the first call has just failed: {POLICY.start()}; "
                                    "n counts the repeat attempts from here"), "the panel says where n starts"
    assert "(n=0, d=0.5)" in panel.set(d0=0.5).splitlines()[1]
    panel.set(d0=1)
    assert shown_waits(text) == plan(POLICY)
    assert "(n=4, d=16)" in text and "the failure after retry 4 escalates: all n_max=4 retries used" in text
    assert "total wait before escalating: 15s" in text and "at n = 4 gives 15s" in text


def test_panel_follows_each_slider():
    panel = BackoffPanel()
    shown = panel.set(beta=3, n_max=3)
    assert shown_waits(shown) == plan(RetryPolicy(d0=1, beta=3, n_max=3)) == [1, 3, 9]
    assert "the failure after retry 3 escalates" in shown and "total wait before escalating: 13s" in shown
    shown = panel.set(d0=0.5)
    assert shown_waits(shown) == [0.5, 1.5, 4.5]
    panel.n_max.value = 0                      # a drag on the slider itself, not through .set
    assert "no retry is allowed: the first failure escalates" in panel.text()
    assert "no retry is allowed" in panel.view.value    # the HTML the browser renders says the same
    panel.set(beta=2, n_max=4, d0=1)
    assert panel.text() == BackoffPanel().text()


@pytest.mark.parametrize("jitter", [j.value for j in Jitter if j is not Jitter.NONE])
def test_panel_jitter_dropdown_draws_seeded_waits(jitter):
    panel = BackoffPanel()
    shown = panel.set(jitter=jitter)
    drawn = plan(RetryPolicy(d0=1, beta=2, n_max=4, jitter=Jitter(jitter)), seed=0)
    assert shown_waits(shown) == [round(w, 2) for w in drawn]
    assert f"jitter={jitter}, seed 0" in shown and f"drawn by {jitter} jitter" in shown
    assert "the plan d without jitter sums to 15s" in shown and "the failure after retry 4 escalates" in shown
    assert BackoffPanel(jitter=jitter).text() == shown                 # the same on every run
    if jitter != "decorrelated":
        assert all(w <= d for w, d in zip(drawn, plan(POLICY)))          # inside the planned delay
    else:
        assert "does not follow d" in shown


def test_plan_rows_match_the_controller_with_a_cap():
    capped = RetryPolicy(d0=1, beta=2, n_max=6, d_max=5)
    rows = plan_rows(capped)
    assert [r["wait"] for r in rows] == plan(capped) == [1, 2, 4, 5, 5, 5]
    assert "d_max=5s" in plan_text(capped) and "closed form" not in plan_text(capped)


# ------------------------------------------------------------------ jitter data behind the plot
HERD = RetryPolicy(d0=1, beta=2, n_max=6, d_max=32)


def test_without_jitter_the_whole_herd_arrives_together():
    waits = jitter_waits(HERD, clients=20, seed=0)
    assert list(waits) == [j.value for j in Jitter]
    assert all(client == plan(HERD) for client in waits["none"])
    assert peak_load(waits["none"], 0.1) == 20
    for name in ("full", "decorrelated"):
        assert peak_load(waits[name], 0.1) <= 20 // 4, f"{name} jitter should spread the herd"
    assert jitter_waits(HERD, clients=20, seed=0) == waits            # seeded


def test_peak_load_and_arrivals_by_hand():
    assert arrival_times([1, 2, 4]) == [1, 3, 7]
    assert peak_load([[1, 2], [1.05, 2], [5]], window=0.1) == 2        # t=1 and 1.05; t=3 and 3.05
    assert peak_load([[1], [1], [1]], window=0.0) == 3
    assert peak_load([], window=1.0) == 0


def test_herd_drawing_has_one_strip_per_variant_and_its_worst_crowd():
    svg = herd_svg(HERD, clients=5, seed=0)
    assert re.findall(r"data-strip='(\w+)'", svg) == [j.value for j in Jitter]
    peaks = dict(re.findall(r"data-jitter='(\w+)' data-peak='(\d+)'", svg))
    assert peaks == {name: str(peak_load(w, 0.1)) for name, w in jitter_waits(HERD, 5, 0).items()}
    assert peaks["none"] == "5"                                         # the whole herd in one instant
    assert svg.count("<circle") == 5 * len(Jitter) * HERD.n_max        # one dot per client per retry
    assert herd_svg(HERD, clients=5, seed=0) == svg                     # seeded: the same drawing every run


# ------------------------------------------------------------------ failures read through the contract
def test_failure_table_rows_and_the_hosts_verdicts():
    call = tk.request("create_invoice", ARGS, call_id="c1")
    rows = {
        tk.Status.RECOVERABLE_FAILURE: (tk.FailureClass.EXECUTION, Action.RETRY, "wait, then retry"),
        tk.Status.REJECTED: (tk.FailureClass.PRECONDITION, Action.REFUSE, "change the arguments"),
        tk.Status.TIMEOUT: (tk.FailureClass.TIMEOUT, Action.RETRY, "check the execution record"),
        tk.Status.CANCELLED: (tk.FailureClass.EXECUTION, Action.REFUSE, "stop the current round"),
    }
    for status, (klass, action, next_step) in rows.items():
        verdict, why = retry_verdict(CREATE_INVOICE, tk.ToolResult("c1", status, failure_class=klass), call)
        assert verdict is action, f"{status.value}: {why}"
        assert next_step in NEXT_STEP[status]


class Service:
    """Honours idempotency keys; plays a script of faults first."""

    def __init__(self, faults):
        self.faults, self.invoices = list(faults), {}

    def order(self, order_id):
        return {"approved": True}

    def invoices_with_key(self, key):
        return [self.invoices[key]] if key in self.invoices else []

    def create(self, args, world=None):
        fault = self.faults.pop(0) if self.faults else "ok"
        if fault == "rate_limited":
            raise tk.ToolFailure(tk.Status.RECOVERABLE_FAILURE, "rate_limited")
        invoice = self.invoices.setdefault(args["idempotency_key"], f"INV-{len(self.invoices) + 9}")
        if fault == "no_answer":
            raise tk.ToolFailure(tk.Status.TIMEOUT, "no_answer", failure_class=tk.FailureClass.TIMEOUT)
        return {"invoice_id": invoice}


def host_for(service):
    return tk.Host.of([tk.Tool(CREATE_INVOICE, service.create)],
                      tk.Caller("agent-427", frozenset({"billing.write"})), service)


def test_the_model_asks_the_host_decides():
    slept, asked = [], []

    def always_asks(call, result):
        asked.append(result.status)
        return call

    tries = run_with_retries(host_for(Service(["rate_limited"] * 99)), tk.request("create_invoice", ARGS,
                                                                                  call_id="c1"),
                             RetryController(POLICY), ask=always_asks, sleep=slept.append)
    assert len(asked) == 5 and len(tries) == 1 + POLICY.n_max
    assert slept == [1, 2, 4, 8] and tries[-1].decision.action is Action.ESCALATE


def test_shared_budget_and_deadline_belong_to_the_host():
    busy = tk.ToolResult("x", tk.Status.RECOVERABLE_FAILURE, failure_class=tk.FailureClass.EXECUTION)
    shared = RetryController(POLICY, budget=3)
    actions = [shared.decide(CREATE_INVOICE, tk.request("create_invoice", ARGS, call_id=c), busy).action
               for c in ("a", "b", "a", "c", "b")]
    assert actions == [Action.RETRY] * 3 + [Action.ESCALATE] * 2
    timed = RetryController(POLICY, deadline=5)
    call = tk.request("create_invoice", ARGS, call_id="c1")
    assert [timed.decide(CREATE_INVOICE, call, busy, took=0.5).action for _ in range(3)] == [
        Action.RETRY, Action.RETRY, Action.ESCALATE]


def test_an_unsafe_effect_is_not_repeated_without_its_key():
    busy = tk.ToolResult("c1", tk.Status.RECOVERABLE_FAILURE, failure_class=tk.FailureClass.EXECUTION)
    send = tk.Contract("send_message", "Send.", {"type": "object"}, retry=tk.Retry.UNSAFE)
    charge = tk.Contract("charge_card", "Charge.", {"type": "object"}, retry=tk.Retry.SAFE_WITH_KEY)
    assert retry_verdict(send, busy, tk.request("send_message", {}, call_id="c1"))[0] is Action.ESCALATE
    assert retry_verdict(charge, busy, tk.request("charge_card", {}, call_id="c1"))[0] is Action.ESCALATE
    keyed = tk.request("charge_card", {}, call_id="c1", idempotency_key="charge:1")
    assert retry_verdict(charge, busy, keyed)[0] is Action.RETRY

    service = Service(["no_answer"])
    host = host_for(service)
    new_key = lambda call, result: tk.request("create_invoice", {**ARGS, "idempotency_key": "v2"}, call_id="c1")
    tries = run_with_retries(host, tk.request("create_invoice", ARGS, call_id="c1"), RetryController(POLICY),
                             ask=new_key)
    assert tries[-1].decision.action is Action.REFUSE and len(host.log) == 1 and len(service.invoices) == 1
    service = Service(["no_answer"])
    tries = run_with_retries(host_for(service), tk.request("create_invoice", ARGS, call_id="c1"),
                             RetryController(POLICY))
    assert tries[-1].result.output["invoice_id"] == "INV-9" and service.invoices == {KEY: "INV-9"}


# ------------------------------------------------------------------ the stored notebook shows the toolkit's numbers
def stored_text() -> str:
    """Every stream and every Markdown display the committed notebook stores."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    return "".join(o.get("text", "") + o.get("data", {}).get("text/markdown", "")
                   for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def displayed_panel() -> str:
    """The plain text of the one cell that displays the panel (``panel`` as its last line)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    [cell] = [c for c in nb.cells if c.cell_type == "code"
              and c.source.strip().splitlines()[-1].split("#")[0].strip() == "panel"]
    [output] = cell.outputs
    return output.data["text/plain"]


def states_line(policy: RetryPolicy) -> str:
    states = [policy.start()] + [d.state for d in walk(policy) if d.retry]
    return " -> ".join(str(s) for s in states)


@pytest.mark.skipif(not NOTEBOOK.exists(), reason="chapter 6 notebook not written yet")
def test_notebook_prints_what_the_toolkit_computes():
    text = stored_text()
    for decision in walk(POLICY, RetryState(2, 2)):
        assert decision.line() in text
    assert f"waits: {plan(POLICY)} seconds, then escalate" in text
    assert f"W_4 = {formulas.total_wait(1, 2, 4)} seconds" in text
    assert BackoffPanel().text() == displayed_panel()        # the panel's own text, under its axis
    assert BackoffPanel(beta=3, n_max=3).text() in text
    assert BackoffPanel(beta=3, n_max=3, jitter="full").text() in text
    assert f"5 attempts = 1 + n_max; waits {plan(POLICY)}; total {sum(plan(POLICY))} s" in text


def test_notebook_is_honest_about_the_two_examples():
    """From d0 = 1 the run passes (2, 4), not the worked example's (2, 2); both escalate after n_max retries."""
    text = stored_text()
    half = RetryPolicy(d0=0.5, beta=2, n_max=4)
    assert f"states: {states_line(POLICY)}" in text and "(n=2, d=4)" in states_line(POLICY)
    assert f"from d0 = 0.5 s: {states_line(half)}" in text and "(n=2, d=2) -> (n=3, d=4) -> (n=4, d=8)" in text
    assert len(plan(POLICY)) == len(plan(half)) == POLICY.n_max
    assert f"from d0 = 1 s {POLICY.n_max} | from d0 = 0.5 s {half.n_max}" in text
    markdown = "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "markdown")
    assert "attempts made so far" in markdown, "n keeps the book's reading"
    for phrase in ("Counted this way", "agree with each other", "reentrant", "chapter's", "t = 3, then"):
        assert phrase not in markdown, phrase


def test_notebook_computes_arrivals_and_shows_the_failure_table_from_the_toolkit():
    text = stored_text()
    assert f"every client retries at t = {arrival_times(plan(POLICY))} seconds" in text
    assert "| failure type | what it means | next step for the model |" in text
    for status, meaning in MEANING.items():
        assert f"| `{status.value}` | {meaning} | {NEXT_STEP[status]} |" in text, f"table row {status.value}"
    for klass, meaning in POINTS_AT.items():
        assert f"{klass.value:<14} {meaning:<52}" in text, f"what {klass.value} points at"
    sources = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    for name in ("MEANING", "POINTS_AT"):
        assert not any(re.search(rf"^{name}\s*=\s*\{{", src, re.MULTILINE) for src in sources), \
            f"{name} comes from course.worlds, not a dict typed in the notebook"
