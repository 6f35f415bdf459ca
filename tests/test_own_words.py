"""The course is in its own words: no run of 12 consecutive words of a source text appears in the markdown
of a notebook, a solution or an exercise (fenced blocks, inline code and formulas aside, since transcripts
and traces are quoted on purpose). The sources are not in the repository; tests/data/source_shingles.txt
holds only digests of their runs (written by scripts/source_overlap.py)."""
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import source_overlap as so  # noqa: E402

DATA = ROOT / "tests" / "data" / "source_shingles.txt"
NOTEBOOKS = sorted(p for folder in ("notebooks", "solutions", "exercises") for p in (ROOT / folder).glob("*.ipynb"))


def prose_words(markdown: str) -> list[str]:
    """The normalised words of a markdown cell, without fenced blocks, inline code and $ formulas."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", " ", text, flags=re.S)
    return so.words(text)


def copied_runs(ws: list[str], digests: set[str]) -> list[str]:
    """Each stretch of words made of runs found among ``digests`` (overlapping runs merged)."""
    spans: list[list[int]] = []
    for i, run in so.runs(ws):
        if so.digest(run) in digests:
            if spans and i <= spans[-1][1]:
                spans[-1][1] = i + so.RUN
            else:
                spans.append([i, i + so.RUN])
    return [" ".join(ws[a:b]) for a, b in spans]


def problems_in(path: Path, digests: set[str]) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    found = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            found += [f"{path.parent.name}/{path.name} cell {k}: \"{run}\""
                      for run in copied_runs(prose_words(cell.source), digests)]
    return found


@pytest.fixture(scope="module")
def digests():
    return so.read_digests(DATA)


def test_the_digest_file_is_digests_only(digests):
    lines = DATA.read_text(encoding="utf-8").splitlines()
    header = [line for line in lines if line.startswith("#")]
    body = [line for line in lines if not line.startswith("#")]
    assert lines[:len(header)] == header and "".join(header) and "test_own_words" in "".join(header)
    assert all(re.fullmatch(r"[0-9a-f]{10}", line) for line in body), "only 10-hex-digit digests"
    assert body == sorted(set(body)) and len(body) == len(digests) > 1000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.stem}" for p in NOTEBOOKS])
def test_no_twelve_word_run_of_a_source(path, digests):
    found = problems_in(path, digests)
    assert not found, "copied from a source (restate it in the course's own words):\n" + "\n".join(found)


# ------------------------------------------------------------------ the scanner itself, on a synthetic pair
SOURCE = ("The boundary between talking and doing is where a careful host checks every proposal it receives "
          "before anything at all is allowed to happen in the world.")


def _digests_of_source(tmp_path) -> set[str]:
    folder = tmp_path / "sources"
    folder.mkdir()
    (folder / "a.txt").write_text(SOURCE, encoding="utf-8")
    (folder / "b.txt").write_text("A second text, far too short.", encoding="utf-8")
    out = tmp_path / "shingles.txt"
    assert so.main([str(folder), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "boundary" not in text and text.startswith(so.HEADER)
    return so.read_digests(out)


def test_a_planted_run_is_caught_with_its_words(tmp_path):
    digests = _digests_of_source(tmp_path)
    assert len(digests) == len(so.words(SOURCE)) - so.RUN + 1
    planted = ("As we saw, *the boundary between talking and doing* is where a careful host checks "
               "every proposal it receives, so we begin there.")
    nb = new_notebook(cells=[new_code_cell("# " + SOURCE), new_markdown_cell("Our own sentence here."),
                             new_markdown_cell(planted)])
    path = tmp_path / "notebooks" / "01_x.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    (problem,) = problems_in(path, digests)          # the code cell is not prose, cell 1 is our own
    assert problem.startswith("notebooks/01_x.ipynb cell 2:")
    assert "the boundary between talking and doing is where a careful host checks every proposal it receives" \
        in problem


def test_code_spans_fences_and_formulas_are_not_prose(tmp_path):
    digests = _digests_of_source(tmp_path)
    quoted = [f"`{SOURCE}`", f"```text\n{SOURCE}\n```", f"$$\\text{{{SOURCE}}}$$", f"see ${SOURCE}$ above"]
    for markdown in quoted:
        assert copied_runs(prose_words(markdown), digests) == [], markdown
    eleven = " ".join(so.words(SOURCE)[:so.RUN - 1])
    assert copied_runs(so.words(eleven), digests) == []          # 11 words in a row are allowed
    assert copied_runs(so.words(SOURCE.upper()), digests) != []    # case and punctuation do not hide a copy
