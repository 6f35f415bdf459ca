"""Exercises are generated from solutions, never edited by hand, and their checks really check.

* the generator turns a solution region into a stub and clears outputs (tested on a tiny notebook);
* the committed exercises are exactly what the generator makes from today's solutions (no drift);
* every solution runs clean, and every check cell (tag ``check``) fails on the generated stub,
  so a check cell cannot pass without the student's code;
* the generator gives what nbgrader's own ``ClearSolutions`` and ``ClearOutput`` give, on every solution, and
  the solutions carry the metadata ``nbgrader generate_assignment`` needs (solution cells, graded check cells);
* checks that teach: each common mistake a check's hint names, written into the solution, stops in that check
  with exactly that hint (a ``CheckFailed``, never a raw exception), and a second correct style
  passes;
* the exercises as shipped speak only in check messages: run untouched, every check cell ends in one
  line that says its part is not done yet, and no cell shows a traceback; the given helpers take a
  student's plausible wrong input without raising.
"""
from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"_script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make = _script("make_exercises")
runner = _script("run_notebooks")


# ------------------------------------------------------------------ the generator itself
SOLVED = '''\
def legal(schema_ok, auth_ok, pre):
    """1 when all three tests pass."""
    # multiply the three bits
    ### BEGIN SOLUTION
    bits = [int(bool(t)) for t in (schema_ok, auth_ok, pre)]
    return bits[0] * bits[1] * bits[2]
    ### END SOLUTION

answer = 0
### BEGIN SOLUTION
answer = legal(1, 1, 1)
### END SOLUTION'''

STUBBED = '''\
def legal(schema_ok, auth_ok, pre):
    """1 when all three tests pass."""
    # multiply the three bits
    # YOUR CODE HERE
    raise NotImplementedError()

answer = 0
# YOUR CODE HERE
raise NotImplementedError()'''

CHECK = ('assert legal(1, 1, 1) == 1, "(1,1,1): every test passed, so the call is legal"\n'
         'assert legal(0, 1, 1) == 0, "(0,1,1): a malformed call is never legal"\n'
         'assert answer == 1, "answer should be the indicator for (1,1,1)"')


SOLUTION_CELL = {"grade": False, "grade_id": "tiny_answer", "locked": False, "schema_version": 3, "solution": True,
                 "task": False}
CHECK_CELL = {"grade": True, "grade_id": "tiny_check", "locked": True, "points": 1, "schema_version": 3,
              "solution": False, "task": False}


def tiny_solution():
    solved = new_code_cell(SOLVED, execution_count=1, metadata={"nbgrader": dict(SOLUTION_CELL)})
    check = new_code_cell(CHECK, execution_count=2, metadata={"tags": ["check"], "nbgrader": dict(CHECK_CELL)},
                          outputs=[new_output("stream", name="stdout", text="ok\n")])
    nb = new_notebook(cells=[new_markdown_cell("# Tiny exercise"), solved, check])
    nb.metadata["kernelspec"] = dict(runner.KERNELSPEC)
    return nb


def test_regions_become_stubs_at_their_indentation():
    assert make.stub_source(SOLVED) == STUBBED


def test_exercise_clears_outputs_keeps_tags_and_ids():
    solution = tiny_solution()
    exercise = make.make_exercise(solution, "tiny.ipynb")
    nbformat.validate(exercise)
    assert [c.cell_type for c in exercise.cells] == ["markdown", "code", "code"]
    assert [c.id for c in exercise.cells] == [c.id for c in solution.cells]
    assert exercise.cells[1].source == STUBBED
    assert exercise.cells[2].source == CHECK
    assert exercise.cells[2].metadata["tags"] == ["check"]
    for cell in exercise.cells[1:]:
        assert cell.outputs == [] and cell.execution_count is None
    assert solution.cells[2].outputs and solution.cells[1].source == SOLVED, "the solution must not be changed"


def test_generation_is_deterministic():
    first = make.text_of(make.make_exercise(tiny_solution()))
    second = make.make_exercise(nbformat.reads(first, as_version=4))
    assert make.text_of(second) == first


@pytest.mark.parametrize("source, problem", [
    ("### BEGIN SOLUTION\nx = 1", "never closed"),
    ("x = 1\n### END SOLUTION", "without a ### BEGIN SOLUTION"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside an open solution region"),
    ("### BEGIN SOLUTION a hint\nx = 1\n### END SOLUTION", "put the hint on a comment line above it"),
])
def test_unbalanced_markers_are_refused(source, problem):
    with pytest.raises(make.ExerciseError, match=problem):
        make.stub_source(source)


def test_cells_without_nbgrader_metadata_are_refused():
    """What stops ``nbgrader generate_assignment``, stopped here first, with the cell named."""
    nb = tiny_solution()
    del nb.cells[1].metadata["nbgrader"]
    with pytest.raises(make.ExerciseError, match="not marked nbgrader solution"):
        make.make_exercise(nb, "tiny.ipynb")
    nb = tiny_solution()
    del nb.cells[2].metadata["nbgrader"]["points"]
    with pytest.raises(make.ExerciseError, match="must be an nbgrader test"):
        make.make_exercise(nb, "tiny.ipynb")


def test_markers_outside_code_cells_are_refused():
    nb = new_notebook(cells=[new_markdown_cell("### BEGIN SOLUTION\nthe answer\n### END SOLUTION")])
    with pytest.raises(make.ExerciseError, match="only allowed in code cells"):
        make.make_exercise(nb)


def test_check_mode_names_drifted_missing_and_stale_files(tmp_path):
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    for name in ("01_a.ipynb", "02_b.ipynb"):
        nbformat.write(tiny_solution(), solutions / name)
    assert make.main(["--solutions", str(solutions), "--exercises", str(exercises)]) == 0
    assert make.main(["--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 0
    edited = nbformat.read(exercises / "01_a.ipynb", as_version=4)
    edited.cells[1].source = "answer = 1  # edited by hand"
    nbformat.write(edited, exercises / "01_a.ipynb")
    (exercises / "02_b.ipynb").unlink()
    nbformat.write(tiny_solution(), exercises / "03_gone.ipynb")
    assert make.drift(solutions, exercises) == [
        "01_a.ipynb: differs from its solution",
        "02_b.ipynb: missing",
        "03_gone.ipynb: no solution of that name (stale exercise)",
    ]
    assert make.main(["--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 1


def test_tiny_check_passes_on_solution_and_fails_on_stub(tmp_path):
    solution = runner.execute(tiny_solution(), tmp_path)
    assert errors_by_cell(solution) == [False, False]
    exercise = runner.execute(make.make_exercise(tiny_solution()), tmp_path, allow_errors=True)
    assert errors_by_cell(exercise) == [True, True]
    assert unguarded_checks(exercise) == []


# ------------------------------------------------------------------ the committed exercises
def errors_by_cell(nb) -> list[bool]:
    """For each code cell: did it end in an error?"""
    return [any(o.output_type == "error" for o in c.outputs) for c in nb.cells if c.cell_type == "code"]


def unguarded_checks(nb) -> list[int]:
    """Indices of check cells that a stubbed exercise gets through: no error in the check cell
    itself nor in any code cell since the previous check cell."""
    unguarded, failed_since_last_check = [], False
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        failed_since_last_check |= any(o.output_type == "error" for o in cell.outputs)
        if "check" in cell.metadata.get("tags", []):
            if not failed_since_last_check:
                unguarded.append(index)
            failed_since_last_check = False
    return unguarded


def test_committed_exercises_match_their_solutions():
    exercises = sorted((ROOT / "exercises").glob("*.ipynb"))
    if not SOLUTIONS and not exercises:
        pytest.skip("no solutions/*.ipynb yet, so there is no exercise to compare")
    problems = make.drift(ROOT / "solutions", ROOT / "exercises")
    assert problems == [], "exercises drifted; run `python scripts/make_exercises.py`: " + "; ".join(problems)


@pytest.mark.skipif(not SOLUTIONS, reason="no solutions/*.ipynb yet")
@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_checks_pass_with_solution_and_fail_with_stub(path):
    from nbclient.exceptions import CellExecutionError

    solution = nbformat.read(path, as_version=4)
    checks = [i for i, c in enumerate(solution.cells) if "check" in c.metadata.get("tags", [])]
    assert checks, f"{path.name} has no cell tagged 'check'"
    assert any(c.cell_type == "code" and make.has_region(c.source) for c in solution.cells), \
        f"{path.name} has no ### BEGIN SOLUTION region, so its exercise would equal the solution"
    exercise = make.make_exercise(solution, path.name)
    try:
        runner.execute(solution, path.parent)
    except CellExecutionError as exc:
        pytest.fail(f"{path.name}: the solution itself fails:\n{exc}")
    folder = ROOT / "exercises" if (ROOT / "exercises").is_dir() else path.parent
    exercise = runner.execute(exercise, folder, allow_errors=True)
    assert any(errors_by_cell(exercise)), f"{path.name}: the unsolved exercise runs without any error"
    assert unguarded_checks(exercise) == [], (
        f"{path.name}: these check cells pass although the student wrote nothing "
        f"(cell indices): {unguarded_checks(exercise)}")


# ------------------------------------------------------------------ nbgrader
def nbgrader_exercise(solution):
    """What nbgrader's ClearSolutions then ClearOutput make of ``solution`` (a copy)."""
    nbgrader = pytest.importorskip("nbgrader.preprocessors")
    nb, resources = copy.deepcopy(solution), {}
    for preprocessor in (nbgrader.ClearSolutions(), nbgrader.ClearOutput()):
        nb, resources = preprocessor.preprocess(nb, resources)
    return nb


def comparable(nb) -> list[tuple]:
    return [(c.cell_type, c.source, c.get("outputs", []), c.get("execution_count")) for c in nb.cells]


def test_the_generator_agrees_with_nbgrader_on_the_tiny_notebook():
    assert comparable(make.make_exercise(tiny_solution())) == comparable(nbgrader_exercise(tiny_solution()))


@pytest.mark.skipif(not SOLUTIONS, reason="no solutions/*.ipynb yet")
@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_the_generator_agrees_with_nbgrader(path):
    solution = nbformat.read(path, as_version=4)
    ours = make.make_exercise(solution, path.name)
    assert comparable(ours) == comparable(nbgrader_exercise(solution)), (
        f"{path.name}: scripts/make_exercises.py and nbgrader's ClearSolutions disagree")


@pytest.mark.skipif(not SOLUTIONS, reason="no solutions/*.ipynb yet")
@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_solutions_carry_nbgrader_metadata(path):
    """Solution cells are nbgrader solution cells; check cells are graded, locked tests with points; ids unique."""
    nb = nbformat.read(path, as_version=4)
    ids, points = [], 0
    for index, cell in enumerate(nb.cells):
        grader = cell.metadata.get("nbgrader")
        if cell.cell_type == "code" and make.has_region(cell.source):
            assert grader and grader["solution"] and not grader["grade"], f"{path.name}, cell {index}: not a solution"
        elif "check" in cell.metadata.get("tags", []):
            assert grader and grader["grade"] and grader["locked"] and not grader["solution"], (
                f"{path.name}, cell {index}: a check cell must be a graded, locked nbgrader test")
            assert grader["points"] > 0
            points += grader["points"]
        else:
            assert grader is None, f"{path.name}, cell {index}: a plain cell carries nbgrader metadata"
            continue
        assert grader["schema_version"] == 3 and grader["grade_id"]
        ids.append(grader["grade_id"])
    assert points > 0 and len(ids) == len(set(ids)), f"{path.name}: grade ids must be unique: {ids}"


# ------------------------------------------------------------------ checks that teach
# Each row: (exercise, mistake, old, new, hint). ``old`` is a piece of the worked solution that occurs exactly
# once; ``new`` is what a student who makes that mistake writes instead. Run so, the notebook must stop in a
# check with an AssertionError whose message holds ``hint``: the words the check has for that mistake.
EX01_OPEN_AND_CATCH = '''try:
        import os
        base = os.path.realpath(tree.ws)
        real = os.path.realpath(os.path.join(base, call.arguments["path"]))
        if os.path.commonpath([base, real]) != base:
            refused = tk.ToolError("path_refused", "$.path", "the path leads outside the workspace",
                                   received=call.arguments["path"])
            return rejected(tk.FailureClass.AUTHORIZATION, [refused], call.call_id)
        with open(real, "rb") as handle:
            return succeeded(call, handle.read())
    except OSError as exc:
        missing = tk.ToolError("precondition_failed", "$.path", f"no readable file there ({exc.strerror})")
        return rejected(tk.FailureClass.PRECONDITION, [missing], call.call_id)
    ### END SOLUTION'''
EX01_LADDER = '''try:
        return succeeded(call, WS.read(call.arguments["path"]).data)   # rungs 1-3, then the bytes
    except tk.PathRefused as refusal:
        return rejected(refusal.failure_class, [refusal.error], call.call_id)
    ### END SOLUTION'''
EX01_TEXT_ONLY = '''try:
        path = call.arguments["path"]
        if path.startswith("/") or ".." in path:
            refused = tk.ToolError("path_refused", "$.path", "the path leads outside the workspace", received=path)
            return rejected(tk.FailureClass.AUTHORIZATION, [refused], call.call_id)
        return succeeded(call, (tree.ws / path).read_bytes())
    except OSError:
        missing = tk.ToolError("precondition_failed", "$.path", "no readable file there")
        return rejected(tk.FailureClass.PRECONDITION, [missing], call.call_id)
    ### END SOLUTION'''
EX01_LEXICAL = '''try:
        import os
        path = call.arguments["path"]
        base = os.path.abspath(tree.ws)
        full = os.path.abspath(os.path.join(base, path))
        if os.path.commonpath([base, full]) != base or os.path.islink(full):
            refused = tk.ToolError("path_refused", "$.path", "outside the workspace", received=path)
            return rejected(tk.FailureClass.AUTHORIZATION, [refused], call.call_id)
        with open(full, "rb") as handle:
            return succeeded(call, handle.read())
    except OSError:
        missing = tk.ToolError("precondition_failed", "$.path", "no readable file there")
        return rejected(tk.FailureClass.PRECONDITION, [missing], call.call_id)
    ### END SOLUTION'''
EX01_STREAM = ("    return [execute(i) if isinstance(i, tk.ToolCall) else i.result\n"
               "            for i in assembler.finish(stop_reason)]")
EX05_CANONICAL = ('text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), '
                  'ensure_ascii=False)')
EX05_COMPARE = 'found["fingerprint"] != fingerprint_of(arguments)'
EX02_RULE = 'lambda args, world: args["to"] in world'
EX08_GATE = '        if not self.finished or self.stop_reason not in ("tool_calls", "stop"):\n'
EX05_OUTSIDE = '''    found = find(conn, arguments["idempotency_key"])
    if found:
        if found["fingerprint"] != fingerprint_of(arguments):
            return {"error": "idempotency_conflict"}
        return found["invoice"]
    with transaction(conn):
        invoice = effect(conn, arguments)
        record(conn, arguments, invoice)
    return invoice
    ### END SOLUTION'''
EX05_LOOKUP = '''        found = find(conn, arguments["idempotency_key"])
        if found:
            if found["fingerprint"] != fingerprint_of(arguments):
                return {"error": "idempotency_conflict"}
            return found["invoice"]
'''
EX05_ATOMIC = '''    with transaction(conn):
''' + EX05_LOOKUP + '''        invoice = effect(conn, arguments)
        record(conn, arguments, invoice)
    return invoice
    ### END SOLUTION'''

MISTAKES = [
    ("01_read_file_hands_on", "a refusal under another id",
     "return rejected(tk.FailureClass.SCHEMA, problems, call.call_id)",
     'return rejected(tk.FailureClass.SCHEMA, problems, "call_0")',
     "A result must carry its call's id"),
    ("01_read_file_hands_on", "a peek at the file before the path check",
     "        return succeeded(call, WS.read(",
     "        try:\n            open(tree.ws / call.arguments['path'], 'rb').close()\n        except OSError:\n"
     "            pass\n        return succeeded(call, WS.read(",
     "the path check must refuse BEFORE anything is opened"),
    ("01_read_file_hands_on", "a path judged as text only (links followed)", EX01_LADDER, EX01_TEXT_ONLY,
     "a link whose target lies outside the workspace"),
    ("01_read_file_hands_on", "lexical containment, a link refused only as the last part",
     EX01_LADDER, EX01_LEXICAL, "any part of a path can be a link"),
    ("01_read_file_hands_on", "only 'tool_calls' completes a stream",
     "for i in assembler.finish(stop_reason)]",
     'for i in assembler.finish(stop_reason if stop_reason == "tool_calls" else None)]',
     "a stream that stopped with 'stop' is complete too"),
    ("01_read_file_hands_on", "a Preview is treated as a call",
     "    if not isinstance(call, tk.ToolCall):", "    if call is None:",
     "a preview shows progress, it is not a request"),
    ("01_read_file_hands_on", "its own parse of the fragments, under the stream's id",
     EX01_STREAM,
     '    import json\n    try:\n        arguments = json.loads("".join(fragments))\n    except ValueError:\n'
     '        return [tk.ToolResult("call_s1", tk.Status.REJECTED, failure_class=tk.FailureClass.SCHEMA,\n'
     '                              reason="stream_incomplete")]\n'
     '    return [execute(tk.ToolCall("read_file", arguments, "call_s1"))]\n' + EX01_STREAM,
     "the JSON looks whole, but no completion signal came"),
    ("01_read_file_hands_on", "the stream's stop reason is ignored",
     "for i in assembler.finish(stop_reason)]", 'for i in assembler.finish("tool_calls")]',
     "the JSON looks whole, but no completion signal came"),
    ("02_send_email_contract", "extra fields allowed",
     ',\n              "additionalProperties": False}', "}",
     "extra fields must be refused"),
    ("02_send_email_contract", "a message called safe to retry with a key",
     "retry = tk.Retry.UNSAFE", "retry = tk.Retry.SAFE_WITH_KEY", "a retry of send_email sends a second message"),
    ("02_send_email_contract", "the predicate's arguments swapped",
     "lambda args, world: args[\"to\"] in world", "lambda world, args: args[\"to\"] in world",
     "it is called as predicate(args, world)"),
    ("02_send_email_contract", "a recipient judged by how its address ends",
     EX02_RULE, 'lambda args, world: args["to"].endswith("example.org")',
     "merely ENDS like an allowed domain"),
    ("02_send_email_contract", "a recipient judged by a piece of its text",
     EX02_RULE, 'lambda args, world: args["to"].split("@")[0] in ("ops", "billing")',
     "merely STARTS like an allowed one"),
    ("02_send_email_contract", "a list of its own instead of the world",
     EX02_RULE, 'lambda args, world: args["to"] in ALLOWED_RECIPIENTS',
     "ask the world it is given"),
    ("02_send_email_contract", "one allowed address hard-coded",
     EX02_RULE, 'lambda args, world: args["to"] == "ops@example.org"',
     "billing@example.org too"),
    ("02_send_email_contract", "two things changed in one attempt",
     'schema_blocked = (tk.request("send_email", {**message, "bcc": "everyone@example.org"}), sender)',
     'schema_blocked = (tk.request("send_email", {**message, "bcc": "everyone@example.org"}), tk.Caller("intern"))',
     "Change one thing at a time"),
    ("03_inspect_exports", "a module imported to read its exports",
     "    exports = read_exports(root, module)\n    if isinstance(exports, tk.ToolError):",
     "    import sys\n    try:\n        sys.path.insert(0, str(root))\n        __import__(module)\n"
     "    except Exception:\n"
     "        pass\n    finally:\n        sys.path.remove(str(root))\n"
     "    exports = read_exports(root, module)\n    if isinstance(exports, tk.ToolError):",
     "never import them to find out what they export"),
    ("03_inspect_exports", "an unreadable module passed over", "        return exports.line()", "        return None",
     "a module that is not in the workspace"),
    ("03_inspect_exports", "the last unexported name looked up, not the first",
     'next((e for e in errors if e.code == "symbol_not_exported"), None)',
     'next((e for e in reversed(errors) if e.code == "symbol_not_exported"), None)',
     "two names wrong: the first one is looked up"),
    ("03_inspect_exports", "exports inspected although no name was wrong",
     '        return "propose_again", None', '        return "inspect_exports", None', "only the fields are wrong"),
    ("04_choosing_calls", "an illegal option picked", "        if option.legal != 1:\n            continue\n", "",
     "the shell shortcut scores 11 but is illegal"),
    ("04_choosing_calls", "a tie goes to the later option", "score > best_score", "score >= best_score",
     "on a tie keep the earlier option"),
    ("04_choosing_calls", "the cost weight ignored", "score = option.value - lam_c * option.cost",
     "score = option.value - option.cost", "at lam_c = 4 cost weighs"),
    ("04_choosing_calls", "the cost weight added, not multiplied",
     "score = option.value - lam_c * option.cost",
     "score = option.value - (lam_c + option.cost)", "11-4*2 = 3 loses to 8-4*1 = 4"),
    ("04_choosing_calls", "the tie point from the worked numbers, not the options given",
     "return ((a.value - a.cost) - (b.value - b.cost)) / (a.risk - b.risk)",
     "return ((read.value - read.cost) - (edit.value - edit.cost)) / (read.risk - edit.risk)",
     "not with the read's and the edit's numbers"),
    ("04_choosing_calls", "the tie point with the sign flipped",
     "return ((a.value", "return -((a.value",
     "not a tie"),
    ("05_atomic_ledger", "no key lookup", EX05_LOOKUP, "", "Look the key up with find(conn, key) first"),
    ("05_atomic_ledger", "the effect and the key in two transactions",
     EX05_ATOMIC,
     EX05_ATOMIC.replace("        record(conn, arguments, invoice)\n",
                         "    with transaction(conn):\n        record(conn, arguments, invoice)\n"),
     "Put effect(...) and record(...) in ONE `with transaction(conn):` block"),
    ("05_atomic_ledger", "the key looked up outside the transaction", EX05_ATOMIC, EX05_OUTSIDE,
     "Do the lookup INSIDE"),
    ("05_atomic_ledger", "a reused key replayed without comparing",
     '            if found["fingerprint"] != fingerprint_of(arguments):\n'
     '                return {"error": "idempotency_conflict"}\n',
     "", "the key came back with"),
    ("05_atomic_ledger", "the arguments compared as text",
     EX05_COMPARE, 'found["fingerprint"] != str(arguments)',
     "Compare fingerprint_of(arguments) with the stored fingerprint"),
    ("05_atomic_ledger", "replay decided by the amount, not the fingerprint",
     EX05_COMPARE, 'found["invoice"]["amount"] != arguments["amount"]',
     "with the stored fingerprint, not one field"),
    ("05_atomic_ledger", "a fingerprint over unsorted keys",
     EX05_CANONICAL, "text = json.dumps(arguments)",
     "gave another fingerprint: key order is"),
    ("05_atomic_ledger", "another spacing compared than the ledger stores", EX05_COMPARE,
     'found["fingerprint"] != '
     'hashlib.sha256(json.dumps(arguments, sort_keys=True).encode()).hexdigest()',
     "other spacing or key order gives other bytes"),
    ("06_backoff_step", "one retry too many", "    if n >= n_max:\n        return \"escalate\"",
     "    if n > n_max:\n        return \"escalate\"", "there is never a fifth retry"),
    ("06_backoff_step", "the delay grown by one step, not multiplied", "beta * d)", "d + 1)",
     "the next state is (3, 4)"),
    ("06_backoff_step", "the state moved at the escalation", '        return "escalate", (n, d)',
     '        return "escalate", (n + 1, beta * d)', "keeps its state"),
    ("06_backoff_step", "any key allowed", "return bool(original_key) and retry_key == original_key",
     "return True", "a new key is a new act"),
    ("06_backoff_step", "a matching key demanded of every effect, reads too",
     "    if retry is tk.Retry.SAFE_WITH_KEY:\n",
     "    if retry_key != original_key:\n        return False\n"
     "    if retry is tk.Retry.SAFE_WITH_KEY:\n", "keys matter to effects"),
    ("06_backoff_step", "a key trusted to make a message safe", "    return retry is tk.Retry.SAFE\n",
     "    return retry is tk.Retry.SAFE or bool(original_key)\n", "not even a key makes it safe"),
    ("07_violation_rate", "rows counted instead of calls",
     "    return len(hit & calls), len(calls)",
     "    hits = sum(1 for e in events if e['kind'] == 'transition' and failure_class in e['failure'].split(','))\n"
     "    return hits, len(calls)", "count calls, not rows"),
    ("07_violation_rate", "the failure field searched as text", 'failure_class in e["failure"].split(",")',
     'failure_class in e["failure"]', "split the field on commas"),
    ("07_violation_rate", "hits counted among calls never requested",
     "    return len(hit & calls), len(calls)",
     "    return len(hit), len(calls)", "c has no request row"),
    ("07_violation_rate", "mark rows counted as failures",
     'hit = {e["call_id"] for e in events if e["kind"] == "transition"\n'
     '           and failure_class',
     'hit = {e["call_id"] for e in events if failure_class', "only transitions carry failures"),
    ("07_violation_rate", "the last retries, not the largest", 'max(e["retries"] for e in moves)',
     'moves[-1]["retries"]', "the LARGEST retries among the transitions"),
    ("07_violation_rate", "mark rows told as part of the story",
     'e["call_id"] == call_id and e["kind"] == "transition"]', 'e["call_id"] == call_id]',
     "a mark row is not a transition"),
    ("07_violation_rate", "no story for an unknown call is an error", "    if not moves:\n        return None\n", "",
     "an unknown call id has no story: return None"),
    ("08_conflicts_and_completion", "two reads of one file called a conflict",
     "(wa & rb) | (ra & wb)", "(wa | ra) & (rb | wb)", "two reads of the SAME file still do not conflict"),
    ("08_conflicts_and_completion", "unknown resources not handled",
     '    if earlier is None or later is None:\n        return "unknown resources"\n', "",
     "a call whose resources are unknown must be ordered, not guessed"),
    ("08_conflicts_and_completion", "calls handed out before the completion event",
     '        if not self.finished or self.stop_reason not in ("tool_calls", "stop"):',
     '        if self.finished and self.stop_reason not in ("tool_calls", "stop"):',
     "a fragment is not a call"),
    ("08_conflicts_and_completion", "a cut stream trusted", '("tool_calls", "stop")',
     '("tool_calls", "stop", "length")', "finish('length') means the model hit its token limit"),
    ("08_conflicts_and_completion", "every buffer parsing taken for completion, whatever the stop",
     EX08_GATE,
     "        if not self.finished or self.parsed()[1]:\n", "not when its JSON parses"),
    ("08_conflicts_and_completion", "only 'tool_calls' completes a stream", EX08_GATE,
     '        if not self.finished or self.stop_reason != "tool_calls":\n',
     "finish('stop') is a completion too"),
    ("09_answering_a_model", "an item without a call id answered",
     "        if item.call_id is None:\n            continue\n", "", "has nothing to answer"),
    ("09_answering_a_model", "only the good calls echoed", "        if item.call_id is None:\n            continue\n",
     "        if isinstance(item, Refusal):\n            continue\n", "echo EVERY item that has a call"),
    ("09_answering_a_model", "results written back under the internal id",
     'answers.append(tool_answer(ids.external(item.call_id, "openai"), result))',
     "answers.append(tool_answer(item.call_id, result))", "orphan result"),
    ("09_answering_a_model", "raw arguments re-encoded",
     "arguments = (item.arguments if isinstance(item.arguments, str)\n"
     "                     else json.dumps(item.arguments))",
     "arguments = json.dumps(item.arguments)", "send the refused call's raw text back unchanged"),
    ("09_answering_a_model", "a refused call handed to the host",
     "result = item.result if isinstance(item, Refusal) else host.execute(item)", "result = host.execute(item)",
     "answer a Refusal with its own"),
]

# Each row: (exercise, style, old, new): another correct answer, written another way; it must pass every check.
STYLES = [
    ("01_read_file_hands_on", "open and catch: resolve the real path, try to open, catch the error",
     EX01_LADDER, EX01_OPEN_AND_CATCH),
    ("02_send_email_contract", "a named predicate, other blocked attempts",
     'lambda args, world: args["to"] in world', 'recipient_allowed',
     ),
    ("03_inspect_exports", "the unreadable module last, the list of unexported errors",
     "    if isinstance(exports, tk.ToolError):\n        return exports.line()\n"
     '    return None if name in exports.names else f"import {module}.{name}: symbol not exported"',
     "    if not isinstance(exports, tk.ToolError):\n        if name not in exports.names:\n"
     '            return f"import {module}.{name}: symbol not exported"\n        return None\n'
     "    return exports.line()"),
    ("03_inspect_exports", "a list of the unexported errors",
     '    error = next((e for e in errors if e.code == "symbol_not_exported"), None)\n    if error is None:\n'
     '        return "propose_again", None',
     '    unexported = [e for e in errors if e.code == "symbol_not_exported"]\n    if not unexported:\n'
     '        return "propose_again", None\n    error = unexported[0]'),
    ("04_choosing_calls", "one condition, the option's own score",
     "        if option.legal != 1:\n            continue\n"
     "        score = option.value - lam_c * option.cost - lam_r * option.risk\n"
     "        if best_score is None or score > best_score:\n            best, best_score = option.name, score\n",
     "        if option.legal == 1 and (best_score is None or option.score(lam_c, lam_r) > best_score):\n"
     "            best, best_score = option.name, option.score(lam_c, lam_r)\n"),
    ("05_atomic_ledger", "its own SELECT, one exit",
     EX05_ATOMIC,
     '''    import json
    with transaction(conn):
        row = conn.execute("SELECT fingerprint, invoice FROM ledger WHERE key = ?",
                           (arguments["idempotency_key"],)).fetchone()
        if row is None:
            invoice = effect(conn, arguments)
            record(conn, arguments, invoice)
        elif row[0] != fingerprint_of(arguments):
            invoice = {"error": "idempotency_conflict"}
        else:
            invoice = json.loads(row[1])
    return invoice
    ### END SOLUTION'''),
    ("05_atomic_ledger", "a canonical text of its own: sorted keys, json's default spacing",
     EX05_CANONICAL,
     "text = json.dumps(arguments, sort_keys=True)"),
    ("05_atomic_ledger", "a canonical text of its own: the sorted items", EX05_CANONICAL,
     "text = repr(sorted(arguments.items()))"),
    ("06_backoff_step", "the step as one conditional expression",
     '    if n >= n_max:\n        return "escalate", (n, d)\n    return "retry", (min(n_max, n + 1), beta * d)',
     '    return ("escalate", (n, d)) if n >= n_max else ("retry", (n + 1, beta * d))'),
    ("06_backoff_step", "a match on the retry semantics",
     "    if retry is tk.Retry.SAFE_WITH_KEY:\n        return bool(original_key) and retry_key == original_key\n"
     "    return retry is tk.Retry.SAFE\n",
     "    match retry:\n        case tk.Retry.SAFE:\n            return True\n"
     "        case tk.Retry.SAFE_WITH_KEY:\n            return original_key is not None and retry_key == original_key\n"
     "    return False\n"),
    ("07_violation_rate", "a dictionary of failure sets",
     '''    calls = {e["call_id"] for e in events if e["kind"] == "transition" and e["source"] is None}''',
     '''    failures = {}
    for e in events:
        if e["kind"] == "transition":
            failures.setdefault(e["call_id"], set()).update(filter(None, e["failure"].split(",")))
    calls = {e["call_id"] for e in events if e["kind"] == "transition" and e["source"] is None}
    return len({c for c in calls if failure_class in failures.get(c, ())}), len(calls)'''),
    ("08_conflicts_and_completion", "set algebra in one expression",
     "    (ra, wa), (rb, wb) = earlier, later",
     "    ww = sorted(set(earlier[1]) & set(later[1]))\n"
     "    rw = sorted((set(earlier[1]) & set(later[0])) | (set(earlier[0]) & set(later[1])))\n"
     "    return f\"write-write {', '.join(ww)}\" if ww else (f\"read-write {', '.join(rw)}\" if rw else \"\")\n"
     "    (ra, wa), (rb, wb) = earlier, later"),
    ("08_conflicts_and_completion", "one test at a time, its own lines",
     '    return (conflict_line("write-write", wa & wb)\n'
     '            or conflict_line("read-write", (wa & rb) | (ra & wb)))',
     "    both_write = wa & wb\n    if both_write:\n        return \"write-write \" + \", \".join(sorted(both_write))\n"
     "    crossed = (wa & rb) | (ra & wb)\n    if crossed:\n        return \"read-write \" + \", \".join(sorted(crossed))\n"
     "    return \"\""),
    ("08_conflicts_and_completion", "the completion test turned round",
     '        if not self.finished or self.stop_reason not in ("tool_calls", "stop"):\n'
     "            return [], [self.incomplete()]\n",
     '        if self.finished and self.stop_reason in ("tool_calls", "stop"):\n'
     "            return self.parsed()\n        return [], [self.incomplete()]\n"),
    ("09_answering_a_model", "two comprehensions over the items with a call id",
     "    echoes, answers = [], []\n    for item in items:",
     "    answered = [i for i in items if i.call_id is not None]\n"
     "    verdicts = [i.result if isinstance(i, Refusal) else host.execute(i) for i in answered]\n"
     "    echoes = [call_entry(ids.external(i.call_id, 'openai'), i.name,\n"
     "                         i.arguments if isinstance(i.arguments, str) else json.dumps(i.arguments))\n"
     "              for i in answered]\n"
     "    return [assistant_turn(echoes)] + [tool_answer(ids.external(i.call_id, 'openai'), r)\n"
     "                                       for i, r in zip(answered, verdicts)]\n"
     "    echoes, answers = [], []\n    for item in items:"),
]


def with_edit(stem: str, old: str, new: str):
    """The solution notebook ``stem`` with ``old`` (found exactly once, in a solution cell) replaced by ``new``."""
    nb = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
    hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
    assert len(hits) == 1 and hits[0].source.count(old) == 1, f"{stem}: the edit must match exactly once: {old!r}"
    assert hits[0].metadata.get("nbgrader", {}).get("solution"), f"{stem}: an edit may only touch a solution cell"
    hits[0].source = hits[0].source.replace(old, new)
    return nb


def first_failure(nb) -> tuple[str, str] | None:
    """(error name, message) of the first cell that fails, or None when every cell runs."""
    from nbclient.exceptions import CellExecutionError

    try:
        runner.execute(nb, ROOT / "solutions")
    except CellExecutionError as exc:
        return exc.ename, exc.evalue
    return None


def said(source: str) -> str:
    """Every string of ``source`` as Python joins it (a long message is written in pieces)."""
    import ast

    parts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            parts.append("".join(v.value if isinstance(v, ast.Constant) else "{}"
                                 for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            parts.append(node.value)
    return "\n".join(parts)


def test_every_mistake_row_names_a_check_hint():
    """A row's hint is words its exercise's check cells really say (so a renamed hint cannot pass by accident)."""
    for stem, mistake, _old, _new, hint in MISTAKES:
        nb = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
        checks = " ".join(said(c.source) for c in nb.cells if "check" in c.metadata.get("tags", []))
        assert hint in checks, f"{stem} ({mistake}): no check cell says {hint!r}"


@pytest.mark.parametrize("stem, mistake, old, new, hint", MISTAKES, ids=[f"{m[0][:2]}-{m[1]}" for m in MISTAKES])
def test_each_common_mistake_fails_with_its_hint(stem, mistake, old, new, hint):
    failure = first_failure(with_edit(stem, old, new))
    assert failure is not None, f"{stem}: the mistake '{mistake}' passes every check"
    name, message = failure
    assert name == "CheckFailed", (
        f"{stem} ({mistake}): a raw {name} instead of a check's words: {message}")
    assert hint in message, f"{stem} ({mistake}): the check said\n  {message}\nnot the hint for it:\n  {hint}"


@pytest.mark.parametrize("stem, style, old, new", STYLES, ids=[f"{s[0][:2]}-{s[1]}" for s in STYLES])
def test_another_correct_style_passes(stem, style, old, new):
    nb = with_edit(stem, old, new)
    if stem.startswith("02_"):      # a named predicate, defined above the contract, and other blocked attempts
        cell = next(c for c in nb.cells if "def send_email_contract" in c.source)
        named = "    def recipient_allowed(args, world):\n        return args[\"to\"] in world\n\n"
        cell.source = cell.source.replace("### BEGIN SOLUTION\n", "### BEGIN SOLUTION\n" + named, 1)
        cell = next(c for c in nb.cells if "auth_blocked = " in c.source)
        cell.source = cell.source.replace('tk.Caller("intern")', 'tk.Caller("agent", frozenset({"mail.read"}))')
    failure = first_failure(nb)
    assert failure is None, f"{stem}: a correct answer ({style}) is refused: {failure}"


def test_the_witness_tells_a_missing_file_inside_from_an_open_outside(tmp_path):
    """Exercise 01's open-and-catch answer: a failed open of a missing file inside reads nothing; outside is a fault."""
    from course.worlds import files_opened, opened_outside, recording_opens

    inside, beside = tmp_path / "ws", tmp_path / "ws_evil"
    inside.mkdir()
    beside.mkdir()
    (inside / "here.txt").write_text("x")
    (beside / "secret.txt").write_text("SECRET")
    with recording_opens() as events:
        for path in (inside / "missing.txt", beside / "missing.txt", inside / "here.txt", beside / "secret.txt"):
            try:
                open(path).close()
            except OSError:
                pass
    assert [e.found for e in events] == [False, False, True, True]
    assert files_opened(events) == ["here.txt", "secret.txt"]
    assert opened_outside(events, inside) == [str(beside / "missing.txt"), str(beside / "secret.txt")]


# ------------------------------------------------------------------ the exercises as shipped
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))


def speech(nb) -> list[tuple[int, str, str]]:
    """(cell index, where, what) for every output of ``nb`` that is not a check's own one line."""
    stray = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        is_check = "check" in cell.metadata.get("tags", [])
        for out in cell.outputs:
            if out.output_type == "error":
                own = (is_check and out.ename == "CheckFailed" and len(out.traceback) == 1
                       and "\n" not in out.traceback[0].strip() and "not done yet" in out.evalue)
                if not own:
                    said = f"{out.ename}: {out.evalue} ({len(out.traceback)} traceback lines)"
                    stray.append((index, "error", said))
            elif out.output_type == "stream" and out.name == "stderr":
                stray.append((index, "stderr", out.text[:300]))
            elif "Traceback" in f'{out.get("text", "")}{out.get("data", {}).get("text/plain")}':
                stray.append((index, "output", "a printed traceback"))
    return stray


@pytest.mark.skipif(not EXERCISES, reason="no exercises/*.ipynb yet")
@pytest.mark.parametrize("path", EXERCISES, ids=[p.stem for p in EXERCISES])
def test_every_shipped_stub_speaks_only_in_check_messages(path):
    """Run untouched, as committed: every check cell says in one line that its part is not done yet
    (an error, so nbgrader gives no points), and nothing else errs, prints a traceback or writes to
    stderr."""
    nb = runner.execute(nbformat.read(path, as_version=4), path.parent, allow_errors=True)
    assert speech(nb) == [], f"{path.name}: outputs that are not a check's one line: {speech(nb)}"
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    failed = [any(o.output_type == "error" for o in c.outputs) for c in checks]
    assert checks and all(failed), f"{path.name}: check cells that pass on the stub: {failed}"


def test_the_one_line_verdict_replaces_the_traceback():
    from course.worlds import CheckFailed, checking

    def verdict(body) -> str:
        with pytest.raises(CheckFailed) as caught:
            with checking("part 9: thing"):
                body()
        assert caught.value._render_traceback_() == [f"Check failed: {caught.value}"]
        return str(caught.value)

    def stub():
        raise NotImplementedError()

    def missing():
        return undefined_name  # noqa: F821 (the student never defined it)

    def wrong():
        raise AssertionError("one is not two")   # a failed assert (pytest rewrites this module's)

    def broken():
        return {}["key"]

    assert "part 9: thing is not done yet" in verdict(stub)
    assert "not done yet" in verdict(missing) and "undefined_name" in verdict(missing)
    assert verdict(wrong) == "part 9: thing: one is not two"
    assert verdict(broken) == "part 9: thing: your code raised KeyError: 'key'"
    with checking("part 9: thing"):
        done = True
    assert done


@pytest.mark.parametrize("errors", [None, (), [], "no such file", ("a", "b"), (e for e in ()), 7])
@pytest.mark.parametrize("failure_class", ["schema", "SCHEMA", "no such class", None])
def test_rejected_takes_what_a_student_hands_it(errors, failure_class):
    import toolkit as tk
    from course.worlds import rejected

    result = rejected(failure_class, errors, "call_9")
    assert isinstance(result, tk.ToolResult) and result.status is tk.Status.REJECTED
    assert result.call_id == "call_9"
    assert all(isinstance(e, tk.ToolError) for e in result.errors) and result.reason
    if failure_class in ("schema", "SCHEMA"):
        assert result.failure_class is tk.FailureClass.SCHEMA
    one = tk.ToolError("path_refused", "$.path", "outside")
    assert rejected(tk.FailureClass.AUTHORIZATION, one, "c").errors == (one,)
    assert rejected(tk.FailureClass.AUTHORIZATION, (one,), "c").reason == "path_refused"


@pytest.mark.parametrize("data, text", [(b"abc", "abc"), ("abc", "abc"), (bytearray(b"abc"), "abc"),
                                        (None, ""), (memoryview(b"abc"), "abc"), (12, "12")])
@pytest.mark.parametrize("call", ["a call", None, "no arguments"])
def test_succeeded_takes_what_a_student_hands_it(data, text, call):
    import hashlib
    from types import SimpleNamespace

    import toolkit as tk
    from course.worlds import succeeded

    call = {"a call": tk.request("read_file", {"path": "src/a.txt"}, "call_3"), None: None,
            "no arguments": SimpleNamespace(call_id="call_3", arguments=None)}[call]
    for given in (data, SimpleNamespace(data=data)):      # the bytes, or the FileRead holding them
        result = succeeded(call, given)
        assert result.ok and result.output["content"] == text
        raw = text.encode()
        assert result.evidence == {"size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def test_the_other_given_helpers_take_plausible_wrong_input():
    import toolkit as tk
    from course.worlds import assistant_turn, closest_name, conflict_line, module_of, tool_answer

    assert conflict_line("write-write", None) == "" and conflict_line("write-write", ()) == ""
    assert conflict_line("write-write", "file:C.md") == "write-write file:C.md"
    assert conflict_line("read-write", ["file:B", "file:A"]) == "read-write file:A, file:B"
    assert assistant_turn(None)["tool_calls"] == []
    assert len(assistant_turn(iter([{}]))["tool_calls"]) == 1
    assert tool_answer("call_1", None)["content"] == "null"
    assert tool_answer("call_1", {"status": "succeeded"})["content"] == '{"status": "succeeded"}'
    done = tk.ToolResult("c", tk.Status.SUCCEEDED)
    assert tool_answer("call_1", done)["tool_call_id"] == "call_1"
    assert closest_name("load_manifest", []) == "" and closest_name("x", ("a",)) == "a"
    assert module_of("not an error") == "" and module_of(None) == ""
