"""The notebook suite under strict nbval, against the same number of one-cell notebooks, in one go.

    python benchmarks/bench_notebooks.py

Both runs use this interpreter and the project's pytest settings (strict nbval, the sanitizer, the
kernel of the current environment), on one worker (``-n 0``: the suite's two workers would hide cell
time behind scheduling), so kernel start-up and collection cost the same in each; what is left is
the time the chapters' own cells take. The one-cell notebooks run before and after the course, and
their mean is the reference, so a machine that gets busier or quieter during the run weighs on both
sides alike.

Some cells run a real packaged model (SmolLM2 behind llama.cpp); they carry the cell tag
``packaged-model``. The model's compute is not the course's cell cost, so the course run writes a
JUnit report (nbval makes one pytest item per code cell; the report gives each its own time, the
call alone) and the benchmark reports:

* the course's own cells: the course run's time minus the time of the cells tagged
  ``packaged-model``, as a ratio to the one-cell notebooks. Aim: at most 1.6x
  (``RESULT nbval_course_vs_one_cell``);
* the model's time: those tagged cells' total, apart (``RESULT nbval_packaged_model_s``, seconds).

It also prints the CPU time of pytest and its kernels on each side (a busy machine hardly moves it),
the slowest of the course's own cells, and the machine's load average at the start and at the end:
wall-clock figures run slower on a machine busy with other work.
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
    """Seconds for one strict nbval run over ``paths`` (it must pass): wall-clock, and the CPU time
    of pytest and the kernels it ran. ``report``: where to write a JUnit report of each cell's time
    (the call alone)."""
    extra = [f"--junitxml={report}", "-o", "junit_duration_report=call"] if report else []
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
    """(seconds, notebook, code cell number, tagged ``packaged-model``) for each reported cell."""
    by_class = {str(p.relative_to(ROOT)).replace(os.sep, "."): p for p in paths}   # pytest's names
    tags = {p: cell_tags(p) for p in paths}
    found = []
    for case in ET.parse(report).iter("testcase"):
        path = by_class[case.get("classname")]
        number = int(case.get("name").removeprefix("Cell "))
        found.append((float(case.get("time")), str(path.relative_to(ROOT)), number,
                      MODEL_TAG in tags[path][number]))
    return found


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


def main() -> int:
    course = course_notebooks()
    load_at_start = load()
    with tempfile.TemporaryDirectory(prefix="bench-notebooks-") as folder:
        plain = one_cell_notebooks(Path(folder), len(course))
        report = Path(folder) / "course.xml"
        nbval(plain[:1])                              # warm the file and bytecode caches
        before, plain_cpu = nbval(plain)
        chapters, course_cpu = nbval(course, report)
        after, _ = nbval(plain)
        cells = cell_times(report, course)
    baseline = (before + after) / 2
    model = [c for c in cells if c[3]]
    model_time = sum(c[0] for c in model)
    own = chapters - model_time
    ratio = own / baseline
    print(f"{len(course)} course notebooks under strict nbval            {chapters:6.1f} s")
    print(f"  {len(model)} cells tagged {MODEL_TAG}: the model's time "
          f"  {model_time:6.1f} s (apart)")
    print(f"  the course's own cells, kernels and collection   {own:6.1f} s")
    print(f"{len(plain)} one-cell notebooks under strict nbval           {baseline:6.1f} s "
          f"(before {before:.1f} s, after {after:.1f} s)")
    print(f"CPU time, pytest and its kernels: course {course_cpu:.1f} s, one-cell "
          f"{plain_cpu:.1f} s ({course_cpu / plain_cpu:.2f}x; the model's cells included)")
    print("slowest of the course's own cells:")
    for seconds, notebook, number, _ in sorted((c for c in cells if not c[3]), reverse=True)[:8]:
        print(f"  {seconds:5.2f} s  {notebook} Cell {number}")
    print(f"load average {load_at_start} at the start, {load()} at the end")
    verdict = "ok" if ratio <= AIM else "missed"
    print(f"RESULT nbval_course_vs_one_cell {ratio:.2f} aim<={AIM} {verdict}")
    print(f"RESULT nbval_packaged_model_s {model_time:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
