"""The notebook suite under strict nbval, against the same number of one-cell notebooks, in one go.

    python benchmarks/bench_notebooks.py

Both runs use this interpreter and the project's pytest settings (strict nbval, the sanitizer, the kernel of the
current environment), on one worker (``-n 0``: the suite's two workers would hide cell time behind scheduling),
so kernel start-up and collection cost the same in each; what is left is the time the
chapters' own cells take. Aim: every notebook and solution within 1.6x as many notebooks that only print.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AIM = 1.6


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
        nb = new_notebook(cells=[cell], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                  "language": "python"}})
        path = folder / f"one_cell_{i:02d}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return paths


def nbval(paths: list[Path]) -> float:
    """Seconds for one strict nbval run over ``paths`` (it must pass)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                           "-c", str(ROOT / "pyproject.toml"), "-n", "0", *map(str, paths)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nbval failed:\n{done.stdout[-2000:]}")
    return time.perf_counter() - started


def main() -> int:
    course = course_notebooks()
    with tempfile.TemporaryDirectory(prefix="bench-notebooks-") as folder:
        plain = one_cell_notebooks(Path(folder), len(course))
        nbval(plain[:1])                              # warm the file and bytecode caches
        baseline = nbval(plain)
        chapters = nbval(course)
    ratio = chapters / baseline
    print(f"{len(course)} course notebooks under strict nbval   {chapters:6.1f} s")
    print(f"{len(plain)} one-cell notebooks under strict nbval  {baseline:6.1f} s")
    print(f"RESULT nbval_course_vs_one_cell {ratio:.2f} aim<={AIM} {'ok' if ratio <= AIM else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
