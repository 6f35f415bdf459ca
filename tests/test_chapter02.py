"""Chapter 2, contracts and legality: every number, table row and refusal the notebook prints is the toolkit's own.

Also the send_email exercise: its checks reject wrong answers, and say why.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

import toolkit as tk
from course.worlds import CREATE_INVOICE, Books
from toolkit._codes import CODES
from course.present import formulas
from course.worlds.demo_tree import common_errors
from toolkit._schema import parse_arguments
from course.worlds.advice import CAUSES, GENERAL, cause_of
from toolkit.kernel import LAYER_OF, PRE_QUESTIONS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "02_contracts_and_legality.ipynb"
SOLUTION = ROOT / "solutions" / "02_send_email_contract.ipynb"
GOOD = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", "idempotency_key": "invoice:order-431:v1"}
AGENT = tk.Caller("agent-427", frozenset({"billing.write"}))
needs_notebook = pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook not built yet")


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.ts").write_text("export const port = 8080;\n", encoding="utf-8")
    return tmp_path


def _cells() -> list:
    return nbformat.read(NOTEBOOK, as_version=4).cells


def _printed() -> str:
    return "\n".join(o.get("text", "") for c in _cells() if c.cell_type == "code" for o in c.outputs)


def _prose() -> str:
    return " ".join(" ".join(c.source.split()) for c in _cells() if c.cell_type == "markdown")


def _code(containing: str) -> str:
    return next(c.source for c in _cells() if c.cell_type == "code" and containing in c.source)


# ------------------------------------------------------------------ 2.1 the score comes from the contract
@needs_notebook
def test_the_score_line_is_built_from_the_contract():
    score = formulas.score_value(10, CREATE_INVOICE.cost, CREATE_INVOICE.risk, confidence=0.9)
    assert score == 6
    line = f"governed score: 0.9 x 10 - {CREATE_INVOICE.cost:g} - {CREATE_INVOICE.risk:g} = {score}"
    assert line in _printed()

    source = _code("Option.from_contract")           # run the cell again with a contract that costs 3
    out = io.StringIO()
    dearer = replace(CREATE_INVOICE, cost=3.0)
    with contextlib.redirect_stdout(out):
        exec(source, {"tk": tk, "CREATE_INVOICE": dearer, "replace": replace})
    assert "governed score: 0.9 x 10 - 3 - 1 = 5" in out.getvalue(), out.getvalue()
    assert "- 2 - 1" not in source, "the printed arithmetic must be built from the inputs, not typed"


# ------------------------------------------------------------------ 2.3 the formula and what auth_ok reads
@needs_notebook
def test_the_formula_is_shown_with_each_tests_argument():
    latex = "".join(o.get("data", {}).get("text/latex", "") for c in _cells() if c.cell_type == "code"
                    for o in c.outputs)
    for part in (r"\texttt{schema\_ok}(x_t)", r"\texttt{auth\_ok}(f_t)", r"\texttt{Pre}_{f_t}(x_t)"):
        assert part in latex, part
    prose = _prose()
    assert "depends on the tool alone" in prose and "reads the arguments too" in prose


def test_toolkit_auth_ok_reads_the_arguments_only_through_guards(workspace):
    read_file = tk.make_read_file(workspace).contract
    caller = tk.Caller("assistant")
    outcomes = [tk.check(tk.request("read_file", {"path": p}, call_id="c"), read_file, caller).auth_ok.outcome
                for p in ("src/config.ts", "/etc/passwd")]
    assert outcomes == [tk.Outcome.PASS, tk.Outcome.FAIL] and read_file.guards
    assert CREATE_INVOICE.guards == ()
    for caller, expected in ((AGENT, tk.Outcome.PASS), (tk.Caller("intern"), tk.Outcome.FAIL)):
        seen = {tk.check(tk.request("create_invoice", {**GOOD, "order_id": o}, call_id="c"), CREATE_INVOICE,
                         caller, Books()).auth_ok.outcome for o in ("order-431", "order-500")}
        assert seen == {expected}, "without guards, auth_ok depends on the caller and the tool only"


@needs_notebook
def test_auth_ok_note_is_printed_from_real_checks():
    printed = _printed()
    assert re.search(r"read_file 'src/config.ts' +-> auth_ok pass\n", printed)
    assert re.search(r"read_file '/etc/passwd' +-> auth_ok fail +\$\.path: rung 1", printed)
    assert re.search(r"create_invoice +scopes needed: billing.write +guards: none", printed)


# ------------------------------------------------------------------ 2.5 the layers
@needs_notebook
def test_checks_order_is_described_without_contradiction():
    prose = _prose()
    assert "in series" not in prose and "run three layers, in this order" not in prose
    assert "evaluates the three tests one by one, in layer order" in prose
    assert "never stops at the first failure" in prose and "lists every test that said no" in prose


def _refusal_rows(workspace: Path) -> dict[str, tuple[str, str, str, str]]:
    """The mapping table, computed here: refused call -> (test, error layer, failure class, code)."""
    read_file = tk.make_read_file(workspace)
    signed = replace(CREATE_INVOICE, needs_approval=True)
    cases = {
        "amount sent as text": (CREATE_INVOICE, AGENT, {**GOOD, "amount": "120"}),
        "caller without billing.write": (CREATE_INVOICE, tk.Caller("intern"), GOOD),
        "read_file on /etc/passwd": (read_file.contract, tk.Caller("assistant"), {"path": "/etc/passwd"}),
        "order not approved": (CREATE_INVOICE, AGENT, {**GOOD, "order_id": "order-500"}),
        "nobody approved the call": (signed, AGENT, GOOD),
    }
    rows = {}
    for label, (contract, caller, arguments) in cases.items():
        world = Books(orders={"order-431": {"approved": True}, "order-500": {"approved": False}})
        run = read_file.run if contract is read_file.contract else world.issue
        host = tk.Host.of([tk.Tool(contract, run)], caller=caller, world=world)
        result = host.execute(tk.request(contract.name, arguments, call_id="call_5"))
        assert result.status is tk.Status.REJECTED and not world.invoices
        error = result.errors[0]
        rows[label] = (host.log[-1].verdict.blocked_by[0], error.layer, result.failure_class.value, error.code)
    return rows


def test_each_test_maps_to_one_layer_and_one_failure_class(workspace):
    rows = _refusal_rows(workspace)
    by_test = {}
    for test, layer, failure_class, code in rows.values():
        by_test.setdefault(test, set()).add((layer, failure_class))
        assert CODES[code] == layer
    assert by_test == {"schema_ok": {("schema", "schema")}, "auth_ok": {("permission", "authorization")},
                       "Pre": {("business", "precondition")}}
    assert rows["nobody approved the call"][3] == "approval_required"


@needs_notebook
def test_the_mapping_table_is_printed_from_real_refusals(workspace):
    printed = _printed()
    for label, (test, layer, failure_class, code) in _refusal_rows(workspace).items():
        assert re.search(rf"^{re.escape(label)} +{test} +{layer} +{failure_class} +{code}$", printed, re.MULTILINE), \
            label
    prose = _prose()
    for row in ("| `schema_ok` | schema | `schema` | `schema` |", "| `auth_ok` | permission / path | `permission` | "
                "`authorization` |", "| `Pre` | business / approval | `business` | `precondition` |"):
        assert row in prose, row


def test_approval_names_one_call_and_lets_it_pass():
    signed = replace(CREATE_INVOICE, needs_approval=True)
    books = Books(orders={"order-431": {"approved": True}})
    call = tk.request("create_invoice", GOOD, call_id="call_8")
    other = tk.request("create_invoice", GOOD, call_id="call_9")
    refused = tk.Host.of([tk.Tool(signed, books.issue)], caller=AGENT, world=books).execute(call)
    assert refused.reason == "approval_required" and refused.failure_class is tk.FailureClass.PRECONDITION
    assert not books.invoices
    approving = tk.Host.of([tk.Tool(signed, books.issue)], caller=AGENT.approving("call_8"), world=books)
    assert approving.check(other).blocked_by == ("Pre",), "an approval covers the call id it names, no other"
    done = approving.execute(call)
    assert done.ok and done.output["invoice_id"] == "INV-9" and len(books.invoices) == 1
    assert "a person approved this call" in signed.card()


def test_a_wrong_amount_passes_every_test_and_only_approval_catches_it():
    sent, asked = {**GOOD, "amount": 1200.0}, GOOD
    books = Books(orders={"order-431": {"approved": True}})
    plain = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], caller=AGENT, world=books)
    call = tk.request("create_invoice", sent, call_id="call_7")
    assert plain.check(call).legal == 1, "well-formed, permitted and ready: nothing in the world objects"
    assert plain.execute(call).ok and [i["amount"] for i in books.invoices] == [1200.0]
    signed = replace(CREATE_INVOICE, needs_approval=True)
    world = Books(orders={"order-431": {"approved": True}})
    verdict = tk.check(tk.request("create_invoice", sent, call_id="call_8"), signed, AGENT, world)
    assert verdict.blocked_by == ("Pre",) and [e.code for e in verdict.pre.errors] == ["approval_required"]
    assert [PRE_QUESTIONS[e.code] for e in verdict.pre.errors] == ["intended"]
    assert verdict.schema_ok.outcome is verdict.auth_ok.outcome is tk.Outcome.PASS
    unready = tk.check(tk.request("create_invoice", {**asked, "order_id": "order-500"}, call_id="call_9"), signed,
                       AGENT.approving("call_9"), Books(orders={"order-500": {"approved": False}}))
    assert [PRE_QUESTIONS[e.code] for e in unready.pre.errors] == ["world ready"]
    assert "approval" in LAYER_OF["Pre"].asks and "ready" in LAYER_OF["Pre"].asks


@needs_notebook
def test_the_notebook_shows_the_wrong_amount_only_approval_catches():
    printed = _printed()
    assert "no approval, amount 1200: legal = 1 x 1 x 1 = 1  Pre said no to: -         issued: INV-9 for 1200" \
        in printed
    assert "approval, amount 1200: legal = 1 x 1 x 0 = 0  Pre said no to: intended  issued: nothing" in printed
    assert "approval, amount 120: legal = 1 x 1 x 1 = 1  Pre said no to: -         issued: INV-9 for 120" in printed
    assert "call_10 under call_9's approval: Pre fail" in printed
    prose = _prose()
    assert "**World ready**" in prose and "**Intended** is approval" in prose


# ------------------------------------------------------------------ common errors and raw input
def test_each_common_error_has_a_cause_and_a_next_move(workspace):
    rows = common_errors(workspace)
    assert [r["error"] for r in rows] == ["missing required field", "wrong type", "out-of-range enum",
                                         "wrong tool chosen"]
    assert [r["code"] for r in rows] == ["missing_required", "wrong_type", "enum", "precondition_failed"]
    assert rows[3]["failure_class"] == "precondition" and CODES[rows[3]["code"]] == "business"
    for code, cause in CAUSES.items():
        assert code in CODES and cause.usually and cause.model_can
    layers = {CODES[code] for code in CAUSES}
    assert layers == {"schema", "permission", "business"}, "every layer's refusals are explained"
    assert cause_of(tk.ToolError("timeout", "$", "x")) is GENERAL


@needs_notebook
def test_common_errors_are_printed_with_their_cause_from_real_refusals():
    printed = _printed()
    for label, code in (("missing required field", "missing_required"), ("wrong type", "wrong_type"),
                        ("out-of-range enum", "enum"), ("wrong tool chosen", "precondition_failed"),
                        ("caller lacks the scope", "not_authorized"), ("world not ready", "precondition_failed"),
                        ("nobody approved it", "approval_required")):
        cause = CAUSES[code]
        assert re.search(rf"^{re.escape(label)} +{code} +usually: {re.escape(cause.usually)}$", printed,
                         re.MULTILINE), label
        assert f"the model can: {cause.model_can}" in printed
    assert "invoices issued by these refusals: 0" in printed
    assert "tool-selection" in _prose()


@needs_notebook
def test_the_empty_string_is_no_arguments_and_the_notebook_says_why():
    assert parse_arguments("") == ({}, [])
    verdict = tk.check(tk.request("create_invoice", "", call_id="c"), CREATE_INVOICE, AGENT, Books())
    assert verdict.errors[0].line() == "$.order_id: required property missing"
    assert "''                             -> missing_required   $.order_id: required property missing" in _printed()
    assert "the empty string parses as: ({}, [])" in _printed()
    prose = _prose()
    assert 'some vendors send `""` for a tool that takes no parameters' in prose


@needs_notebook
def test_the_notebook_removes_its_workspace_and_prints_no_path():
    printed = _printed()
    assert "temporary workspace removed" in printed and "chapter02-" not in printed


# ------------------------------------------------------------------ the exercise
def _run_solution(replacing: dict[str, str] | None = None) -> AssertionError | None:
    """Run the solution's code cells in order, swapping one cell's text; return the first failed check."""
    namespace: dict = {"__name__": "__exercise__"}
    cwd = os.getcwd()
    os.chdir(SOLUTION.parent)
    try:
        for cell in nbformat.read(SOLUTION, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            source = cell.source
            for old, new in (replacing or {}).items():
                source = source.replace(old, new)
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, "<cell>", "exec"), namespace)
    except AssertionError as failure:
        return failure
    finally:
        os.chdir(cwd)
    return None


@pytest.mark.skipif(not SOLUTION.exists(), reason="solution not built yet")
def test_the_solution_passes_its_own_checks():
    assert _run_solution() is None


@pytest.mark.skipif(not SOLUTION.exists(), reason="solution not built yet")
@pytest.mark.parametrize("old, new, explained", [
    ("args[\"to\"] in world", "True", "must fail for stranger@example.com"),
    ('tk.Condition("recipient_allowed"', 'tk.Condition("allowed"', "named 'recipient_allowed'"),
    ("retry = tk.Retry.UNSAFE", "retry = tk.Retry.SAFE", "its retry is UNSAFE"),
])
def test_the_contract_check_rejects_a_wrong_contract_and_says_why(old, new, explained):
    failure = _run_solution({old: new})
    assert failure is not None, f"the checks accepted a contract with {new}"
    assert explained in str(failure), str(failure)


@pytest.mark.skipif(not SOLUTION.exists(), reason="solution not built yet")
def test_the_instructions_introduce_condition_with_its_signature_and_an_example():
    text = "\n".join(c.source for c in nbformat.read(SOLUTION, as_version=4).cells if c.cell_type == "markdown")
    assert "tk.Condition(name, description, predicate" in text and "predicate(args, world)" in text
    example = re.search(r"```python\n(.+?)\n```", text, re.DOTALL).group(1)
    condition = eval(example, {"tk": tk})
    assert isinstance(condition, tk.Condition) and condition.predicate({"amount": 5}, None) is True
    assert condition.predicate({"amount": 0}, None) is False


def test_the_panel_says_which_question_of_pre_said_no():
    from course.present.legality_panel import legality_svg, light_title
    signed = replace(CREATE_INVOICE, needs_approval=True)
    unintended = tk.check(tk.request("create_invoice", GOOD, call_id="c"), signed, AGENT,
                          Books(orders={"order-431": {"approved": True}}))
    unready = tk.check(tk.request("create_invoice", {**GOOD, "order_id": "order-500"}, call_id="c"), CREATE_INVOICE,
                       AGENT, Books(orders={"order-500": {"approved": False}}))
    assert light_title(unintended.pre) == "intended" and light_title(unready.pre) == "world ready"
    assert "Pre: intended" in legality_svg(unintended) and "Pre: world ready" in legality_svg(unready)
