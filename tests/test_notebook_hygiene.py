"""What a committed notebook may store.

Notebooks (notebooks/) and solutions (solutions/) are stored executed, top to bottom in a
fresh kernel (``scripts/run_notebooks.py``), and their outputs hold nothing tied to this
machine or this moment: no memory addresses, no absolute paths, no timestamps of today, no
tracebacks or warnings. Exercises (exercises/) store no outputs at all. A cell that nbval is
told to skip or not to compare says why on its first line.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
EXECUTED = sorted(p for folder in ("notebooks", "solutions") for p in (ROOT / folder).glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))
TEXT_TYPES = ("text/plain", "text/html", "text/markdown", "text/latex", "application/json")
NBVAL_TAGS = ("nbval-skip", "nbval-ignore-output")
NBVAL_MARKER = re.compile(r"NBVAL_[A-Z_]+|nbval-[a-z-]+", re.IGNORECASE)


def machine_paths() -> list[str]:
    """Absolute path prefixes that belong to this machine or this checkout."""
    prefixes = {"/work/", "/tmp/", "/root/", "/home/", str(Path.home()) + "/", str(ROOT) + "/",
                sys.prefix + "/", tempfile.gettempdir() + "/"}
    return sorted(p for p in prefixes if p != "//")


def today_patterns(now: float | None = None) -> list[str]:
    """Today's date (local and UTC) in the usual spellings."""
    now = time.time() if now is None else now
    days = {dt.datetime.fromtimestamp(now), dt.datetime.fromtimestamp(now, dt.timezone.utc)}
    formats = ("%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y%m%d", "%d %b %Y", "%b %d %Y",
               "%a %b %d", "%a, %d %b %Y")
    return sorted({day.strftime(f) for day in days for f in formats})


def output_texts(cell) -> list[str]:
    """Every text a code cell's outputs show (images are skipped)."""
    texts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            texts.append(output.text)
        elif output.output_type == "error":
            texts.append("\n".join(output.traceback))
        else:
            for mime in TEXT_TYPES:
                if mime in output.get("data", {}):
                    value = output.data[mime]
                    texts.append(value if isinstance(value, str) else json.dumps(value))
    return texts


def text_problems(text: str, now: float | None = None) -> list[str]:
    """What is wrong with one piece of stored output text."""
    problems = []
    if re.search(r"at 0x[0-9a-fA-F]+", text):
        problems.append("memory address (`at 0x...`): give the object a repr or print a field")
    for prefix in machine_paths():
        if prefix in text:
            problems.append(f"absolute path of this machine ({prefix!r}): print a relative path")
    for day in today_patterns(now):
        if day in text:
            problems.append(f"today's date ({day!r}): use a fixed clock")
    now = time.time() if now is None else now
    for match in re.finditer(r"(?<![\d.])1[0-9]{9}(?:\.\d+)?(?![\d])", text):
        if abs(float(match.group()) - now) < 3 * 86400:
            problems.append(f"a Unix time of today ({match.group()}): use a fixed clock")
    if "Traceback (most recent call last)" in text:
        problems.append("a traceback")
    if re.search(r"\b[A-Z]\w+Warning: ", text):
        problems.append("a warning")
    return problems


def nbval_reason_problems(nb) -> list[str]:
    """Cells that nbval skips or does not compare must say why on their first line."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = [t for t in cell.metadata.get("tags", []) if t in NBVAL_TAGS]
        markers = NBVAL_MARKER.findall(cell.source)
        if not tags and not markers:
            continue
        first = cell.source.split("\n", 1)[0].strip()
        reason = NBVAL_MARKER.sub("", first.lstrip("#")).strip(" :-,.()")
        if not first.startswith("#") or len(reason.split()) < 2:
            what = ", ".join(tags + markers)
            problems.append(f"cell {index} ({what}): its first line must be a comment saying why")
    return problems


def executed_problems(nb, now: float | None = None) -> list[str]:
    """Everything wrong with a notebook that must be stored executed (notebooks/, solutions/)."""
    problems = []
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        problems.append("kernelspec name is not python3")
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    counts = [c.execution_count for _, c in code]
    for index, cell in code:
        if cell.execution_count is None:
            problems.append(f"cell {index} was not executed (an empty code cell? remove it)")
    if None not in counts and counts != list(range(1, len(code) + 1)):
        problems.append(f"execution counts {counts} are not 1..{len(code)}: run scripts/run_notebooks.py")
    if code and not any(c.outputs for _, c in code):
        problems.append("no code cell has stored outputs: run scripts/run_notebooks.py")
    for index, cell in code:
        if any(o.output_type == "error" for o in cell.outputs):
            problems.append(f"cell {index}: stores an error output")
        if any(o.output_type == "stream" and o.name == "stderr" for o in cell.outputs):
            problems.append(f"cell {index}: stores stderr output")
        for text in output_texts(cell):
            problems += [f"cell {index}: {p}" for p in text_problems(text, now)]
    return problems + nbval_reason_problems(nb)


def exercise_problems(nb) -> list[str]:
    """Everything wrong with a generated exercise: it stores no outputs and no solution."""
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
            problems.append(f"cell {index}: stores outputs or an execution count")
        if "### BEGIN SOLUTION" in cell.source or "### END SOLUTION" in cell.source:
            problems.append(f"cell {index}: still holds a solution region")
    return problems + nbval_reason_problems(nb)


def read_valid(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return nb


# ------------------------------------------------------------------ the committed notebooks
@pytest.mark.skipif(not EXECUTED, reason="no notebooks/*.ipynb or solutions/*.ipynb yet")
@pytest.mark.parametrize("path", EXECUTED, ids=[f"{p.parent.name}/{p.stem}" for p in EXECUTED])
def test_executed_notebook_is_clean(path):
    assert executed_problems(read_valid(path)) == []


@pytest.mark.skipif(not EXERCISES, reason="no exercises/*.ipynb yet")
@pytest.mark.parametrize("path", EXERCISES, ids=[p.stem for p in EXERCISES])
def test_exercise_stores_nothing(path):
    assert exercise_problems(read_valid(path)) == []


# ------------------------------------------------------------------ the checks themselves
NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc).timestamp()


def stdout(text: str):
    return new_output("stream", name="stdout", text=text)


def clean_notebook():
    nb = new_notebook(cells=[
        new_code_cell("import toolkit as tk", execution_count=1),
        new_code_cell("print(tk.legal(1, 1, 1))", execution_count=2, outputs=[stdout("1\n")]),
        new_code_cell("# nbval-ignore-output: the order of a set differs between runs\nprint({'a', 'b'})",
                      execution_count=3, metadata={"tags": ["nbval-ignore-output"]},
                      outputs=[stdout("{'b', 'a'}\n")]),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_a_clean_notebook_passes():
    nb = clean_notebook()
    nbformat.validate(nb)
    assert executed_problems(nb, NOW) == []


@pytest.mark.parametrize("text, problem", [
    ("<toolkit.kernel.call.ToolCall object at 0x7f3a2c1d9e50>", "memory address"),
    ("wrote /tmp/tmpab12/ledger.sqlite", "absolute path"),
    (f"opened {ROOT}/toolkit/_schema.py", "absolute path"),
    ("logged at 2024-05-01 12:00:03", "today's date"),
    ("Wed May  1 12:00:03 2024".replace("  ", " 0"), "today's date"),
    ("started 1714564800.25", "Unix time"),
    ('Traceback (most recent call last):\n  File "x.py"', "traceback"),
    ("DeprecationWarning: use something else", "warning"),
])
def test_each_kind_of_leak_is_found(text, problem):
    found = text_problems(text, NOW)
    assert any(problem in p for p in found), found


@pytest.mark.parametrize("text", [
    "legal = 1 x 1 x 1 = 1", "$.amount: expected number, got string", "INV-9 issued on 2023-11-05",
    "paths/relative/file.txt", "retry after 1.5 s (attempt 2 of 3)", "id 1234567890",
])
def test_ordinary_output_is_not_flagged(text):
    assert text_problems(text, NOW) == []


def test_executed_notebook_problems_are_named():
    nb = clean_notebook()
    nb.cells[0].execution_count = None
    nb.cells[1].outputs = [new_output("error", ename="ValueError", evalue="no", traceback=["ValueError: no"])]
    nb.cells[2].source = "print({'a', 'b'})"
    nb.metadata["kernelspec"]["name"] = "python"
    problems = executed_problems(nb, NOW)
    assert problems == [
        "kernelspec name is not python3",
        "cell 0 was not executed (an empty code cell? remove it)",
        "cell 1: stores an error output",
        "cell 2 (nbval-ignore-output): its first line must be a comment saying why",
    ]


def test_out_of_order_execution_is_found():
    nb = clean_notebook()
    nb.cells[1].execution_count = 7
    assert executed_problems(nb, NOW) == ["execution counts [1, 7, 3] are not 1..3: run scripts/run_notebooks.py"]


def test_marker_comment_without_reason_is_found():
    nb = clean_notebook()
    nb.cells[2].metadata = {}
    nb.cells[2].source = "# NBVAL_SKIP\nprint(1)"
    assert nbval_reason_problems(nb) == ["cell 2 (NBVAL_SKIP): its first line must be a comment saying why"]
    nb.cells[2].source = "# NBVAL_SKIP: needs a browser to render\nprint(1)"
    assert nbval_reason_problems(nb) == []


def test_exercise_with_outputs_or_solution_is_found():
    nb = clean_notebook()
    nb.cells[0].source = "### BEGIN SOLUTION\nx = 1\n### END SOLUTION"
    problems = exercise_problems(nb)
    assert "cell 0: still holds a solution region" in problems
    assert "cell 1: stores outputs or an execution count" in problems
    for cell in nb.cells:
        cell.outputs, cell.execution_count = [], None
    nb.cells[0].source = "raise NotImplementedError()"
    assert exercise_problems(nb) == []


# ------------------------------------------------------------------ scripts/run_notebooks.py stores deterministically
def _runner():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_run_notebooks", ROOT / "scripts" / "run_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_normalize_strips_what_changes_from_run_to_run():
    runner = _runner()
    view = {"model_id": "5f1c0d6e9a2b4c7d8e9f0a1b2c3d4e5f", "version_major": 2, "version_minor": 0}
    nb = new_notebook(cells=[
        new_code_cell("w", execution_count=1, metadata={"execution": {"iopub.status.busy": "2024-05-01T12:00:00Z"}},
                      outputs=[new_output("execute_result", execution_count=1,
                                          data={"text/plain": "IntSlider(value=3)",
                                                "application/vnd.jupyter.widget-view+json": view})]),
        new_code_cell("for i in range(3): print(i)", execution_count=2,
                      outputs=[stdout("0\n"), stdout("1\n"), new_output("stream", name="stderr", text="!\n"),
                               stdout("2\n")]),
    ])
    nb.metadata.update(widgets={"application/vnd.jupyter.widget-state+json": {"state": {}}},
                       language_info={"name": "python", "version": "3.11.7"})
    runner.normalize(nb)
    nbformat.validate(nb)
    assert "widgets" not in nb.metadata and nb.metadata.language_info == {"name": "python", "version": "3.11.7"}
    assert nb.metadata.kernelspec["name"] == "python3"
    assert "execution" not in nb.cells[0].metadata
    assert nb.cells[0].outputs[0].data == {"text/plain": "IntSlider(value=3)"}
    assert [(o.name, o.text) for o in nb.cells[1].outputs] == [("stdout", "0\n1\n"), ("stderr", "!\n"),
                                                               ("stdout", "2\n")]
    ids = [c.id for c in nb.cells]
    again = nbformat.reads(nbformat.writes(nb), as_version=4)
    for cell in again.cells:
        cell.id = "x" + cell.id  # what a fresh jupytext conversion does: new ids
    assert [c.id for c in runner.stable_ids(again).cells] == ids


def test_running_twice_stores_identical_bytes(tmp_path):
    runner = _runner()
    source = new_notebook(cells=[
        new_code_cell("import toolkit as tk\nprint(tk.legal(1, 1, 1))"),
        new_code_cell("import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.02)\n"
                      "tk.legal(0, 1, 1)"),
    ])
    path = tmp_path / "twice.ipynb"
    texts = []
    for _ in range(2):
        nbformat.write(source, path)
        assert runner.main([str(path)]) == 0
        texts.append(path.read_text(encoding="utf-8"))
    assert texts[0] == texts[1]
    stored = nbformat.reads(texts[0], as_version=4)
    assert [c.execution_count for c in stored.cells] == [1, 2]
    assert stored.cells[1].outputs[0].text == "0\n1\n2\n"
    assert stored.cells[1].outputs[1].data["text/plain"] == "0"
    assert executed_problems(stored) == []


def test_a_failing_cell_writes_nothing_and_exits_1(tmp_path):
    runner = _runner()
    path = tmp_path / "broken.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("1 / 0")]), path)
    before = path.read_text(encoding="utf-8")
    assert runner.main([str(path)]) == 1
    assert path.read_text(encoding="utf-8") == before


def test_running_the_notebooks_leaves_a_quiet_terminal(tmp_path):
    """``scripts/run_notebooks.py`` gives its kernels keys, as the course's launchers do: no warning."""
    import subprocess

    cell = new_code_cell("print('ok')", execution_count=1,
                         outputs=[new_output("stream", name="stdout", text="ok\n")])
    path = tmp_path / "one.ipynb"
    nbformat.write(new_notebook(cells=[cell], metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}}), path)
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), str(path)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0 and "ok " in done.stdout, done.stdout + done.stderr
    assert "eavesdropping" not in done.stderr + done.stdout, done.stderr
