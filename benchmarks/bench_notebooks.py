"""The notebook suite under strict nbval, against the same number of one-cell notebooks, in one go.

    python benchmarks/bench_notebooks.py

One strict nbval run (the project's pytest settings: the sanitizer, the kernel of the current
environment) on one worker (``-n 0``: two workers would hide cell time behind scheduling) takes the
course's notebooks and as many one-cell notebooks in turn: a one-cell notebook, a chapter, a
one-cell notebook, the next chapter... This machine's speed drifts by a tenth and more within a
minute (a virtual machine's neighbours); taken in turn, both sides meet the same drift. A JUnit
report gives each item its time (setup, call and teardown: a notebook's first cell carries its
kernel's start, its last cell the kernel's stop), so each side's time is the sum of its items.

Some cells run a real packaged model (SmolLM2 behind llama.cpp); they carry the cell tag
``packaged-model``. The model's compute is not the course's cell cost, so the benchmark reports:

* the course's own cells: the course's items without the cells tagged ``packaged-model``, plus
  one session's start (what the run took beyond its items: pytest's start and collection, the same
  whichever side ran alone), as a ratio to the one-cell notebooks plus that same start: the ratio
  of two nbval runs, one of each side. Aim: at most 1.6x (``RESULT nbval_course_vs_one_cell``);
* the model's time: those tagged cells' total, apart (``RESULT nbval_packaged_model_s``, seconds).

It also prints the CPU time of pytest and its kernels, the slowest of the course's own cells, and
the machine's load average at the start and at the end: wall-clock figures run slower on a machine
busy with other work.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AIM = 1.6
MODEL_TAG = "packaged-model"


def course_notebooks() -> list[Path]:
    return sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("solutions/*.ipynb"))


def one_cell_notebooks(folder: Path, count: int) -> list[Path]:
    """``count`` notebooks of one executed cell each, written the way nbformat stores them."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    paths = []
    for i in range(count):
        cell = new_code_cell("print('ok')", execution_count=1,
                             outputs=[new_output("stream", name="stdout", text="ok\n")])
        kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb = new_notebook(cells=[cell], metadata={"kernelspec": kernel})
        path = folder / f"one_cell_{i:02d}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return paths


def nbval(paths: list[Path], report: Path | None = None) -> tuple[float, float]:
    """Seconds for one strict nbval run over ``paths``, in that order (it must pass): wall-clock, and
    the CPU time of pytest and the kernels it ran. ``report``: where to write a JUnit report of each
    item's time."""
    extra = [f"--junitxml={report}"] if report else []     # each item: setup, call and teardown
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), "-n", "0", *extra,
               *map(str, paths)]
    # the kernels import toolkit and course from this tree, whichever copy is installed
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    used, started = cpu_seconds(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path})
    if done.returncode != 0:
        raise SystemExit(f"nbval failed:\n{done.stdout[-2000:]}")
    return time.perf_counter() - started, cpu_seconds() - used


def cpu_seconds() -> float:
    """CPU time of the ended children of this process, theirs included (load hardly moves it)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def cell_tags(path: Path) -> list[list[str]]:
    """The tags of each code cell of a notebook, in order (nbval's ``Cell N`` is code cell N)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [c.get("metadata", {}).get("tags", []) for c in cells if c["cell_type"] == "code"]


def cell_times(report: Path, paths: list[Path]) -> list[tuple[float, str, int, bool]]:
    """(seconds, notebook, code cell number, tagged ``packaged-model``) for each reported cell of
    the notebooks ``paths`` (the report's other items are left out)."""
    by_class = {_class_name(p): p for p in paths}
    tags = {p: cell_tags(p) for p in paths}
    found = []
    for case in ET.parse(report).iter("testcase"):
        path = by_class.get(case.get("classname"))
        if path is None:
            continue
        number = int(case.get("name").removeprefix("Cell "))
        found.append((float(case.get("time")), str(path.relative_to(ROOT)), number, MODEL_TAG in tags[path][number]))
    return found


def _class_name(path: Path) -> str:
    """The JUnit class name pytest gives the items of a notebook in the tree (its node id, dots)."""
    return str(path.relative_to(ROOT)).replace(os.sep, ".")


def compiled() -> None:
    """Write the bytecode of the tree's own modules, as Python does at a first import. A run told
    not to write it (``PYTHONDONTWRITEBYTECODE``) would otherwise measure every kernel compiling
    ``toolkit`` and ``course`` from source, a cost a student's machine pays once."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "toolkit", "course"], cwd=ROOT,
                   check=True)


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


def main() -> int:
    course = course_notebooks()
    load_at_start = load()
    (ROOT / "artifacts").mkdir(exist_ok=True)
    # inside the tree (artifacts/ is not tracked), so the report names each one-cell notebook's item
    with tempfile.TemporaryDirectory(prefix="bench-notebooks-", dir=ROOT / "artifacts") as folder:
        plain = one_cell_notebooks(Path(folder), len(course))
        report = Path(folder) / "run.xml"
        compiled()
        nbval(plain[:1])                              # warm the file and bytecode caches
        in_turn = [path for pair in zip(plain, course) for path in pair]
        wall, cpu = nbval(in_turn, report)
        cells = cell_times(report, course)
        plain_cells = cell_times(report, plain)
    if len(plain_cells) != len(plain) or len(cells) != sum(len(cell_tags(p)) for p in course):
        raise SystemExit("the JUnit report does not name every cell of the run")
    start = wall - sum(c[0] for c in cells) - sum(c[0] for c in plain_cells)   # one session's start
    model = [c for c in cells if c[3]]
    model_time = sum(c[0] for c in model)
    own = sum(c[0] for c in cells if not c[3]) + start
    baseline = sum(c[0] for c in plain_cells) + start
    ratio = own / baseline
    print(f"one strict nbval run, {len(course)} course notebooks and {len(plain)} one-cell notebooks "
          f"in turn   {wall:6.1f} s")
    print(f"  pytest's start and collection (counted on each side once)       {start:6.1f} s")
    print(f"  {len(model)} cells tagged {MODEL_TAG}: the model's time (apart)       "
          f"{model_time:6.1f} s")
    print(f"  the course's own cells and kernels, with the start               {own:6.1f} s")
    print(f"  the one-cell notebooks, with the start                           {baseline:6.1f} s")
    print(f"CPU time, pytest and its kernels: {cpu:.1f} s (the model's cells included)")
    print("slowest of the course's own cells (a first cell includes its kernel's start, a last its stop):")
    for seconds, notebook, number, _ in sorted((c for c in cells if not c[3]), reverse=True)[:8]:
        print(f"  {seconds:5.2f} s  {notebook} Cell {number}")
    print(f"load average {load_at_start} at the start, {load()} at the end")
    verdict = "ok" if ratio <= AIM else "missed"
    print(f"RESULT nbval_course_vs_one_cell {ratio:.2f} aim<={AIM} {verdict}")
    print(f"RESULT nbval_packaged_model_s {model_time:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
