"""Exercises are generated from solutions, never edited by hand, and their checks really check.

* the generator turns a solution region into a stub and clears outputs (tested on a tiny notebook);
* the committed exercises are exactly what the generator makes from today's solutions (no drift);
* every solution runs clean, and every check cell (tag ``check``) fails on the generated stub,
  so a check cell cannot pass without the student's code.
"""
from __future__ import annotations

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
    ### BEGIN SOLUTION multiply the three bits
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
    # YOUR CODE HERE: multiply the three bits
    raise NotImplementedError()

answer = 0
raise NotImplementedError()'''

CHECK = ('assert legal(1, 1, 1) == 1, "(1,1,1): every test passed, so the call is legal"\n'
         'assert legal(0, 1, 1) == 0, "(0,1,1): a malformed call is never legal"\n'
         'assert answer == 1, "answer should be the indicator for (1,1,1)"')


def tiny_solution():
    solved = new_code_cell(SOLVED, execution_count=1)
    check = new_code_cell(CHECK, execution_count=2, metadata={"tags": ["check"]},
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
])
def test_unbalanced_markers_are_refused(source, problem):
    with pytest.raises(make.ExerciseError, match=problem):
        make.stub_source(source)


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
