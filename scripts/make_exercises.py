"""Generate the student exercises from the worked solutions (the solutions are the single source).

    python scripts/make_exercises.py           # write exercises/NN_x.ipynb for every solutions/NN_x.ipynb
    python scripts/make_exercises.py --check   # write nothing; exit 1 and name every file that drifted

This does what nbgrader's ``ClearSolutions`` and ``ClearOutput`` do (tests/test_exercise_pipeline.py
compares the two on every solution), so ``nbgrader generate_assignment`` gives the same exercise.
In a solution's code cell, every region from a line ``### BEGIN SOLUTION`` to a line
``### END SOLUTION`` (both included) becomes nbgrader's stub at the region's indentation. A hint
for the student goes on a comment line above the region, where it survives::

    def bit(test):                               def bit(test):
        # return 1 or 0                              # return 1 or 0
        ### BEGIN SOLUTION                 ->        # YOUR CODE HERE
        return 1 if test.passed else 0               raise NotImplementedError()
        ### END SOLUTION

Like nbgrader, a cell holding a region must be marked as a solution cell (``metadata.nbgrader.solution``),
and a cell tagged ``check`` must be a graded, locked test cell with points. All outputs are cleared and
execution counts set to None; cell ids, tags and metadata are kept. The file is written with
``nbformat.write``, so the same solution always gives the same bytes.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_notebooks import text_of  # noqa: E402  (one writer for every stored notebook)

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")   # nbgrader's python code_stub


class ExerciseError(ValueError):
    """A solution whose markers cannot be turned into an exercise (unbalanced, nested, misplaced)."""


def stub_source(source: str, where: str = "cell") -> str:
    """``source`` with every solution region replaced by a stub; raises ExerciseError on bad markers."""
    out: list[str] = []
    inside = False
    for number, line in enumerate(source.split("\n"), start=1):
        text = line.strip()
        if text.startswith(BEGIN):
            if inside:
                raise ExerciseError(f"{where}, line {number}: {BEGIN} inside an open solution region")
            inside = True
            if text != BEGIN:
                raise ExerciseError(f"{where}, line {number}: nothing may follow {BEGIN} on its line (nbgrader "
                                    "drops that line): put the hint on a comment line above it")
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + stub for stub in STUB)
        elif text.startswith(END):
            if not inside:
                raise ExerciseError(f"{where}, line {number}: {END} without a {BEGIN} before it")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ExerciseError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def has_region(source: str) -> bool:
    """True when ``source`` holds a solution marker (nbgrader looks for the words anywhere on a line)."""
    return any(marker.lstrip("# ") in line for line in source.split("\n") for marker in (BEGIN, END))


def check_metadata(cell: Any, where: str) -> None:
    """Refuse a cell whose nbgrader metadata does not match its role (what ``generate_assignment`` needs)."""
    grader = cell.metadata.get("nbgrader", {})
    if has_region(cell.source) and not grader.get("solution"):
        raise ExerciseError(f"{where}: a solution region in a cell not marked nbgrader solution: true")
    if "check" in cell.metadata.get("tags", []):
        if not (grader.get("grade") and grader.get("locked") and grader.get("points") and grader.get("grade_id")):
            raise ExerciseError(f"{where}: a check cell must be an nbgrader test: grade, locked, points, grade_id")
        if grader.get("solution"):
            raise ExerciseError(f"{where}: a check cell cannot also be a solution cell")


def make_exercise(solution: Any, name: str = "notebook") -> Any:
    """The exercise for one solution notebook (a new NotebookNode; ``solution`` is not changed)."""
    nb = copy.deepcopy(solution)
    nb.metadata.pop("widgets", None)
    for index, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            if has_region(cell.source):
                raise ExerciseError(f"{name}, cell {index}: solution markers are only allowed in code cells")
            continue
        check_metadata(cell, f"{name}, cell {index}")
        cell.source = stub_source(cell.source, f"{name}, cell {index}")
        cell.outputs = []
        cell.execution_count = None
    return nb


def build(solutions: Path, exercises: Path) -> dict[Path, str]:
    """Map each exercise path to the text it must have, from every ``solutions/*.ipynb``."""
    import nbformat

    wanted: dict[Path, str] = {}
    for path in sorted(solutions.glob("*.ipynb")):
        exercise = make_exercise(nbformat.read(path, as_version=4), path.name)
        nbformat.validate(exercise)
        wanted[exercises / path.name] = text_of(exercise)
    return wanted


def drift(solutions: Path, exercises: Path) -> list[str]:
    """Why the committed exercises differ from what the solutions give; empty when they agree."""
    wanted = build(solutions, exercises)
    problems = []
    for path, text in wanted.items():
        if not path.exists():
            problems.append(f"{path.name}: missing")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path.name}: differs from its solution")
    for path in sorted(exercises.glob("*.ipynb")):
        if path not in wanted:
            problems.append(f"{path.name}: no solution of that name (stale exercise)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any exercise drifted")
    parser.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    parser.add_argument("--exercises", type=Path, default=ROOT / "exercises")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = drift(args.solutions, args.exercises)
            for problem in problems:
                print(f"exercises/{problem}", file=sys.stderr)
            if problems:
                print("regenerate with: python scripts/make_exercises.py", file=sys.stderr)
                return 1
            print("exercises match their solutions")
            return 0
        wanted = build(args.solutions, args.exercises)
    except ExerciseError as exc:
        print(f"cannot make exercises: {exc}", file=sys.stderr)
        return 1
    args.exercises.mkdir(parents=True, exist_ok=True)
    for path, text in wanted.items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8", newline="\n")  # what nbformat.write writes
        print(f"{'wrote    ' if old != text else 'unchanged'} exercises/{path.name}")
    stale = sorted(p.name for p in args.exercises.glob("*.ipynb") if p not in wanted)
    for name in stale:
        print(f"warning: exercises/{name} has no solution; delete it or add solutions/{name}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
