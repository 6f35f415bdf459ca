"""Chapter 4, choosing among the legal calls: the chapter's facts recomputed by the toolkit and found in the stored notebook."""
import dataclasses
import re
from pathlib import Path

import nbformat
import pytest

import toolkit as tk
from course.worlds import agent427 as a
from course.worlds import CREATE_INVOICE
from toolkit.kernel import READ_FILE
from toolkit.files import edit_file_contract
from course.present.scoring_panel import ScoringPanel, choice_text
from course.worlds.advice import (SAFEGUARDS, WHEN_TO_USE, TaskProperties, lean_path,
                                  required_safeguards)
from course.present.plots import flip_point
from course.worlds import pick_tool
from toolkit.wire import tools_for

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "04_choosing_among_legal_calls.ipynb"
SOLUTION = ROOT / "solutions" / "04_choosing_calls.ipynb"

DECLARED = ("edit_file", "inspect_exports")
SED = tk.request("shell", {"cmd": f"sed -i 's/json.loads(.*/load_manifest(BOOK_DIR)/' {a.BUILD_SCRIPT}"},
                 call_id="call_sh")


def _stdout(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return "".join(o.text for c in nb.cells if c.cell_type == "code" for o in c.outputs
                   if o.output_type == "stream").splitlines()


def _prose(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return " ".join(c.source.replace("\n", " ") for c in nb.cells if c.cell_type == "markdown")


@pytest.fixture
def host(tmp_path):
    return a.episode_host(a.copy_scenario(tmp_path / "ws"))


@pytest.fixture
def options(host):
    """The chapter's candidates: the read at the worked example's prices, the read at read_file's, the edit at edit_file's."""
    read = tk.Option("read the script", value=8, cost=1, risk=1)
    read_contract = tk.Option.from_contract(READ_FILE, value=8, name="read (read_file)")
    edit = tk.Option.from_contract(host.contract("edit_file"), value=11, name="eager edit")
    return read, read_contract, edit


# ------------------------------------------------------------ 4.1 the governed score
def test_the_edit_takes_cost_2_and_risk_6_from_its_contract_and_scores_3(host, options):
    read, read_contract, edit = options
    contract = host.contract("edit_file")
    assert (contract.cost, contract.risk) == (2, 6)
    assert (edit.cost, edit.risk, edit.score()) == (2, 6, 3)
    assert read.score() == 6
    printed = _stdout(NOTEBOOK)
    assert "edit_file: cost 2, risk 6 (writes one workspace file)" in printed
    assert "eager edit: 11 - 2 - 6 = 3" in printed


def test_read_files_contract_prices_the_read_lower_and_the_read_wins_either_way(options):
    read, read_contract, edit = options
    assert (read_contract.cost, read_contract.risk) == (READ_FILE.cost, READ_FILE.risk) == (0.1, 0)
    assert read_contract.score() == pytest.approx(7.9)
    assert tk.choose([edit, read]).best is read
    assert tk.choose([edit, read_contract]).best is read_contract
    printed = _stdout(NOTEBOOK)
    for option in options:
        assert f"{option.name:<17} {option.value:g} - {option.cost:g} - {option.risk:g} = {option.score():g}" in printed
    assert "chosen: read the script" in printed
    assert "chosen at read_file's prices: read (read_file)" in printed


def test_pricing_cost_and_risk_changes_the_decision(options):
    read, _, edit = options
    free, priced = tk.choose([read, edit], lam_c=0, lam_r=0), tk.choose([read, edit])
    assert free.best is edit and free.scores == {"read the script": 8, "eager edit": 11}
    assert priced.best is read and priced.scores == {"read the script": 6, "eager edit": 3}
    printed = _stdout(NOTEBOOK)
    for lam, choice in ((0, free), (1, priced)):
        block = [f"lambda_c = lambda_r = {lam}:"] + ["  " + line for line in choice.lines()]
        start = printed.index(block[0])
        assert printed[start:start + len(block)] == block


def test_the_closer_race_safe_7_beats_risky_3():
    safe, risky = tk.Option("safe call", 10, 2, 1), tk.Option("risky call", 11, 2, 6)
    choice = tk.choose([safe, risky], lam_c=1, lam_r=1)
    assert choice.scores == {"safe call": 7, "risky call": 3} and choice.best is safe
    printed = _stdout(NOTEBOOK)
    assert choice.lines() == printed[printed.index(choice.lines()[0]):][:2]


# ------------------------------------------------------------ 4.2 only legal calls
def test_the_shell_shortcut_is_illegal_by_the_check_and_never_a_candidate(host, options):
    read, _, edit = options
    verdict = tk.check(SED, host.contract("shell"), a.AGENT, None, [d["name"] for d in host.declare()])
    assert host.contract("shell") is None
    assert verdict.legal == 0 and verdict.errors[0].code == "unknown_tool"
    assert verdict.errors[0].line() == "$.name: no tool named 'shell' is declared"
    assert host.check(SED).legal == 0                       # the host says the same
    shortcut = tk.Option("shell: sed -i", value=14, cost=1, risk=2, legal=verdict.legal)
    assert shortcut.score() == 11 > max(read.score(), edit.score())
    choice = tk.choose([shortcut, read, edit])
    assert choice.best is read and choice.excluded == ("shell: sed -i",) and "shell: sed -i" not in choice.scores
    printed = _stdout(NOTEBOOK)
    assert str(verdict).splitlines() == printed[printed.index(str(verdict).splitlines()[0]):][:4]
    assert "error code: unknown_tool" in printed
    assert "shell: sed -i, if it were a candidate: 14 - 1 - 2 = 11" in printed
    assert "shell: sed -i    illegal  (never a candidate)" in printed


# ------------------------------------------------------------ 4.3 / 4.4 prices and the flip
def test_the_panel_and_the_flip_point(options):
    read, read_contract, edit = options
    panel = ScoringPanel([read, edit])
    assert panel.text() == choice_text([read, edit], 1, 1) and panel.text().endswith("chosen: read the script")
    assert panel.set(lam_r=0.25).endswith("chosen: eager edit")
    assert panel.set(lam_r=1.0).endswith("chosen: read the script")
    r_star = flip_point(read, edit)
    assert r_star == pytest.approx(0.4)
    assert tk.choose([read, edit], lam_r=r_star - 0.05).best is edit
    assert tk.choose([read, edit], lam_r=r_star + 0.05).best is read
    assert flip_point(read_contract, edit) == pytest.approx(1.1 / 6)
    printed = _stdout(NOTEBOOK)
    assert "read vs eager edit: they tie at lambda_r = 0.4" in printed
    assert "with read_file's contract prices the tie moves to lambda_r = 0.183" in printed
    assert "safe vs risky call: they tie at lambda_r = 0.2" in printed
    for lam_r in (0.25, 1.0):
        text = choice_text([read, edit], 1, lam_r).splitlines()
        assert printed[printed.index(text[0]):][:len(text)] == text


def _marks(drawing: str, attribute: str) -> list[dict[str, str]]:
    """Every element of a drawing that carries ``data-<attribute>``, as ``{attribute name: value}``."""
    tags = re.findall(rf"<\w+ [^>]*data-{attribute}='[^>]*>", drawing)
    return [dict(re.findall(r" ([\w-]+)='([^']*)'", tag)) for tag in tags]


def test_the_flip_plot_draws_legal_options_and_marks_the_flip(options):
    from course.present.plots import choice_flip, choice_flip_svg, choice_flip_text

    read, read_contract, edit = options
    shortcut = tk.Option("shell: sed -i", 14, 1, 2, legal=0)
    drawing = choice_flip_svg([shortcut, read, edit], lam_c=1.0, max_lam_r=2.0)
    lines = _marks(drawing, "option")
    assert [m["data-option"] for m in lines] == ["read the script", "eager edit"]   # the illegal one is not drawn
    assert len({m["stroke"] for m in lines}) == 2                                   # one colour per option
    for mark, option in zip(lines, (read, edit)):
        assert float(mark["data-score-from"]) == option.score(1, 0) and float(mark["data-score-to"]) == option.score(1, 2)
    flips = _marks(drawing, "flip")
    assert [float(m["data-flip"]) for m in flips] == [flip_point(edit, read)] == [pytest.approx(0.4)]
    assert (flips[0]["data-before"], flips[0]["data-after"], flips[0]["stroke-dasharray"]) == ("eager edit",
                                                                                          "read the script", "5 4")
    assert "λr = 0.4</text>" in drawing
    bands = [(m["data-chosen"], float(m["data-from"]), float(m["data-to"])) for m in _marks(drawing, "chosen")]
    assert bands == [("eager edit", 0.0, flip_point(edit, read)), ("read the script", flip_point(edit, read), 2.0)]
    for name, lo, hi in bands:           # each band's option is what the policy picks anywhere inside it
        assert all(tk.choose([shortcut, read, edit], 1.0, lo + (hi - lo) * t).best.name == name for t in (0.01, 0.5, 0.99))
    text = choice_flip_text([shortcut, read, edit], lam_c=1.0, max_lam_r=2.0)
    assert "shell: sed -i    illegal: no line, never chosen" in text
    assert "flip at λr = 0.4: eager edit gives way to read the script" in text
    # three options, two flips: the middle one holds a band of its own, each flip at its exact tie
    middle = tk.Option("middle", 9, 1, 3)
    drawing = choice_flip_svg([read, edit, middle], 1.0, 3.0)
    assert [m["data-chosen"] for m in _marks(drawing, "chosen")] == ["eager edit", "middle", "read the script"]
    assert [float(m["data-flip"]) for m in _marks(drawing, "flip")] == [flip_point(edit, middle),
                                                                        flip_point(middle, read)]
    assert _marks(choice_flip_svg([read_contract, read], 1.0, 2.0), "flip") == []      # read_contract wins throughout
    with pytest.raises(ValueError, match="max_lam_r"):
        choice_flip([read, edit], max_lam_r=0)
    # the notebook shows the same drawing, its text form beside it, and loads no plotting library for it
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "choice_flip" in c.source)
    assert "matplotlib" not in cell.source
    shown = "".join(o.data["text/html"] for o in cell.outputs if "text/html" in o.get("data", {}))
    assert shown == choice_flip([read, edit], lam_c=1.0, max_lam_r=2.0)
    assert "flip at λr = 0.4: eager edit gives way to read the script" in shown


# ------------------------------------------------------------ 4.5 safeguards
def test_the_safeguard_table_has_a_when_to_use_column_and_the_notebook_prints_it():
    assert list(WHEN_TO_USE) == list(SAFEGUARDS)
    printed = _stdout(NOTEBOOK)
    assert f"{'safeguard':<17} {'what it prevents':<57} when to use it" in printed
    for name, prevents in SAFEGUARDS.items():
        assert f"{name:<17} {prevents:<57} {WHEN_TO_USE[name]}" in printed
    assert "deletion, publishing, a large payment" in WHEN_TO_USE["human approval"]


SEND_MESSAGE = tk.Contract(
    "send_message", "Send one chat message to a person.",
    {"type": "object", "required": ["to", "text"], "additionalProperties": False,
     "properties": {"to": {"type": "string"}, "text": {"type": "string"}}},
    reversible=False, retry=tk.Retry.UNSAFE, risk_category="a message a person reads",
    evidence=("the message id",), writes=("chat:{to}",))


def _safeguard_line(contract) -> str:
    p = TaskProperties.of(contract)
    return (f"{contract.name:<15} undoable={p.reversible!s:<5} retry={p.retry.value!r:<20} "
            f"safeguards: {', '.join(required_safeguards(contract))}" + ("  (lean path)" if lean_path(contract) else ""))


def test_read_file_takes_the_lean_path_and_create_invoice_gets_key_and_record_but_no_approval():
    assert required_safeguards(READ_FILE) == ("call id",) and lean_path(READ_FILE)
    invoice = TaskProperties.of(CREATE_INVOICE)
    assert not invoice.reversible and invoice.side_effect and invoice.self_checkable
    assert required_safeguards(CREATE_INVOICE) == ("call id", "idempotency key", "execution record")
    # what makes approval unnecessary: evidence and a checkable postcondition. Take them away and it is needed.
    blind = dataclasses.replace(CREATE_INVOICE, evidence=(), postconditions=())
    assert "human approval" in required_safeguards(blind)
    # and a contract that asks for approval gets it
    assert required_safeguards(dataclasses.replace(CREATE_INVOICE, needs_approval=True))[-1] == "human approval"
    printed = _stdout(NOTEBOOK)
    for contract in (READ_FILE, CREATE_INVOICE, SEND_MESSAGE):
        assert _safeguard_line(contract) in printed, contract.name


def test_a_key_is_listed_only_where_the_service_honours_it():
    # send_message's service delivers every request it gets: a key would not stop a second message
    assert required_safeguards(SEND_MESSAGE) == ("call id", "execution record")
    assert "idempotency key" not in required_safeguards(dataclasses.replace(CREATE_INVOICE, retry=tk.Retry.UNSAFE))
    assert "honours the key" in WHEN_TO_USE["idempotency key"] and "message" not in WHEN_TO_USE["idempotency key"]
    assert "a message" not in WHEN_TO_USE["idempotency key"]


def test_a_key_stops_a_duplicate_but_not_a_wrong_amount_and_approval_stops_the_wrong_amount():
    from course.worlds import Books
    books = Books(orders={"order-431": {"approved": True}}, honour_keys=True)
    billing = tk.Caller("agent-427", frozenset({"billing.write"}))
    host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], billing, books)
    sent = {"order_id": "order-431", "amount": 1200.0, "currency": "EUR", "idempotency_key": "invoice:order-431:v1"}
    for call_id in ("call_a", "call_b"):
        assert host.execute(tk.request("create_invoice", sent, call_id=call_id)).ok
    assert [i["amount"] for i in books.live_invoices("order-431")] == [1200.0]   # one invoice, still wrong
    signed = dataclasses.replace(CREATE_INVOICE, needs_approval=True)
    verdict = tk.check(tk.request("create_invoice", sent, call_id="call_c"), signed, billing,
                       Books(orders={"order-431": {"approved": True}}))
    assert verdict.legal == 0 and verdict.errors[0].code == "approval_required"
    printed = _stdout(NOTEBOOK)
    assert "with a key, after the retry: ['INV-9 for 1200']" in printed
    assert "with approval withheld:      legal = 1 x 1 x 0 = 0 - approval_required" in printed
    prose = _prose(NOTEBOOK)
    assert "no protection" not in prose and "approval is what catches a wrong amount" in prose


def test_a_deletion_that_needs_approval_is_refused_until_a_person_approves_that_call():
    delete_invoice = tk.Contract(
        "delete_invoice", "Delete an issued invoice and its ledger entry.",
        {"type": "object", "required": ["invoice_id"], "properties": {"invoice_id": {"type": "string"}},
         "additionalProperties": False},
        permissions=("billing.admin",), reversible=False, retry=tk.Retry.UNSAFE,
        evidence=("the deleted invoice id",), writes=("invoice:{invoice_id}",), needs_approval=True)
    assert required_safeguards(delete_invoice) == ("call id", "execution record", "human approval")
    call = tk.request("delete_invoice", {"invoice_id": "INV-9"}, call_id="call_del")
    admin = tk.Caller("agent-427", frozenset({"billing.admin"}))
    refused = tk.check(call, delete_invoice, admin)
    assert refused.legal == 0 and refused.blocked_by == ("Pre",)
    assert refused.errors[0].line() == "tool delete_invoice: a person must approve this call"
    assert tk.check(call, delete_invoice, admin.approving("call_del")).legal == 1
    assert tk.check(call, delete_invoice, admin.approving("call_other")).legal == 0   # approval is per call id
    printed = _stdout(NOTEBOOK)
    assert "safeguards: call id, execution record, human approval" in printed
    assert "without approval:                  legal = 1 x 1 x 0 = 0" in printed
    assert "after a person approves call_del:  legal = 1 x 1 x 1 = 1" in printed
    assert "  requires: caller has billing.admin; a person approved this call" in printed


# ------------------------------------------------------------ the notebook itself
def test_the_chapter_says_things_in_its_own_words_and_ends_cleanly():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    read, edit = tk.Option("read the script", 8, 1, 1), tk.Option("eager edit", 11, 2, 6)
    prose = _prose(NOTEBOOK)
    assert "reward" not in prose                                  # R is risk here, and only risk
    assert "$R(u)$ its risk" in prose
    assert "Bellman structure" in prose and "plus** what the state it leads to is worth" in prose
    assert "the chapter's numbers" not in prose and "chapter's tiny" not in prose
    # the chapter's code cells; the knowledge check after them is a quiz that uses no workspace
    code = [c for c in nb.cells if c.cell_type == "code" and "knowledge_check(" not in c.source]
    assert any("tk.Option.from_contract(edit_contract" in c.source for c in code)
    assert any("tk.check(sed" in c.source and "legal=verdict.legal" in c.source for c in code)
    assert not any("legal=0" in c.source for c in code), "legality is derived from the check, never typed"
    for heading in ("## Summary", "**Exercise:** `exercises/04_choosing_calls.ipynb`"):
        assert heading in prose
    widget = next(i for i, c in enumerate(code)
                  if c.source.strip().splitlines()[-1].split("#")[0].strip() == "panel")
    assert not any("panel.text()" in c.source for c in code), "the panel shows its own text"
    scores = next(c for c in code[widget + 1:]
                  if "choice_text([read, edit], lam_c=1, lam_r=0.25)" in c.source)
    assert scores.outputs[0].text.startswith(choice_text([read, edit], 1, 0.25) + "\n")
    assert [i for i, c in enumerate(code) if "cleanup()" in c.source] == [len(code) - 1]
    assert code[-1].outputs[0].text == "chapter workspace removed: True\n"


def test_the_solution_derives_its_candidates_and_has_two_checked_tasks():
    nb = nbformat.read(SOLUTION, as_version=4)
    regions = [c for c in nb.cells if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    assert len(regions) == 2 and len(checks) == 2 and all("assert" in c.source for c in checks)
    edit = tk.Option.from_contract(edit_file_contract(a.SCENARIO), 11, "eager edit")
    shell_legal = tk.check(SED, None, a.AGENT, declared=DECLARED).legal
    printed = _stdout(SOLUTION)
    assert f"eager edit       value 11, cost {edit.cost:g}, risk {edit.risk:g}, legal 1" in printed
    assert f"shell: sed -i    value 14, cost 1, risk 2, legal {shell_legal}" in printed and shell_legal == 0
    assert "r_star = 0.4" in printed


# ------------------------------------------------------------ 4.1 the declaration decides what can be picked
def _tool_lists(host):
    edit_tool, exports_tool = host.contract("edit_file"), host.contract("inspect_exports")
    undocumented = {"type": "object", "properties": {"path": {"type": "string"}, "mode": {"type": "string"}},
                    "required": ["path"]}
    vague = dataclasses.replace(READ_FILE, description="Helper for files.", schema=undocumented)
    return {"read_file declared": [READ_FILE, edit_tool, exports_tool], "read_file left out": [edit_tool, exports_tool],
            "vague read_file": [vague, edit_tool, exports_tool]}


def test_the_tool_list_decides_which_tool_a_model_can_pick(host):
    task = "Return the content of the build script"
    picks = {label: pick_tool(task, tools_for("anthropic", contracts)) for label, contracts in _tool_lists(host).items()}
    assert {label: p.best for label, p in picks.items()} == {
        "read_file declared": "read_file", "read_file left out": "edit_file",
        "vague read_file": "edit_file"}
    assert "read_file" not in picks["read_file left out"].scores, "a tool left out is never a candidate"
    assert picks["vague read_file"].scores["read_file"] == 0
    detail = " Use it before editing a file."
    longer = dataclasses.replace(READ_FILE, description=READ_FILE.description + detail)
    diluted = pick_tool(task, tools_for("anthropic", [longer])).scores["read_file"]
    assert diluted < picks["read_file declared"].scores["read_file"], "the stand-in's arithmetic"
    assert pick_tool("xyzzy", tools_for("anthropic", [READ_FILE])).best is None
    printed = _stdout(NOTEBOOK)
    for label, p in picks.items():
        scores = ", ".join(f"{name} {score:.3f}" for name, score in p.scores.items())
        assert f"{label:<20} -> {p.best or 'no tool':<10}  ({scores})" in printed, label


def test_the_schema_constrains_the_arguments_the_description_cannot(host, tmp_path):
    ws = a.copy_scenario(tmp_path / "w2")
    wrong_mode = tk.request("read_file", {"path": a.BUILD_SCRIPT, "mode": "binary"}, call_id="call_m")
    detailed = tk.check(wrong_mode, READ_FILE, a.AGENT, ws)
    loose = tk.check(wrong_mode, _tool_lists(host)["vague read_file"][0], a.AGENT, ws)
    assert detailed.blocked_by == ("schema_ok",) and "['text', 'lines']" in detailed.errors[0].message
    assert loose.legal == 1
    printed = _stdout(NOTEBOOK)
    assert "read_file's schema   schema_ok fail  legal = 0 x 1 x 1 = 0  $.mode: 'binary' is not one of ['text', 'lines']" \
        in printed
    assert "undocumented schema  schema_ok pass  legal = 1 x 1 x 1 = 1  (reaches the tool)" in printed


def test_section_4_1_names_the_stand_in_and_gives_the_sources_advice():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    section = prose[prose.index("## 4.1"):prose.index("## 4.2")]
    assert "**a word-overlap\nscorer, not a model**" in section
    assert "*business background*" in section and "not in the schema" in section
    assert "tell the tools\napart" in section
    assert "vendors' tool guides ask for detailed descriptions" in section
    for claim in ("piled", "padded", "short enough to read", "dilutes the\nmatch"):
        assert claim not in prose, claim
