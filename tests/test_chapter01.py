"""Chapter 1, a request is not an action: the panel driven from Python, the diagram's edges, the chapter's facts.

Also the start-here notebook (chapter 0): its chapter map, its environment check and its reading path.
"""
from __future__ import annotations

import contextlib
import hashlib
import html
import io
import itertools
import os
import re
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

import nbformat
import pytest

import toolkit as tk
from course.worlds import ScriptedPolicy, fixture
from toolkit import wire as v
from toolkit._ids import IdMap
from toolkit.effects import AuditLog, run_audited
from toolkit.kernel import NEXT_STEP
from course.worlds import call_stages
from course.present import transaction_diagram as td
from course.present.read_file_panel import ReadFilePanel
from course.present.svg import AMBER, RED
from course.worlds import FILES, HOSTILE, REQUESTS, SECRETS, attempt, demo_workspace
from course.worlds import files_opened, recording_opens
from toolkit.effects import TRANSITIONS, RecordState
from toolkit._schema import compile_schema, schema_errors
from toolkit.kernel import Assembler
from toolkit._preview import Preview
from toolkit.kernel import Refusal

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "01_a_request_is_not_an_action.ipynb"
START = ROOT / "notebooks" / "00_start_here.ipynb"
SOLUTION = ROOT / "solutions" / "01_read_file_hands_on.ipynb"
CONFIG = FILES["src/config.ts"].encode()
LAYER_SETS = [frozenset(name for name, on in zip(("schema", "path", "business"), bits) if on)
              for bits in itertools.product([True, False], repeat=3)]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return demo_workspace(tmp_path_factory.mktemp("chapter01"))


@pytest.fixture
def spy_host(tree):
    """A host whose read_file records every run of its implementation."""
    ran: list = []
    real = tk.make_read_file(tree.ws)

    def run(arguments, world):
        ran.append(arguments)
        return real.run(arguments, world)

    return tk.Host.of([tk.Tool(real.contract, run)]), ran


# ------------------------------------------------------------------ the chapter's three cases
def test_three_cases_give_three_distinct_statuses_and_only_the_valid_one_opens_a_file(tree):
    seen = {label: attempt(tree, label) for label in ("missing path", "outside path", "valid path")}
    assert {label: (a.result.status, a.result.failure_class) for label, a in seen.items()} == {
        "missing path": (tk.Status.REJECTED, tk.FailureClass.SCHEMA),
        "outside path": (tk.Status.REJECTED, tk.FailureClass.AUTHORIZATION),
        "valid path": (tk.Status.SUCCEEDED, None),
    }
    assert len({a.status_line for a in seen.values()}) == 3
    assert [a.touched for a in seen.values()] == [False, False, True]
    assert seen["valid path"].opened == ("config.ts",)
    assert seen["valid path"].result.evidence == {"size": len(CONFIG), "sha256": hashlib.sha256(CONFIG).hexdigest()}
    assert len(CONFIG) == 26          # the number the chapter prints


def test_etc_passwd_passes_the_schema_and_is_refused_by_the_path_layer(tree):
    read_file = tk.make_read_file(tree.ws)
    assert schema_errors(compile_schema(read_file.contract.schema), {"path": "/etc/passwd"}) == []
    verdict = tk.Host.of([read_file]).check(tk.request("read_file", {"path": "/etc/passwd"}, call_id="c"))
    assert verdict.schema_ok.outcome is tk.Outcome.PASS and verdict.blocked_by == ("auth_ok",)
    assert verdict.errors[0].code == "path_refused" and "rung 1" in verdict.errors[0].message


# ------------------------------------------------------------------ Xiao A's story
def test_a_model_that_only_talks_reads_nothing_and_a_tool_call_leaves_evidence(tree):
    host = tk.Host.of([tk.make_read_file(tree.ws)], tk.Caller("assistant"))
    with recording_opens() as talk:
        state = tk.evaluate(tk.State("Read the config file for me."), lambda state: None, host)
    assert state.done and state.observations == () and host.log == [] and talk == []

    with recording_opens() as acted:
        state = tk.evaluate(tk.State("Read the config file for me."),
                            ScriptedPolicy([tk.request("read_file", {"path": "src/config.ts"}, call_id="call_1")]),
                            host)
    assert len(host.log) == 1 and files_opened(acted) == ["config.ts"]
    result = state.last.result
    assert result.ok and result.call_id == "call_1"
    assert result.evidence["sha256"] == hashlib.sha256(CONFIG).hexdigest()


def test_recording_opens_sees_a_plain_open_and_nothing_outside_its_block(tree):
    with recording_opens() as events:
        (tree.outside / "secret.txt").read_bytes()
    (tree.ws / "src" / "config.ts").read_bytes()            # after the block: not recorded
    assert files_opened(events) == ["secret.txt"]
    with recording_opens() as events:
        tk.request("read_file", {"path": "src/config.ts"})   # a request opens nothing
    assert events == []


# ------------------------------------------------------------------ the cut chunk
def test_a_cut_chunk_never_reaches_the_executor(spy_host):
    host, ran = spy_host
    stream = Assembler()
    stream.add(0, call_id="call_s", name="read_file", arguments='{"path": "src/co')
    preview = stream.preview(0)
    assert isinstance(preview, Preview) and not isinstance(preview, tk.ToolCall) and preview.keys == ("$.path",)
    refused = host.execute(preview)
    assert refused.status is tk.Status.REJECTED and refused.reason == "not_a_call"
    for stop in (None, "length"):
        stream = Assembler()
        stream.add(0, call_id="call_s", name="read_file", arguments='{"path": "src/co')
        [outcome] = stream.finish(stop)
        assert isinstance(outcome, Refusal) and outcome.result.status is tk.Status.REJECTED
    assert ran == []


# ------------------------------------------------------------------ the panel, driven from Python
def test_panel_starts_on_the_outside_path_and_follows_every_control(tree):
    panel = ReadFilePanel(tree)
    assert panel.text().startswith("request    outside path")
    assert "result     call_1: rejected / authorization" in panel.text()
    assert "caught by  the path layer" in panel.text() and "touched    no" in panel.text()

    shown = panel.set(request="symlink out", path=False)
    assert "path OFF" in shown and "auth_ok pass (off)" in shown and "legal = 1" in shown
    assert "caught by  the executor (rung 2 of the path ladder)" in shown and "touched    no" in shown

    shown = panel.set(request="missing path", path=True, schema=False)
    assert "caught by  the path layer" in shown and "must be a string" in shown

    shown = panel.set(request="cut JSON chunk", schema=True)
    assert "nothing reached the host" in shown and "stream ended without a completion signal" in shown

    panel.menu.value = "valid path"                          # a click on the widget itself, not through .set
    assert "result     call_1: succeeded" in panel.text() and "touched    yes: opened config.ts" in panel.text()
    assert "succeeded" in html.unescape(panel.view.value)                # the page's text form agrees
    assert "opened config.ts" in panel.view.value                         # and the drawing says so
    panel.boxes["business"].value = False
    assert "business OFF" in panel.text() and "Pre pass (off)" in panel.text()
    with pytest.raises(ValueError, match="unknown request"):
        panel.set(request="read everything")


@pytest.mark.parametrize("layers", LAYER_SETS, ids=lambda ls: "+".join(sorted(ls)) or "no-layers")
def test_every_request_under_every_layer_choice(tree, layers):
    """Hostile requests never open a file; the valid one always does; the cut chunk never reaches the host."""
    for label, wanted in REQUESTS.items():
        seen = attempt(tree, label, layers)
        text = seen.text()
        assert str(tree.base) not in text, f"{label}: the panel printed an absolute path"
        assert not any(secret.split(":")[0] in text for secret in SECRETS.values())
        if label == "valid path":
            assert seen.result.ok and seen.opened == ("config.ts",)
            continue
        assert seen.result.status is tk.Status.REJECTED and not seen.touched, f"{label} with {set(layers)}"
        if wanted.streamed:
            assert seen.verdict is None and seen.result.reason == "stream_incomplete"
            assert seen.caught_by.startswith("the stream assembler")
            continue
        verdict = seen.verdict
        if verdict.legal:   # every layer that could object was cut: the executor's own open refuses
            assert seen.caught_by.startswith("the executor")
        else:
            first = verdict.blocked_by[0]
            layer = {"schema_ok": "schema", "auth_ok": "path", "Pre": "business"}[first]
            assert layer in layers and seen.caught_by.startswith(f"the {layer} layer")
        if label in HOSTILE:
            assert seen.result.failure_class is tk.FailureClass.AUTHORIZATION


def test_with_all_layers_on_each_request_is_caught_by_the_layer_that_owns_it(tree):
    owner = {"missing path": "schema", "wrong type": "schema", "outside path": "path", "sibling-prefix path": "path",
             "symlink out": "path", "dot-dot climb": "path", "no such file": "business"}
    for label, layer in owner.items():
        assert attempt(tree, label).caught_by.startswith(f"the {layer} layer"), label


def test_a_panel_without_a_tree_makes_and_removes_its_own(tmp_path):
    panel = ReadFilePanel(request="valid path")
    base = panel.tree.base
    assert base.is_dir() and "succeeded" in panel.text()
    panel.close()
    assert not base.exists()
    with ReadFilePanel(request="valid path") as panel:
        base = panel.tree.base
        assert base.is_dir()
    assert not base.exists()


def test_a_demo_tree_removes_only_the_folder_it_made(tmp_path):
    with demo_workspace() as tree:
        base = tree.base
        assert tree.listing() == ["outside/secret.txt", "ws/src/config.ts", "ws/src/routes.ts",
                                  "ws/src/settings.ts -> ../../outside/secret.txt", "ws_evil/secret.txt"]
    assert not base.exists()
    tree.close()                                             # a second close does nothing
    given = demo_workspace(tmp_path / "given")
    given.close()
    assert (tmp_path / "given" / "ws" / "src" / "config.ts").is_file()
    kept = demo_workspace()
    base = kept.base
    del kept                                                 # dropped without close: the finalizer removes it
    import gc
    gc.collect()
    assert not base.exists()


def test_the_executor_reports_its_rung_as_a_field_not_as_text(tree):
    cut = attempt(tree, "symlink out", {"schema", "business"})
    assert cut.caught_by == "the executor (rung 2 of the path ladder), after the host had called the call legal"
    everything_cut = attempt(tree, "dot-dot climb", set())
    assert everything_cut.caught_by.startswith("the executor (rung 1 of the path ladder)")


# ------------------------------------------------------------------ the transaction diagram
def test_every_move_in_the_diagram_is_a_real_transition():
    drawn = call_stages.moves()
    assert drawn and all(target in TRANSITIONS[source] for source, target in drawn)
    assert call_stages.main_moves() == [(RecordState.REQUESTED, RecordState.APPROVED), (RecordState.APPROVED, RecordState.RUNNING),
                               (RecordState.RUNNING, RecordState.SUCCEEDED)]
    every = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}
    assert set(drawn) | set(call_stages.not_drawn()) == every and not set(drawn) & set(call_stages.not_drawn())


def test_every_arrow_in_the_picture_is_a_real_transition():
    svg = td.draw()
    arrows = [(RecordState(a), RecordState(b)) for a, b in td.drawn_moves(svg)]
    # one arrow per main-line move and one per branch, no more: requested->rejected is drawn twice, once per branch
    expected = call_stages.main_moves() + [(b.source, b.target) for b in call_stages.BRANCHES]
    assert Counter(arrows) == Counter(expected)
    assert set(arrows) == set(call_stages.moves()) and all(b in TRANSITIONS[a] for a, b in arrows)
    assert svg.count("data-move=") == len(expected) and f"data-moves='{len(call_stages.moves())}'" in svg
    stage_boxes = re.findall(r"<rect [^>]*data-stage='([^']*)'", svg)
    assert [html.unescape(s) for s in stage_boxes] == [s.name for s in call_stages.STAGES]
    branch_boxes = re.findall(r"<rect [^>]*data-branch='([^']*)'", svg)
    assert branch_boxes == [b.label for b in call_stages.BRANCHES]
    for b in call_stages.BRANCHES:                # label, advice (first words) and colour come from the code
        assert f">{html.escape(b.label)}</text>" in svg and html.escape(b.advice.split()[0]) in svg
        box = re.search(rf"<rect [^>]*stroke='([^']*)'[^>]*data-branch='{re.escape(b.label)}'", svg).group(1)
        assert box == (RED if b.target is RecordState.REJECTED else AMBER)
    assert svg.count("stroke-dasharray=") == 1 and "the transaction boundary of one complete call" in svg
    assert td.drawn_moves("<svg></svg>") == []


def test_the_book_branches_and_their_advice_come_from_the_code():
    branches = {b.label: b for b in call_stages.BRANCHES}
    assert [s.name for s in call_stages.STAGES] == ["user task", "declare", "request(id)", "schema", "policy", "execute",
                                           "result(id)", "write back"]
    assert (branches["shape error"].target, branches["deny"].target) == (RecordState.REJECTED, RecordState.REJECTED)
    assert branches["shape error"].advice == branches["deny"].advice == NEXT_STEP[tk.Status.REJECTED]
    assert branches["timeout"].advice == NEXT_STEP[tk.Status.TIMEOUT]
    assert branches["unconfirmed"].target is RecordState.AWAITING_HUMAN
    text = td.text()
    for b in call_stages.BRANCHES:
        assert f"--{b.label}--> {b.target.value}" in text and b.then in text
    assert "requested->approved" in text and f"({len(call_stages.not_drawn())})" in text


def test_a_diagram_that_disagrees_with_the_state_machine_refuses_to_draw():
    wrong = td.Branch("schema", "skip the checks", RecordState.REQUESTED, RecordState.SUCCEEDED, "pretend")
    with pytest.raises(ValueError, match="requested -> succeeded"):
        call_stages.moves(branches=call_stages.BRANCHES + (wrong,))
    stages = call_stages.STAGES[:4] + call_stages.STAGES[5:]       # drop "policy": requested would jump to running
    with pytest.raises(ValueError, match="requested -> running"):
        call_stages.moves(stages=stages)


def test_real_calls_move_along_the_drawn_lines(tree):
    host = tk.Host.of([tk.make_read_file(tree.ws)], tk.Caller("assistant"))
    drawn = set(call_stages.moves())
    with AuditLog() as log:
        good = run_audited(host, tk.request("read_file", {"path": "src/config.ts"}, call_id="g"), log, "assistant")
        bad = run_audited(host, tk.request("read_file", {"path": "/etc/passwd"}, call_id="b"), log, "assistant")
    assert good.path() == ["requested", "approved", "running", "succeeded"]
    assert bad.path() == ["requested", "rejected"]
    for record in (good, bad):
        assert {(t.source, t.target) for t in record.transitions[1:]} <= drawn


# ------------------------------------------------------------------ the four-step loop, three vendors
def test_three_vendors_one_contract_and_every_call_answered(tree):
    read_file = tk.make_read_file(tree.ws)
    host = tk.Host.of([read_file], tk.Caller("assistant"))
    for vendor in v.VENDORS:
        tool = v.tools_for(vendor, [read_file.contract])[0]
        assert read_file.contract.schema in (tool.get("function", {}).get("parameters"), tool.get("input_schema"),
                                             tool.get("inputSchema"))
    ids = IdMap()
    openai_calls = v.openai_calls(fixture("openai_response.json"), ids)
    anthropic_calls = v.anthropic_calls(fixture("anthropic_response.json"), ids)
    mcp_calls = [v.mcp_call(fixture("mcp_tools_call_request.json"), ids),
                 v.mcp_call({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                             "params": {"name": "read_file", "arguments": {"path": "/etc/passwd"}}}, ids)]
    openai_results, anthropic_results = host.run_round(openai_calls), host.run_round(anthropic_calls)
    mcp_results = host.run_round(mcp_calls)
    for results in (openai_results, anthropic_results):
        assert [r.status.value for r in results] == ["succeeded", "succeeded", "rejected"]
        assert results[2].reason == "unknown_tool"          # write_file is not declared by this host
    assert [r.reason for r in mcp_results] == ["", "path_refused"]

    openai_back = v.openai_tool_messages(openai_results, ids)
    history = [fixture("openai_response.json")["choices"][0]["message"], *openai_back]
    assert v.check_conversation(history, "openai") == []
    assert [m["tool_call_id"] for m in openai_back] == [c["id"] for c in history[0]["tool_calls"]]
    anthropic_back = v.anthropic_tool_results(anthropic_results, ids)
    anthropic_history = [fixture("anthropic_response.json"), anthropic_back]
    assert v.check_conversation(anthropic_history, "anthropic") == []
    assert [b["is_error"] for b in anthropic_back["content"]] == [False, False, True]
    mcp_back = [v.mcp_response(r, ids) for r in mcp_results]
    assert [a["id"] for a in mcp_back] == [7, 8] and [a["result"]["isError"] for a in mcp_back] == [False, True]

    without_refusal = history[:-1]                          # skip step 4 for the refused call
    [problem] = v.check_conversation(without_refusal, "openai")
    assert problem.code == "missing_result"


def test_a_trusting_host_oversteps_and_a_prefix_guard_is_fooled(tree):
    with recording_opens() as events:
        leaked = (tree.ws / "../outside/secret.txt").read_text()
    assert leaked.startswith("SECRET-OUTSIDE") and files_opened(events) == ["secret.txt"]
    sibling = str(tree.ws) + "_evil/secret.txt"
    assert os.path.abspath(sibling).startswith(str(tree.ws))   # the character-prefix check says "inside"
    with pytest.raises(tk.PathRefused):
        tk.Workspace(tree.ws).check(sibling)


# ------------------------------------------------------------------ the notebook and the exercise
def _outputs(path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(path, as_version=4)
    return [(c.source, "".join(o.get("text", "") for o in c.outputs)) for c in nb.cells if c.cell_type == "code"]


@pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook not built yet")
def test_notebook_prints_what_the_toolkit_computes(tree):
    cells = _outputs(NOTEBOOK)
    text = "\n".join(out for _, out in cells)
    assert f"{len(CONFIG)} bytes, sha256 {hashlib.sha256(CONFIG).hexdigest()}" in text
    assert td.text() in text
    assert "schema errors for {'path': '/etc/passwd'}: []" in text
    sources = [src for src, _ in cells]
    widget = next(i for i, src in enumerate(sources)
                  if src.strip().splitlines()[-1].split("#")[0].strip() == "panel")
    assert "print(panel.text())" not in "\n".join(sources), "the panel shows its own text"
    requests = next(out for src, out in cells[widget + 1:]
                    if "attempt(tree, label, layers).text()" in src)
    settings = (("symlink out", {"schema", "business"}), ("missing path", {"path", "business"}),
                ("cut JSON chunk", {"schema", "path", "business"}))
    assert requests.strip() == "\n\n".join(attempt(tree, *setting).text() for setting in settings)
    for label in ("missing path", "outside path", "valid path"):
        assert attempt(tree, label).status_line in text


def _run_solution_with(overrides: dict[str, str]) -> AssertionError | None:
    """Run the solution's cells in order, replacing the named function definitions; return the first failure."""
    nb = nbformat.read(SOLUTION, as_version=4)
    namespace: dict = {"__name__": "__exercise__"}
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            exec(compile(cell.source, "<cell>", "exec"), namespace)
            for name, source in overrides.items():
                if f"def {name}(" in cell.source:
                    exec(source, namespace)
    except AssertionError as failure:
        return failure
    finally:
        if "tree" in namespace:
            namespace["tree"].close()
    return None


@pytest.mark.skipif(not SOLUTION.exists(), reason="solution not built yet")
def test_the_solution_passes_its_own_checks():
    assert _run_solution_with({}) is None


NAIVE_EXECUTOR = '''
def execute_read_file(call):
    """Refuses absolute paths, then trusts the rest: no look at "..", links or real locations."""
    problems = shape_errors(call.arguments)
    if problems:
        return tk.ToolResult(call.call_id, tk.Status.REJECTED, failure_class=tk.FailureClass.SCHEMA,
                             reason=problems[0].code, errors=tuple(problems))
    path = call.arguments["path"]
    if GUARD(path):
        error = tk.ToolError("path_refused", "$.path", "outside the workspace")
        return tk.ToolResult(call.call_id, tk.Status.REJECTED, failure_class=tk.FailureClass.AUTHORIZATION,
                             reason="path_refused", errors=(error,))
    try:
        data = (tree.ws / path).read_bytes()
    except OSError:
        error = tk.ToolError("precondition_failed", "$.path", "no such file")
        return tk.ToolResult(call.call_id, tk.Status.REJECTED, failure_class=tk.FailureClass.PRECONDITION,
                             reason="precondition_failed", errors=(error,))
    return tk.ToolResult(call.call_id, tk.Status.SUCCEEDED, output={"path": path, "content": data.decode()},
                         evidence={"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
'''
#: An executor that refuses only absolute paths (so no test ever opens a real system file).
ABSOLUTE_ONLY = NAIVE_EXECUTOR.replace("GUARD(path)", 'path.startswith("/")')
#: An executor with the classic character-prefix guard.
PREFIX_GUARD = NAIVE_EXECUTOR.replace(
    "GUARD(path)", "not __import__('os').path.abspath(__import__('os').path.join(tree.ws, path))"
                   ".startswith(str(tree.ws))")

EAGER_STREAM = '''
def run_stream(fragments, stop_reason, execute):
    """Runs whatever text arrived, completion signal or not."""
    import json
    try:
        arguments = json.loads("".join(fragments))
    except ValueError:
        arguments = {"path": "".join(fragments)}
    return [execute(tk.request("read_file", arguments, call_id="call_1"))]
'''


@pytest.mark.skipif(not SOLUTION.exists(), reason="solution not built yet")
@pytest.mark.parametrize("overrides, explained", [
    ({"execute_read_file": ABSOLUTE_ONLY}, "check where a path REALLY leads"),
    ({"execute_read_file": PREFIX_GUARD}, "compare whole path components"),
    ({"run_stream": EAGER_STREAM}, "reached the executor"),
])
def test_check_cells_explain_why_a_wrong_answer_is_wrong(overrides, explained):
    failure = _run_solution_with(overrides)
    assert failure is not None, "the checks accepted a wrong answer"
    assert explained in str(failure), str(failure)
    assert tempfile.gettempdir() + "/" not in str(failure), "a check message showed an absolute path"


@pytest.mark.skipif(not SOLUTION.exists(), reason="solution not built yet")
def test_the_exercise_states_the_stream_id_mapping_its_check_relies_on():
    """The instructions announce call_s1 and say results come back as call_1; the assembler does exactly that."""
    nb = nbformat.read(SOLUTION, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert 'call_id="call_s1"' in text and 'assembler.ids.external("call_1", "stream")' in text
    assert 'out[0].call_id == "call_1"' in text
    stream = Assembler()
    stream.add(0, call_id="call_s1", name="read_file", arguments='{"path": "src/co')
    [refusal] = stream.finish(None)
    assert refusal.result.call_id == "call_1" and stream.ids.external("call_1", "stream") == "call_s1"


# ------------------------------------------------------------------ re-running a cell prints the same
def _run_cells(path: Path, upto: int) -> tuple[dict, list[tuple[str, str]]]:
    """Execute a notebook's first ``upto`` cells in one namespace (its folder as working directory)."""
    namespace: dict = {"__name__": "__notebook__"}
    printed = []
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        for cell in nbformat.read(path, as_version=4).cells[:upto]:
            if cell.cell_type == "code":
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(cell.source, "<cell>", "exec"), namespace)
                printed.append((cell.source, out.getvalue()))
    finally:
        os.chdir(cwd)
    return namespace, printed


@pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook not built yet")
def test_cells_that_print_log_counts_print_the_same_when_run_again():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    counting = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "len(host.log)" in c.source]
    assert len(counting) == 2, "the talk-only demo and the function-calling demo both print the host's log size"
    namespace, first = _run_cells(NOTEBOOK, counting[-1] + 1)
    try:
        again = []
        for index in counting + counting:               # run both cells twice more, in order
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(nb.cells[index].source, "<cell>", "exec"), namespace)
            again.append(out.getvalue())
        stored = {src: text for src, text in first}
        for index, text in zip(counting + counting, again):
            assert text == stored[nb.cells[index].source], f"cell {index} printed something else on a re-run"
        assert "host log:            0 attempts" in again[0] and "host log:     1 attempt," in again[1]
    finally:
        namespace["tree"].close()


@pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook not built yet")
def test_mcp_and_json_rpc_are_explained_where_they_first_appear():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    prose = [" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown"]
    first_mcp = next(text for text in prose if "MCP" in text)
    assert "Model Context Protocol" in first_mcp and "JSON-RPC (a" in first_mcp
    assert not any("JSON-RPC" in text for text in prose[:prose.index(first_mcp)])


# ------------------------------------------------------------------ the start-here notebook
def _h1(path: Path) -> str:
    first = nbformat.read(path, as_version=4).cells[0].source
    return next(line[2:].strip() for line in first.splitlines() if line.startswith("# "))


@pytest.mark.skipif(not START.exists(), reason="notebook not built yet")
def test_the_chapter_map_uses_each_notebooks_own_title():
    rows = re.findall(r"^\| (\d\d) \| \[(.+?)\]\((\S+?\.ipynb)\) \|", "\n".join(
        c.source for c in nbformat.read(START, as_version=4).cells if c.cell_type == "markdown"), re.MULTILINE)
    chapters = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb") if p != START)
    assert [file for _, _, file in rows] == [p.name for p in chapters], "every chapter listed once, in order"
    for number, title, file in rows:
        assert file.startswith(number)
        h1 = _h1(ROOT / "notebooks" / file)
        assert h1 in (f"{number} · {title}", f"Chapter {int(number)} — {title}") or h1.endswith(f"— {title}"), \
            f"chapter map says {title!r}, the notebook's title is {h1!r}"


@pytest.mark.skipif(not START.exists(), reason="notebook not built yet")
def test_the_environment_check_compares_with_pyprojects_minimums():
    from course.worlds import course_minimums, release_of, version_report

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    namespace, printed = _run_cells(START, 2)
    text = printed[0][1]
    assert text.startswith("minimum versions read from pyproject.toml")
    python_min, packages, _ = course_minimums(ROOT / "notebooks")
    assert python_min == project["requires-python"].removeprefix(">=")
    assert [f"{n}>={v}" for n, v in packages.items()] == project["dependencies"]
    for name, minimum in packages.items():
        assert re.search(rf"^{name} +>= {re.escape(minimum)} +ok$", text, re.MULTILINE), name
    assert release_of("4.2") == (4, 2) and release_of("2.14.0rc1") == (2, 14, 0) and release_of("10.0") > release_of("9.9")
    assert text.splitlines() == version_report(ROOT / "notebooks")
    stored = nbformat.read(START, as_version=4).cells[1].outputs[0].text
    assert stored == text


def test_the_environment_check_says_what_to_do_when_a_package_is_missing_or_old(tmp_path):
    from course.worlds import version_report

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "toolcontract-course"\nrequires-python = ">=3.11"\n'
        'dependencies = ["no-such-package-anywhere>=1.0", "pydantic>=999.0"]\n', encoding="utf-8")
    lines = version_report(tmp_path)
    assert lines[0] == "minimum versions read from pyproject.toml" and lines[1].endswith(" ok")
    assert "MISSING: run  python -m pip install -e .  in the course folder" in lines[2]
    assert "TOO OLD:" in lines[3] and "upgrade it" in lines[3]


@pytest.mark.skipif(not START.exists(), reason="notebook not built yet")
def test_the_reading_path_names_real_modules_and_its_sizes_are_measured():
    nb = nbformat.read(START, as_version=4)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    package = ROOT / "toolkit"
    assert "toolkit/READING.md" in prose and (package / "READING.md").is_file()
    kernel = sorted(p for p in (package / "kernel").glob("*.py") if p.name != "__init__.py")
    for path in kernel:                      # every kernel file is on the page, by its path or its name
        assert f"toolkit/kernel/{path.name}" in prose or f"`{path.name}`" in prose, path.name
    assert "small on purpose" not in prose and "afternoon" not in prose

    def lines_in(files):
        return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"kernel/   {len(kernel):>2} files, the rules       {lines_in(kernel):>6,} lines" in printed
    for folder in ("effects", "wire", "files", "live", "mcp", "worlds", "present"):
        home = ROOT / "course" if folder in ("worlds", "present") else package
        modules = [m for m in (home / folder).glob("*.py") if m.name != "__init__.py"]
        assert f"{folder + '/':<9} {len(modules):>2} modules" in printed
        assert f"about {round(lines_in(modules), -2):>6,} lines" in printed


# ------------------------------------------------------------------ who allocates ids; the four consequences
def test_when_the_model_sends_no_ids_the_host_allocates_them_and_answers_under_them(tree):
    import copy
    anonymous = copy.deepcopy(fixture("openai_response.json"))
    for tool_call in anonymous["choices"][0]["message"]["tool_calls"]:
        del tool_call["id"]
    ids = IdMap()
    minted = v.openai_calls(anonymous, ids)
    answered = v.openai_tool_messages(tk.Host.of([tk.make_read_file(tree.ws)]).run_round(minted), ids)
    assert [c.call_id for c in minted] == ["call_1", "call_2", "call_3"]
    assert [m["tool_call_id"] for m in answered] == ["call_1", "call_2", "call_3"]
    assert [row["vendor_id"] for row in ids.rows()] == [None, None, None] and all(ids.knows(c.call_id) for c in minted)
    text = "\n".join(out for _, out in _outputs(NOTEBOOK))
    assert "ids the model sent: [None, None, None]" in text
    assert ("ids the host gave:  ['call_1', 'call_2', 'call_3'] answered as ['call_1', 'call_2', 'call_3']"
            in text)
    prose = " ".join(" ".join(c.source.split()) for c in nbformat.read(NOTEBOOK, as_version=4).cells
                     if c.cell_type == "markdown")
    assert "the *host* allocates the id and keeps the mapping" in prose


def test_the_four_consequences_are_read_off_the_contracts(tree):
    from course.worlds import CREATE_INVOICE
    host = tk.Host.of([tk.make_read_file(tree.ws)], tk.Caller("assistant"))
    assert host.check(tk.request("read_file", {"path": "/etc/passwd"}, call_id="call_p")).legal == 0
    text = "\n".join(out for _, out in _outputs(NOTEBOOK))
    assert "-> the check still says legal = 0" in text
    for contract in (tk.make_read_file(tree.ws).contract, CREATE_INVOICE):
        line = (f"   {contract.name}: 2. risk {contract.risk:g} ({contract.risk_category})   3. cost "
                f"{contract.cost:g}   4. undoable: {contract.reversible}, evidence: {' and '.join(contract.evidence)}")
        assert line in text, contract.name
    assert not CREATE_INVOICE.reversible and CREATE_INVOICE.evidence, "what cannot be undone names its evidence"
    prose = " ".join(" ".join(c.source.split()) for c in nbformat.read(NOTEBOOK, as_version=4).cells
                     if c.cell_type == "markdown")
    for consequence in ("an illegal call stops at the check", "a risky tool carries its risk in writing",
                        "a costly one shows its cost to the policy", "names the evidence"):
        assert consequence in prose, consequence


@pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook not built yet")
def test_the_notebook_prints_the_kernels_execute_where_it_teaches_validate_then_execute():
    import inspect

    nb = nbformat.read(NOTEBOOK, as_version=4)
    step = next(i for i, c in enumerate(nb.cells)
                if "**③ Validate, then execute or reject.**" in c.source)
    assert "`Host.execute`" in nb.cells[step].source
    shown = next(c for c in nb.cells[step:]
                 if c.cell_type == "code" and "getsource(tk.Host.execute)" in c.source)
    assert nb.cells.index(shown) <= step + 2, "right after the round it explains"
    out = "".join(o.get("text", "") for o in shown.outputs)
    assert out.startswith(inspect.getsource(tk.Host.execute))
    assert "verdict = self.check(call)" in out and "rejection(verdict) if not verdict.legal" in out
    assert out.endswith("call_8: legal = 0, so execute refused: rejected; "
                        "same reason as the check: True\n")
