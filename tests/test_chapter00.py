"""Chapter 00, the start page: its words on the kernel's size are the figure its cell measures."""
import re
from pathlib import Path

import nbformat
import pytest

import toolkit as tk

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "00_start_here.ipynb"


def _lines(folder: Path) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in sorted(folder.glob("*.py"))
               if p.name != "__init__.py")


@pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook not built yet")
def test_the_kernels_size_is_stated_from_the_figure_the_cell_prints():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "lines_in(kernel)" in c.source)
    out = "".join(o.get("text", "") for o in cell.outputs)
    counted = re.search(r"^kernel/\s+\d+ files, the rules\s+([\d,]+) lines$", out, re.M).group(1)
    stated = re.search(r"The idea fits in kernel/'s ([\d,]+) lines", out).group(1)
    assert counted == stated == f"{_lines(Path(tk.__file__).parent / 'kernel'):,}"
    after = cell.source.split("The idea fits", 1)[1]
    assert after.startswith(" in kernel/'s {lines_in(kernel):,} lines"), "computed, not typed"
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "few hundred lines" not in prose
