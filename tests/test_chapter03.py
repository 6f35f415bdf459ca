"""Chapter 3, Agent-427's import failure: the panel driven from Python, and the chapter's facts recomputed."""
import dataclasses
import difflib
import html
import itertools
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import nbformat
import pytest

import toolkit as tk
from course.worlds import ScriptedPolicy
from course.worlds import agent427 as a
from course.worlds import correct_step, Episode, format_call, inspect_step
from course.worlds import compare_masking, generate
from course.worlds import agent427_preferences
from toolkit.files import EDIT_FILE_SCHEMA
from course.worlds import file_sha256, tree_digest
from toolkit.files import import_claims, read_exports
from course.present.agent427_panel import LABELS, agent427_panel
from course.worlds import READER, agent427_scenario, proposal_for

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "03_agent427_import_failure.ipynb"
SOLUTION = ROOT / "solutions" / "03_inspect_exports.ipynb"

# The calamity, as the book prints it (the chapter must reproduce it exactly).
BOOK_CALAMITY = """\
proposal.code:
  from publication_manifest import load_manifest

proposal.tool:
  edit_file({"path": "scripts/build_site.py",
             "patch": "use load_manifest(BOOK_DIR)"})

validator:
  $.file_path: required property missing
  $.path: unexpected property
  $.patch: unexpected property
  import publication_manifest.load_manifest: symbol not exported

transition:
  rejected_schema -> observe(errors) -> inspect_exports
"""
BOOK_VALIDATOR = BOOK_CALAMITY.split("validator:\n")[1].split("\n\n")[0].replace("  ", "").splitlines()
SCHEMA_LINES = BOOK_VALIDATOR[:3]
EXPORT_LINE = BOOK_VALIDATOR[3]


@pytest.fixture
def ws(tmp_path):
    return a.copy_scenario(tmp_path / "ws")


# ------------------------------------------------------------------ the panel
def test_panel_starts_legal_and_names_every_blocking_test_for_all_eight_switch_settings(ws):
    digest = tree_digest(ws)
    panel = agent427_panel(ws)
    assert [box.description for box in panel.boxes] == list(LABELS)
    assert panel.verdict.legal == 1 and panel.text().endswith("allowed: all three tests pass")
    for declared, holds_write, exported in itertools.product([True, False], repeat=3):
        shown = panel.set(schema=declared, auth=holds_write, pre=exported)
        verdict = panel.verdict
        expected_blocked = tuple(name for name, on in zip(("schema_ok", "auth_ok", "Pre"),
                                                          (declared, holds_write, exported)) if not on)
        assert verdict.blocked_by == expected_blocked, (declared, holds_write, exported, shown)
        assert verdict.legal == int(declared and holds_write and exported)
        assert verdict.lines()[3] in html.unescape(panel.view.value)     # the page's text form agrees
        assert f"data-legal='{verdict.legal}'" in panel.view.value        # and so does the drawing
        for test in verdict.tests:                                        # one light per test, in its state
            state = {"pass": "pass", "fail": "fail", "not evaluable": "not-evaluable"}[test.outcome.value]
            assert f"data-test='{test.name}' data-state='{state}'" in panel.view.value
        assert ("schema_ok fail          " + "; ".join(SCHEMA_LINES) in shown) == (not declared)
        assert ("caller lacks fs.write" in shown) == (not holds_write)
        assert (EXPORT_LINE in shown) == (not exported)
        assert shown.count(EXPORT_LINE) <= 1, "the unexported import is reported once, not once per checker"
        # a Pre over a call the schema refused is not evaluable unless the code's import is wrong
        if not declared and exported:
            assert verdict.pre.outcome is tk.Outcome.NOT_EVALUABLE
    assert tree_digest(ws) == digest, "the panel only reads its workspace"


def test_panel_without_a_workspace_checks_each_verdict_in_a_throwaway_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))      # where the throwaway copies go
    panel = agent427_panel()
    assert panel.verdict.legal == 1
    shown = panel.set(schema=False, pre=False)
    assert "blocked by: schema_ok, Pre" in shown and EXPORT_LINE in shown
    assert panel.set(schema=True, pre=True, auth=False).endswith("blocked by: auth_ok")
    assert list(tmp_path.iterdir()) == [], "every throwaway copy is deleted once its verdict is known"


def test_panel_boxes_are_real_inputs(ws):
    panel = agent427_panel(ws)
    panel.boxes[2].value = False                      # a click on the widget itself
    assert panel.text().splitlines()[2] == f"Pre       fail          {EXPORT_LINE}"
    assert "blocked by: Pre" in panel.text()
    panel.boxes[2].value = True
    assert "legal = 1 x 1 x 1 = 1" in panel.text()
    # the switches change the proposal and the caller, and nothing else
    assert proposal_for(True, True) == a.corrected_proposal("load_publication_manifest", "call_panel")
    assert proposal_for(False, False).code == a.first_proposal().code
    assert proposal_for(False, False).arguments == a.first_proposal().arguments
    assert READER.scopes == a.AGENT.scopes - {"fs.write"}
    scenario = agent427_scenario(ws)
    assert scenario(True, True, False).pre.errors[0].line() == EXPORT_LINE


# ------------------------------------------------------------------ the calamity
def test_calamity_validator_lines_exactly_and_nothing_edited(ws):
    host = a.episode_host(ws)
    before_file, before_tree = file_sha256(ws / a.BUILD_SCRIPT), tree_digest(ws)
    first = a.first_proposal("call_1")
    layout = ["proposal.code:", f"  {first.code}", "", "proposal.tool:"] + [f"  {x}" for x in format_call(first.call)]
    report = a.validate(first, host)
    layout += ["", "validator:"] + [f"  {x}" for x in report.lines()]
    result = host.execute(first)
    layout += ["", "transition:", f"  {a.transition(result)}"]
    assert "\n".join(layout) + "\n" == BOOK_CALAMITY
    assert report.transition() == a.transition(result)
    assert result.status is tk.Status.REJECTED and result.failure_class is tk.FailureClass.SCHEMA
    assert file_sha256(ws / a.BUILD_SCRIPT) == before_file and tree_digest(ws) == before_tree


def test_smuggling_the_edit_through_a_shell_is_refused_and_changes_nothing(ws):
    host = a.episode_host(ws)
    digest = tree_digest(ws)
    call = tk.request("shell", {"cmd": f"sed -i 's/json.loads(.*/load_manifest(BOOK_DIR)/' {a.BUILD_SCRIPT}"})
    result = host.execute(call)
    assert result.status is tk.Status.REJECTED and result.reason == "unknown_tool"
    assert result.errors[0].line() == "$.name: no tool named 'shell' is declared"
    assert result.errors[0].expected == ["edit_file", "inspect_exports"]
    assert tree_digest(ws) == digest


def test_exports_are_read_without_running_the_module(ws):
    (ws / "noisy.py").write_text('open(__file__ + ".ran", "w").close()\n__all__ = ["quiet"]\ndef quiet(): pass\n')
    assert read_exports(ws, "noisy").names == ("quiet",)
    assert not (ws / "noisy.py.ran").exists()
    host = a.episode_host(ws)
    looked = host.execute(tk.request("inspect_exports", {"module": a.MODULE}, call_id="call_2"))
    assert looked.ok and looked.output["names"] == ["ManifestError", "load_publication_manifest"]
    assert looked.output["path"] == "publication_manifest.py"            # relative, never absolute
    report = a.validate(a.first_proposal(), host)
    wanted = report.code_errors[0].received
    assert difflib.get_close_matches(wanted, looked.output["names"], n=1, cutoff=0.0) == ["load_publication_manifest"]
    assert report.code_errors[0].hint.startswith("did you mean load_publication_manifest?")


def test_corrected_proposal_is_legal_and_makes_exactly_the_edit_asked_for(ws):
    host = a.episode_host(ws)
    before = a.read_build_script(ws)
    second = a.corrected_proposal("load_publication_manifest", "call_3")
    assert [t.outcome for t in a.validate(second, host).verdict.tests] == [tk.Outcome.PASS] * 3
    done = host.execute(second)
    after = a.read_build_script(ws)
    diff = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert diff == ["-" + a.OLD_TEXT.rstrip("\n"), "+from publication_manifest import load_publication_manifest", "+",
                    "+MANIFEST = load_publication_manifest(BOOK_DIR)"]
    assert done.evidence["sha256_after"] == file_sha256(ws / a.BUILD_SCRIPT)
    run = subprocess.run([sys.executable, a.BUILD_SCRIPT], cwd=ws, capture_output=True, text=True)
    assert run.returncode == 0
    assert run.stdout.split() == ["01-a-request-is-not-an-action.html", "02-contracts-and-legality.html"]
    # sending the same edit again finds a changed world: refused, and the file stays as the edit left it
    again = host.execute(a.corrected_proposal(call_id="call_4"))
    assert again.errors[0].line() == "$.old_text: old_text occurs 0 times in scripts/build_site.py"
    assert a.read_build_script(ws) == after


def test_the_episode_through_evaluate_with_the_scripted_policy(ws):
    host = a.episode_host(ws)
    before = a.read_build_script(ws)
    policy = ScriptedPolicy([a.first_proposal("call_1"), inspect_step, correct_step])
    state = tk.evaluate(tk.State(a.TASK), policy, host)
    assert state.done and [o.kind for o in state.observations] == ["rejected", "result", "result"]
    assert [o.call.name for o in state.observations] == ["edit_file", "inspect_exports", "edit_file"]
    episode = Episode(ws, state, host, before, a.read_build_script(ws))
    transcript = episode.transcript()
    assert transcript.startswith(BOOK_CALAMITY)
    assert "  from publication_manifest import load_publication_manifest" in transcript.splitlines()
    assert "  schema_ok pass, auth_ok pass, Pre pass: legal = 1" in transcript.splitlines()
    assert str(ws) not in transcript and str(ws.parent) not in transcript


# --------------------------------------------------- constrained generation
def test_masked_output_passes_the_schema_yet_names_load_manifest_and_only_the_export_check_refuses_it(ws):
    host = a.episode_host(ws)
    prefs = agent427_preferences()
    lines = compare_masking(prefs, EDIT_FILE_SCHEMA)
    assert lines[1].endswith("<- budget: no closing brace")
    free, cut, masked = generate(prefs), generate(prefs, max_tokens=8), generate(prefs, EDIT_FILE_SCHEMA)
    verdicts = [host.check(tk.request("edit_file", g.text, call_id="call_gen")) for g in (free, cut, masked)]
    assert [e.line() for e in verdicts[0].schema_ok.errors] == SCHEMA_LINES
    assert [e.line() for e in verdicts[1].schema_ok.errors] == ["$: arguments are not valid JSON"]
    assert verdicts[2].blocked_by == ("Pre",) and [e.line() for e in verdicts[2].errors] == [EXPORT_LINE]
    assert "import load_manifest" in masked.arguments()[0]["new_text"]


def test_three_hundred_masked_runs_always_pass_the_schema_and_never_get_load_manifest_through(ws):
    table, refusals = _masked_table(a.episode_host(ws))
    assert table["load_manifest", "legal"] == 0
    assert table["load_manifest", "symbol_not_exported"] > 0 and table["load_publication_manifest", "legal"] > 0
    assert table["load_manifest", "precondition_failed"] + table["load_publication_manifest", "precondition_failed"] > 0
    assert set(outcome for _, outcome in table) <= {"legal", "symbol_not_exported", "precondition_failed"}
    assert sum(table.values()) == 300
    # every refusal is one of the two the prose names: the unexported import, or a file that does not exist
    for error in refusals:
        assert (error.code, error.pointer) in {("symbol_not_exported", "import publication_manifest.load_manifest"),
                                               ("precondition_failed", "$.file_path")}, error.line()
        if error.code == "precondition_failed":
            assert error.message.startswith("no such file"), error.line()


def _masked_table(host):
    """Chapter 3's 300 seeded masked runs: (imported name, first refusal's code or "legal") -> count."""
    prefs = agent427_preferences()
    table, refusals = Counter(), []
    for seed in range(300):
        generation = generate(prefs, EDIT_FILE_SCHEMA, seed=seed)
        arguments, errors = generation.arguments()
        assert errors == []
        verdict = host.check(tk.request("edit_file", generation.text, call_id=f"call_s{seed}"))
        assert verdict.schema_ok.outcome is tk.Outcome.PASS, seed
        claims, _ = import_claims(arguments["new_text"])
        outcome = "legal" if verdict.legal else verdict.errors[0].code
        table[claims[0].name, outcome] += 1
        if not verdict.legal:
            refusals.append(verdict.errors[0])
    return table, refusals


def test_the_chapter_prints_the_masked_run_table_the_toolkit_computes(ws):
    table, _ = _masked_table(a.episode_host(ws))
    printed = _stdout(NOTEBOOK).splitlines()
    columns = ["legal", "symbol_not_exported", "precondition_failed"]
    assert "schema_ok passed in 300 of 300 masked runs" in printed
    assert f"{'new_text imports':<27}" + "".join(f"{c:>21}" for c in columns) in printed
    for name in ("load_manifest", "load_publication_manifest"):
        assert f"{name:<27}" + "".join(f"{table[name, c]:>21}" for c in columns) in printed, name
    assert "precondition_failed, for example: $.file_path: no such file: build_site.py" in printed


# ------------------------------------------------------- the violation
def test_each_weakened_runtime_says_legal_where_the_real_one_refuses(ws):
    host = a.episode_host(ws)
    declared = [d["name"] for d in host.declare()]
    shell = tk.Contract("shell", "Run any command.", {"type": "object", "required": ["cmd"],
                                                      "properties": {"cmd": {"type": "string"}}},
                        permissions=("fs.write",))
    stale = tk.Contract("edit_file", "last year's edit_file", {
        "type": "object", "required": ["path", "patch"],
        "properties": {"path": {"type": "string"}, "patch": {"type": "string"}}}, permissions=("fs.write",))
    prompt_only = dataclasses.replace(host.contract("edit_file"), permissions=())
    cases = [
        (tk.request("shell", {"cmd": "sed -i 's/x/y/' scripts/build_site.py"}), shell, a.AGENT,
         "$.name: no tool named 'shell' is declared"),
        (a.first_proposal().call, stale, a.AGENT, SCHEMA_LINES[0]),
        (a.corrected_proposal().call, prompt_only, READER, "tool edit_file: caller lacks fs.write"),
    ]
    for call, weakened, caller, refusal in cases:
        assert tk.check(call, weakened, caller, ws).legal == 1, weakened.description
        real = tk.check(call, host.contract(call.name), caller, ws, declared)
        assert real.legal == 0 and real.errors[0].line() == refusal


# ------------------------------------------------------- the notebooks
def _stdout(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "".join(o.text for c in nb.cells if c.cell_type == "code" for o in c.outputs
                   if o.output_type == "stream")


def test_the_chapter_prints_the_calamity_line_for_line_and_states_its_lessons():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    printed = _stdout(NOTEBOOK)
    assert BOOK_CALAMITY in printed
    prose = " ".join(c.source.replace("\n# ", " ").replace("\n", " ") for c in nb.cells if c.cell_type == "markdown")
    assert "A refusal is information to act on, not an obstacle to route around" in prose
    assert "A grammar can rule out a missing brace; it cannot vouch for an export" in prose
    for heading in ("## Summary", "**Exercise:** `exercises/03_inspect_exports.ipynb`"):
        assert heading in prose
    # the course says these things in its own words, not the book's
    for copied in ("different species of thing", "The decisive artifact", "not a cue to smuggle",
                   "identify each invalid claim, preserve the world", "owns an action vocabulary",
                   "Grammar can prevent a missing brace"):
        assert copied not in prose, copied
    # Toolformer and ReAct are explained where they are named
    assert "*Toolformer* — a language model trained to insert calls" in prose
    assert "*ReAct* — prompting a model to alternate a written thought with an action" in prose


def test_the_loop_is_counted_as_it_is_shown():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c.source for c in nb.cells if c.cell_type == "markdown" and "evaluate(state):" in c.source)
    block = cell.split("```\n")[1].split("```")[0].splitlines()
    assert block[0] == "evaluate(state):" and len(block[1:]) == 5
    assert all(line.startswith("  ") for line in block[1:])
    assert "the loop is a header and five lines" in cell.replace("\n", " ")


def test_the_workspaces_are_removed_only_by_the_last_code_cell():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # the chapter's code cells; the knowledge check after them is a quiz that uses no workspace
    code = [c for c in nb.cells if c.cell_type == "code" and "knowledge_check(" not in c.source]
    assert [i for i, c in enumerate(code) if "cleanup()" in c.source] == [len(code) - 1]
    assert code[-1].outputs[0].text == "chapter workspaces removed: True\n"
    # the cells of 3.8 that read the copies all run before it
    assert any("fresh_host" in c.source for c in code[:-1]) and "fresh" not in code[-1].source
    # the panel displays itself, its text under the lights; no later cell prints or changes it
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    shown = next(i for i, s in enumerate(sources) if s.strip().splitlines()[-1].split("#")[0].strip() == "panel")
    assert not any("panel.set(" in s or "panel.text()" in s for s in sources[shown + 1:])
    [output] = code[shown].outputs
    assert output.data["text/plain"] == agent427_panel().text()


def test_the_deep_dive_prints_the_scenario_the_panel_checks():
    from course.worlds import agent427_scenario
    from course.present.legality_panel import verdict_text

    scenario, printed = agent427_scenario(), _stdout(NOTEBOOK)
    for switches in ((True, True, False), (False, True, False), (True, False, True)):
        assert verdict_text(scenario(*switches)) in printed
    assert "blocked by: schema_ok, Pre" in printed and "blocked by: auth_ok" in printed


def test_the_chapter_shows_the_file_unchanged_after_the_refusal_and_the_exact_edit_after_the_correction(tmp_path):
    printed = _stdout(NOTEBOOK).splitlines()
    original = file_sha256(a.SCENARIO / a.BUILD_SCRIPT)[:12]
    assert f"{a.BUILD_SCRIPT} sha256 before {original}  after {original}" in printed
    ws = a.copy_scenario(tmp_path / "ws")
    a.episode_host(ws).execute(a.corrected_proposal())
    assert f"sha256 before {original}  after {file_sha256(ws / a.BUILD_SCRIPT)[:12]}" in printed
    assert "+MANIFEST = load_publication_manifest(BOOK_DIR)" in printed


def test_the_solution_has_two_tasks_with_checks():
    nb = nbformat.read(SOLUTION, as_version=4)
    regions = [c for c in nb.cells if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    assert len(regions) == 2 and len(checks) == 2
    assert all("assert" in c.source for c in checks)


def test_pre_is_not_evaluable_for_the_call_alone_and_fails_with_the_code_beside_it(tmp_path):
    ws = a.copy_scenario(tmp_path / "ws")
    host = a.episode_host(ws)
    first = a.first_proposal("call_1")
    alone, report = host.check(first.call), a.validate(first, host)
    assert alone.pre.outcome is tk.Outcome.NOT_EVALUABLE and alone.lines()[-1] == "legal = 0 x – x – = 0"
    assert report.verdict.pre.outcome is tk.Outcome.FAIL and report.verdict.lines()[-1] == "legal = 0 x – x 0 = 0"
    assert [e.code for e in report.verdict.pre.errors] == ["symbol_not_exported"]
    printed = _stdout(NOTEBOOK)
    assert "the call alone:      Pre not evaluable legal = 0 x – x – = 0" in printed
    assert "with proposal.code:  Pre fail          legal = 0 x – x 0 = 0" in printed
    prose = " ".join(c.source.replace("\n", " ") for c in nbformat.read(NOTEBOOK, as_version=4).cells
                     if c.cell_type == "markdown")
    assert "a test runs only on what actually reached it" in prose
    assert "the code sits *inside* `new_text`, so a schema failure there leaves `Pre` not evaluable" in prose
