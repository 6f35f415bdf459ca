"""Generate the student exercises from the worked solutions (the solutions are the single source).

    python scripts/make_exercises.py           # write exercises/NN_x.ipynb for every solutions/NN_x.ipynb
    python scripts/make_exercises.py --check   # write nothing; exit 1 and name every file that drifted

In a solution's code cell, every region from a line ``### BEGIN SOLUTION`` to a line
``### END SOLUTION`` (both included) becomes ``raise NotImplementedError()`` at the
region's indentation. Text after the BEGIN marker becomes a hint for the student::

    def bit(test):                               def bit(test):
        ### BEGIN SOLUTION return 1 or 0             # YOUR CODE HERE: return 1 or 0
        return 1 if test.passed else 0     ->        raise NotImplementedError()
        ### END SOLUTION

All outputs are cleared and execution counts set to None; cell ids, tags (``check``) and
everything else are kept. The file is written with ``nbformat.write``, so the same solution
always gives the same bytes.
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
STUB = "raise NotImplementedError()"
HINT = "# YOUR CODE HERE: "


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
            indent = line[: len(line) - len(line.lstrip())]
            note = text[len(BEGIN):].strip(" :-")
            if note:
                out.append(indent + HINT + note)
            out.append(indent + STUB)
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
    """True when ``source`` holds at least one solution marker line."""
    return any(line.strip().startswith((BEGIN, END)) for line in source.split("\n"))


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
