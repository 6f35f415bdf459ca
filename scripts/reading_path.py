"""Write the reading path's table in toolkit/READING.md from the kernel's files as they are.

    python scripts/reading_path.py           # rewrite the table between the markers
    python scripts/reading_path.py --check   # write nothing; exit 1 when the table is out of date

The order is the order a student reads the kernel in; every other figure (lines, the total, the hours at a
stated reading speed) is counted from the files, so the page cannot drift from the code
(tests/test_reading_path.py runs ``--check``).
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "toolkit" / "kernel"
PAGE = ROOT / "toolkit" / "READING.md"
BEGIN, END = "<!-- reading path: begin (scripts/reading_path.py) -->", "<!-- reading path: end -->"
#: Lines of careful reading an hour: code read to understand it, not skimmed (300-500 is the usual range).
LINES_PER_HOUR = (300, 500)
#: The kernel in reading order, with the chapter that teaches each file.
ORDER = [("call.py", "01"), ("contract.py", "02"), ("legality.py", "02"), ("host.py", "01"), ("loop.py", "03"),
         ("choice.py", "04"), ("read_file.py", "01"), ("ledger.py", "05"),
         ("backoff.py", "06"), ("stream.py", "08"), ("scheduler.py", "08")]


def rule_of(path: Path) -> str:
    """The rule a kernel file states: its docstring's first line, after the chapter's name."""
    first = (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").splitlines()[0]
    return first.split(": ", 1)[1].rstrip(".") if ": " in first else first


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def table() -> str:
    rows = ["| # | file | chapter | the rule | lines |", "|---|---|---|---|---|"]
    total = 0
    for number, (name, chapter) in enumerate(ORDER, 1):
        path = KERNEL / name
        total += lines(path)
        rows.append(f"| {number} | [`kernel/{name}`](kernel/{name}) | {chapter} | {rule_of(path)} | {lines(path):,} |")
    slow, fast = (round(total / speed, 1) for speed in LINES_PER_HOUR)
    rows.append(f"| | **the kernel** | | {len(ORDER)} files | **{total:,}** |")
    return ("\n".join(rows) + f"\n\nAt {LINES_PER_HOUR[0]}-{LINES_PER_HOUR[1]} lines an hour of careful reading, "
            f"the kernel takes **{fast:g}-{slow:g} hours**.")


def render(page: str) -> str:
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is out of date")
    args = parser.parse_args(argv)
    missing = sorted({p.name for p in KERNEL.glob("*.py")} - {n for n, _ in ORDER} - {"__init__.py"})
    if missing:
        print(f"kernel files missing from the reading order: {', '.join(missing)}")
        return 1
    page = PAGE.read_text(encoding="utf-8")
    wanted = render(page)
    if args.check:
        if wanted != page:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/reading_path.py")
            return 1
        return 0
    PAGE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
