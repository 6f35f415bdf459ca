"""Put each chapter's knowledge check at the end of its notebook: a heading cell and a widget cell.

    python scripts/add_knowledge_checks.py          # every notebooks/NN_*.ipynb that has questions
    python scripts/add_knowledge_checks.py notebooks/03_agent427_import_failure.ipynb

Idempotent: a notebook whose last two cells already are its check is left byte for byte as it was
(outputs included); a check found elsewhere, or with other text, is taken out and written again at
the end. Cell ids follow ``scripts/run_notebooks.py``'s rule. The questions are
``course/present/knowledge_questions.toml``; the widget is ``course/present/knowledge_check.py``.
Only the two cells' source is written: run ``python scripts/run_notebooks.py`` on a changed notebook
to store the check's output, then ``python scripts/estimate_time.py --write`` for its time.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from course.present.knowledge_check import quiz, quiz_chapters  # noqa: E402
from run_notebooks import stable_ids, text_of  # noqa: E402

HEADING = "## Check your understanding"
CALL = "knowledge_check("
IMPORT = "from course.present.knowledge_check import knowledge_check"
CHAPTER = re.compile(r"^(\d\d)_")
NUMBERS = {3: "three", 4: "four", 5: "five"}


def heading_source(chapter: str) -> str:
    count = len(quiz(chapter).questions)
    return (f"{HEADING}: chapter {chapter}\n\n"
            f"{NUMBERS.get(count, str(count)).capitalize()} questions on what this chapter showed."
            " Pick a question, then an answer: whichever you pick, the panel says why it is"
            " right or wrong, and you may change your mind. Nothing is stored or graded.")


def code_source(chapter: str) -> str:
    return f'{IMPORT}\n\nknowledge_check("{chapter}").widget'


def is_check_cell(cell) -> bool:
    if cell.cell_type == "markdown":
        return cell.source.lstrip().startswith(HEADING)
    return cell.cell_type == "code" and CALL in cell.source and IMPORT in cell.source


def with_check(nb, chapter: str):
    """``nb`` with its check as its last two cells (kept as they are if they are right)."""
    import nbformat

    wanted = [("markdown", heading_source(chapter)), ("code", code_source(chapter))]
    if [(c.cell_type, c.source) for c in nb.cells[-2:]] == wanted and \
            not any(is_check_cell(c) for c in nb.cells[:-2]):
        return nb
    nb.cells = [c for c in nb.cells if not is_check_cell(c)]
    nb.cells += [nbformat.v4.new_markdown_cell(wanted[0][1]),
                 nbformat.v4.new_code_cell(wanted[1][1])]
    return stable_ids(nb)


def add_check(path: Path) -> str:
    """Give the notebook at ``path`` its check: "added", "updated", "unchanged" or "skipped"."""
    import nbformat

    match = CHAPTER.match(path.name)
    if not match or match.group(1) not in quiz_chapters():
        return "skipped"
    before = path.read_text(encoding="utf-8")
    nb = nbformat.reads(before, as_version=4)
    had = any(is_check_cell(c) for c in nb.cells)
    after = text_of(with_check(nb, match.group(1)))
    if after == before:
        return "unchanged"
    nbformat.validate(nbformat.reads(after, as_version=4))
    path.write_text(after, encoding="utf-8", newline="\n")
    return "updated" if had else "added"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="chapter notebooks (default: notebooks/NN_*.ipynb)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(p for p in (ROOT / "notebooks").glob("*.ipynb")
                                     if CHAPTER.match(p.name))
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print("no such notebook: " + ", ".join(map(str, missing)), file=sys.stderr)
        return 2
    for path in paths:
        print(f"{add_check(path):<9} {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
