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
from toolkit.worlds import CREATE_INVOICE, Books
from toolkit.core import CODES
from toolkit.present import formulas
from toolkit.files import common_errors
from toolkit.core import parse_arguments

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
    assert "evaluates the layers independently and reports them in that order" in prose
    assert "none of them is ever left out" in prose and "Chapter 1's panel" in prose


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


@needs_notebook
def test_the_notebook_shows_the_refusal_and_the_approved_call():
    printed = _printed()
    assert "approved: nothing  -> rejected / precondition: tool create_invoice: a person must approve this call" \
        in printed
    assert "approved: call_8   -> succeeded, INV-9" in printed and "invoices created: 1" in printed
    assert "call_9 under the same approval: Pre fail" in printed


# ------------------------------------------------------------------ common errors and raw input
@needs_notebook
def test_common_errors_agree_with_the_toolkit_and_read_well(workspace):
    printed = _printed()
    rows = common_errors(workspace)
    assert [r["error"] for r in rows] == ["missing required field", "wrong type", "out-of-range enum",
                                         "wrong tool chosen"]
    host = tk.Host.of([tk.make_read_file(workspace)])
    for row in rows:
        error = host.execute(tk.request("read_file", row["arguments"], call_id="c")).errors[0]
        assert f"{row['error']}: {row['example']}" in printed
        assert re.search(rf"{row['failure_class']} +{row['code']} +layer {error.layer} +at "
                         rf"{re.escape(row['pointer'])}", printed), row["error"]
        line = f"back to the model: {error.message} — hint: {error.hint}"
        assert line.replace(str(workspace), "") in printed, line
    assert "required property missing — hint: add the field 'path'" in printed
    assert "required property missing. add" not in printed
    assert rows[3]["failure_class"] == "precondition" and CODES[rows[3]["code"]] == "business"
    assert "tool-selection" in _prose() and "business-layer precondition" in _prose()


@needs_notebook
def test_the_empty_string_is_no_arguments_and_the_notebook_says_why():
    assert parse_arguments("") == ({}, [])
    verdict = tk.check(tk.request("create_invoice", "", call_id="c"), CREATE_INVOICE, AGENT, Books())
    assert verdict.errors[0].line() == "$.order_id: required property missing"
    assert "''                             -> missing_required   $.order_id: required property missing" in _printed()
    assert "the empty string parses as: ({}, [])" in _printed()
    prose = _prose()
    assert 'Some vendors send `""` as the arguments of a tool that takes no parameters' in prose


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
    ('risk_category="message to a person"', 'risk_category="none"', "risk_category is 'none'"),
    ('evidence=("message id",)', "evidence=()", "a sent message is proven by its id"),
    ("args[\"to\"] in world", "True", "must fail for stranger@example.com"),
    ('tk.Condition("recipient_allowed"', 'tk.Condition("allowed"', "named 'recipient_allowed'"),
    ("retry=tk.Retry.UNSAFE", "retry=tk.Retry.SAFE", "its retry is UNSAFE"),
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
