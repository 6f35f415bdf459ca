"""Every code line of the course is at most 100 characters wide: a wider one is cut at 1280 px.

The code cells of ``notebooks/``, ``solutions/`` and ``exercises/``, and every Python file of the
repository, are held to that width. ``python scripts/fit_width.py PATH ...`` brings a notebook (or
a Python file) there without changing what it does; the tests at the end check the script itself.

``NOT_YET`` lists what has not been reformatted yet. An entry leaves the list as soon as it fits
(a test fails while a fitting entry stays listed). A notebook leaves it after
``python scripts/fit_width.py`` and ``python scripts/run_notebooks.py`` on it (then
``python scripts/make_exercises.py`` for a solution); a folder of Python files after the script on
its files, and, for ``toolkit/``, the notebooks re-executed, since some cells print the kernel's
own source.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import fit_width  # noqa: E402

WIDTH = 100
NOTEBOOK_FOLDERS = ("notebooks", "solutions", "exercises")
#: Not reformatted yet: notebooks, and folders or files of Python code (paths from the root).
NOT_YET = {
    "toolkit",
    "course",
    "tests",
    "benchmarks",
    "deploy",
    "scripts/make_exercises.py",
    "scripts/open_course.py",
    "scripts/reading_path.py",
    "scripts/run_notebooks.py",
    "scripts/source_overlap.py",
}


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def listed(path: Path) -> bool:
    """True when ``path``, or a folder holding it, is in NOT_YET."""
    name = relative(path)
    return any(name == entry or name.startswith(entry + "/") for entry in NOT_YET)


def notebooks() -> list[Path]:
    return sorted(p for folder in NOTEBOOK_FOLDERS for p in (ROOT / folder).glob("*.ipynb"))


def python_files() -> list[Path]:
    """The repository's Python files (hidden folders, such as a virtual environment's, aside)."""
    return sorted(p for p in ROOT.rglob("*.py")
                  if not any(part.startswith(".") for part in p.relative_to(ROOT).parts))


def too_wide_in_notebook(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [f"{relative(path)}, cell {index}, line {number}: {len(line)} characters"
            for index, cell in enumerate(cells) if cell["cell_type"] == "code"
            for number, line in enumerate("".join(cell["source"]).split("\n"), start=1)
            if len(line) > WIDTH]


def too_wide_in_file(path: Path) -> list[str]:
    return [f"{relative(path)}:{number}: {len(line)} characters"
            for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1)
            if len(line) > WIDTH]


def too_wide(path: Path) -> list[str]:
    return too_wide_in_notebook(path) if path.suffix == ".ipynb" else too_wide_in_file(path)


# ------------------------------------------------------------------ the course fits
@pytest.mark.parametrize("path", [p for p in notebooks() if not listed(p)], ids=relative)
def test_every_code_line_of_a_notebook_fits(path: Path):
    assert too_wide_in_notebook(path) == [], (
        f"run python scripts/fit_width.py {relative(path)}, then scripts/run_notebooks.py on it"
    )


@pytest.mark.parametrize("path", [p for p in python_files() if not listed(p)], ids=relative)
def test_every_line_of_a_python_file_fits(path: Path):
    assert too_wide_in_file(path) == [], f"run python scripts/fit_width.py {relative(path)}"


def test_what_is_not_yet_reformatted_is_still_too_wide():
    """NOT_YET names real paths, and loses each entry as soon as it fits."""
    fitting = []
    for entry in sorted(NOT_YET):
        where = ROOT / entry
        assert where.exists(), f"NOT_YET lists {entry}, which does not exist"
        files = sorted(where.rglob("*.py")) if where.is_dir() else [where]
        if not any(too_wide(p) for p in files):
            fitting.append(entry)
    assert fitting == [], f"these fit now: take them out of NOT_YET: {fitting}"


def test_the_notebooks_are_held_and_the_exercises_only_through_their_solutions():
    """Each exercise is written from its solution, so the two are held (or listed) together."""
    for exercise in sorted((ROOT / "exercises").glob("*.ipynb")):
        solution = ROOT / "solutions" / exercise.name
        assert listed(exercise) == listed(solution), f"{exercise.name}: list both or neither"


# ------------------------------------------------------------------ the script
def run(source: str) -> str:
    """What ``source`` prints when executed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<cell>", "exec"), {})
    return out.getvalue()


#: A cell with a line too wide of every kind (each element is one line of the cell).
WIDE_CELL = "\n".join([
    "import json",
    "",
    'values = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", '
    '"idempotency_key": "invoice:order-431:v1"}',
    "total = sum(v for v in values.values() if isinstance(v, float))   "
    "# only the amount is a number, so this is the amount",
    "# A comment line that goes on and on, well past the hundredth column, "
    "so that it must be wrapped onto two lines.",
    "print(f\"the call asks for {values['amount']:g} {values['currency']} on "
    "{values['order_id']}, under the key {values['idempotency_key']}\")",
    'assert total == 120.0, f"the total should be the amount alone, but it was {total}; '
    'every other value is a text, not a number"',
    "def shown(name):",
    '    """The value of ``name`` in the order, as JSON text: what a model would read back '
    'in the tool\'s result."""',
    "    return json.dumps(values[name])",
    'print(shown("order_id"), shown("amount"), "and a long tail of words that makes this '
    'line far too wide to show")',
    "",
])


def test_fit_width_shortens_every_line_and_keeps_the_program():
    fitted = fit_width.fit_source(WIDE_CELL)
    assert [line for line in fitted.split("\n") if len(line) > WIDTH] == []
    assert run(fitted) == run(WIDE_CELL)
    assert fit_width.same_program(WIDE_CELL, fitted)
    assert "# only the amount is a number, so this is the amount\ntotal = sum(" in fitted
    assert "import json\n\nvalues = {" in fitted          # what was not too wide is as it was


def test_fit_width_changes_nothing_the_second_time():
    fitted = fit_width.fit_source(WIDE_CELL)
    assert fit_width.fit_source(fitted) == fitted


def test_fit_width_keeps_the_docstring_words():
    fitted = fit_width.fit_source(WIDE_CELL)
    before, after = (next(n for n in ast.walk(ast.parse(s)) if isinstance(n, ast.FunctionDef))
                     for s in (WIDE_CELL, fitted))
    assert ast.get_docstring(after).split() == ast.get_docstring(before).split()
    assert ast.get_docstring(after) != ast.get_docstring(before)    # wrapped, so it did change


def test_fit_width_keeps_ipython_lines_as_they_are():
    magic = "%time x = 1"
    shell = "!echo 'a shell line, which no Python formatter may touch' " + "'and on' " * 10
    captured = "files = !ls -la"
    cell = "\n".join([magic, shell, captured, WIDE_CELL.split("\n")[2]])
    fitted = fit_width.fit_source(cell)
    kept = fitted.split("\n")
    assert kept[:3] == [magic, shell, captured]
    assert all(len(line) <= WIDTH for line in kept[3:]) and len(kept) > 4


def test_fit_width_leaves_a_cell_magic_alone(tmp_path: Path):
    cell = "%%bash\necho '" + "a word " * 20 + "'"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    path = tmp_path / "magic.ipynb"
    nbformat.write(nb, path)
    assert fit_width.main([str(path)]) == 1               # it says so: the line is still too wide
    assert nbformat.read(path, as_version=4).cells[0].source == cell


def test_a_wrapped_comment_leaves_no_word_hanging():
    """A comment is wrapped onto lines of even length; one cut at the width before, with a word or
    two on its last line, is rewrapped the same way; a short comment of its own is left alone."""
    hanging = ("    # hand each tk.ToolCall from finish(stop_reason) to execute; answer each Refusal"
               " with its\n    # .result\n    x = 1")      # as a cut at the width once left it
    fitted = fit_width.fit_source(hanging)
    first, second, code = fitted.split("\n")
    assert code == "    x = 1"
    words = hanging.replace("    #", " ").split()[:-3]
    assert (first + second).replace("    #", " ").split() == words
    assert first.startswith("    # ") and second.startswith("    # ")
    assert abs(len(first) - len(second)) < 15
    alone = "# a heading\n# a short second line\nx = 1"       # not cut at the width: kept as written
    assert fit_width.fit_source(alone) == alone
    kept = "    # skip an illegal option; keep a strictly better score than the best so far\n" \
           "    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert fit_width.fit_source(kept) == kept          # the stub's marker stays on a line of its own
    assert fit_width.fit_source(fitted) == fitted


def test_fit_width_keeps_solution_markers():
    cell = ("def total(values):\n    # add up the numbers\n    ### BEGIN SOLUTION\n"
            "    return sum(v for v in values.values()"
            " if isinstance(v, float) and v > 0.0 and v < 1e9 and v == v)\n"
            "    ### END SOLUTION")
    fitted = fit_width.fit_source(cell)
    assert "\n    ### BEGIN SOLUTION\n" in fitted and fitted.endswith("\n    ### END SOLUTION")
    assert all(len(line) <= WIDTH for line in fitted.split("\n"))


def test_fit_width_rewrites_code_cells_only(tmp_path: Path):
    prose = "A markdown line " * 12
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(prose),
                                         nbformat.v4.new_code_cell(WIDE_CELL)])
    path = tmp_path / "wide.ipynb"
    nbformat.write(nb, path)
    assert fit_width.main(["--check", str(path)]) == 1
    assert fit_width.main([str(path)]) == 0
    cells = nbformat.read(path, as_version=4).cells
    assert cells[0].source == prose
    assert too_wide_in_notebook(path) == []
    assert fit_width.main(["--check", str(path)]) == 0


def test_fit_width_leaves_a_fitting_notebook_and_its_cell_ids_alone(tmp_path: Path):
    """An exercise keeps its solution's cell ids; a check that finds nothing too wide changes nothing."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.cells[0].id = "kept-id"
    path = tmp_path / "fits.ipynb"
    nbformat.write(nb, path)
    assert fit_width.main(["--check", str(path)]) == 0
    assert [c.id for c in nbformat.read(path, as_version=4).cells] == ["kept-id"]
    exercises = [str(p) for p in sorted((ROOT / "exercises").glob("*.ipynb"))]
    assert exercises and fit_width.main(["--check", *exercises]) == 0
