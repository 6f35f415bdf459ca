"""Estimate how long each chapter takes a student, from its cells.

    python scripts/estimate_time.py                    # a table per chapter and the course totals
    python scripts/estimate_time.py --write            # rewrite every **Time:** line and INSTRUCTORS.md's table
    python scripts/estimate_time.py --write notebooks/06_backoff_and_retries.ipynb   # just this chapter's line
    python scripts/estimate_time.py --write INSTRUCTORS.md   # just the table (its rows are every chapter's)
    python scripts/estimate_time.py --check            # write nothing; exit 1 and name every stated time that drifted

A chapter is ``notebooks/NN_x.ipynb``; its exercise is ``solutions/NN_y.ipynb`` (the student's copy in
``exercises/`` is generated from it and differs only in the regions the student writes). The first markdown
cell is the title cell and holds one line ``**Time:** ...``. A markdown cell whose source begins with
``## Deep dives`` ends the core path: it and every cell after it are counted as the deep dives.

How a notebook is counted (every cell, in order):

* markdown: its words, read at ``WORDS_PER_MINUTE``; lines of a fenced block inside it count as code lines;
* a code cell: ``CODE_CELL`` for running it, plus ``CODE_LINE`` per non-blank source line;
* its output: ``OUTPUT_LINE`` per line of printed or displayed text (a rendered Markdown table by its lines,
  a formula as one line), ``FIGURE`` per picture (PNG, or an SVG drawing);
* a code cell that shows a widget (its last line ends in ``.widget``, it calls ``interact``, or its output
  holds a widget view): ``WIDGET`` for playing with it, instead of reading its text form;
* an exercise's graded check cell (nbgrader ``grade`` or the ``check`` tag) is run and its verdict read:
  ``CODE_CELL`` plus its output, its source lines not counted (they are the grader's, not the lesson);
* in an exercise, each region between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is work:
  ``SOLUTION_REGION`` for it, plus ``WRITTEN_LINE`` per non-blank line of the worked solution inside it
  (those lines are written, not read, so they do not also count as ``CODE_LINE``).

The constants, in minutes. They come from the reasons on their lines, not from the course's aims; as a sanity
check, for the course as it stood when the estimate was written they give about 14 hours with the exercises,
near the 15 hours a newcomer reported needing for it:
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

WORDS_PER_MINUTE = 150    # careful reading of technical prose: well below the ~240 wpm of ordinary non-fiction
CODE_CELL = 1 / 3         # 20 s per code cell: run it, wait for the kernel, find its output on the screen
CODE_LINE = 0.1           # 6 s per line: code is read at about a third of prose speed, ~8 tokens a line
OUTPUT_LINE = 0.05        # 3 s per output line: output is skimmed for the value the prose points at
FIGURE = 1.0              # 1 min per plot: read the axes, find the point the text makes
WIDGET = 2.0              # 2 min per widget: move each control once or twice and watch what changes
SOLUTION_REGION = 5.0     # 5 min per region: read the stub and its hint, plan, run the check, fix once
WRITTEN_LINE = 1.0        # 1 min per written line: a newcomer writes about one working line a minute

CONSTANTS = {"WORDS_PER_MINUTE": WORDS_PER_MINUTE, "CODE_CELL": CODE_CELL, "CODE_LINE": CODE_LINE,
             "OUTPUT_LINE": OUTPUT_LINE, "FIGURE": FIGURE, "WIDGET": WIDGET,
             "SOLUTION_REGION": SOLUTION_REGION, "WRITTEN_LINE": WRITTEN_LINE}
__doc__ = (__doc__ or "") + "".join(f"\n* ``{name} = {value:.3g}``" for name, value in CONSTANTS.items()) + "\n"

CORE_AIM = 240        # minutes: the core of all chapters within 4 hours
DAY_AIM = 480         # minutes: a class day, the core path of every chapter and every exercise, within 8 hours
TOTAL_AIM = 480       # minutes: everything, deep dives included, within 8 hours (reported: the deep dives are optional)

DEEP_DIVES = "## Deep dives"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
TIME_LINE = re.compile(r"^\*\*Time:\*\*.*$", re.M)
TABLE_BEGIN, TABLE_END = "<!-- chapter-times:begin -->", "<!-- chapter-times:end -->"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PICTURES = ("image/png", "image/svg+xml", "image/jpeg")
WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)


def source_of(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


@dataclass
class Tally:
    """What one stretch of cells holds, and the minutes it takes."""
    words: int = 0
    code_cells: int = 0
    code_lines: int = 0
    output_lines: int = 0
    figures: int = 0
    widgets: int = 0
    regions: int = 0
    written_lines: int = 0

    def minutes(self) -> float:
        return (self.words / WORDS_PER_MINUTE + self.code_cells * CODE_CELL + self.code_lines * CODE_LINE
                + self.output_lines * OUTPUT_LINE + self.figures * FIGURE + self.widgets * WIDGET
                + self.regions * SOLUTION_REGION + self.written_lines * WRITTEN_LINE)


def shows_widget(cell: Any) -> bool:
    """A code cell that puts a widget on the screen."""
    lines = [line for line in source_of(cell).splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if lines and re.search(r"\.widget\s*$", lines[-1]):
        return True
    if re.search(r"\binteract(ive)?\s*\(", source_of(cell)):
        return True
    return any(WIDGET_VIEW in output.get("data", {}) for output in cell.get("outputs", []))


def count_markdown(cell: Any, tally: Tally) -> None:
    text = source_of(cell)
    for block in FENCE.finditer(text):
        tally.code_lines += max(0, _lines(block.group(0)) - 2)
    text = FENCE.sub(" ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)   # a link's address is not read
    tally.words += len(WORD.findall(text))


def count_outputs(cell: Any, tally: Tally) -> None:
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            tally.output_lines += _lines(_text(output.get("text", "")))
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            if any(p in data for p in PICTURES) or "<svg" in _text(data.get("text/html", "")):
                tally.figures += 1
            elif "text/latex" in data:
                tally.output_lines += 1
            else:
                shown = data.get("text/markdown", data.get("text/plain", ""))
                tally.output_lines += _lines(_text(shown))
        elif kind == "error":
            tally.output_lines += 1 + len(output.get("traceback", []))


def is_check(cell: Any) -> bool:
    """An exercise's graded test cell (nbgrader ``grade``, or the course's ``check`` tag)."""
    meta = cell.get("metadata", {})
    return bool(meta.get("nbgrader", {}).get("grade")) or "check" in meta.get("tags", [])


def count_code(cell: Any, tally: Tally) -> None:
    tally.code_cells += 1
    if is_check(cell):          # the student runs the grader's check and reads its verdict, not its code
        count_outputs(cell, tally)
        return
    inside = False
    for line in source_of(cell).splitlines():
        text = line.strip()
        if text.startswith(BEGIN):
            inside = True
            tally.regions += 1
        elif text.startswith(END):
            inside = False
        elif text:
            if inside:
                tally.written_lines += 1
            else:
                tally.code_lines += 1
    if shows_widget(cell):
        tally.widgets += 1
    else:
        count_outputs(cell, tally)


def is_deep_dive_marker(cell: Any) -> bool:
    return cell.get("cell_type") == "markdown" and source_of(cell).lstrip().startswith(DEEP_DIVES)


def tally_cells(cells: list) -> tuple[Tally, Tally]:
    """(core, deep dives) of a notebook's cells."""
    core, deep = Tally(), Tally()
    current = core
    for cell in cells:
        if is_deep_dive_marker(cell):
            current = deep
        if cell.get("cell_type") == "markdown":
            count_markdown(cell, current)
        elif cell.get("cell_type") == "code":
            count_code(cell, current)
    return core, deep


@dataclass
class Chapter:
    number: str
    path: Path
    title: str
    core: float
    deep: float
    exercise: float
    exercise_path: Path | None = None
    tallies: dict = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.core + self.deep + self.exercise


def read_cells(path: Path) -> list:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def title_cell_index(cells: list) -> int | None:
    return next((i for i, c in enumerate(cells) if c.get("cell_type") == "markdown"), None)


def title_of(cells: list, fallback: str) -> str:
    i = title_cell_index(cells)
    heading = next((line[2:].strip() for line in source_of(cells[i]).splitlines() if line.startswith("# ")),
                   "") if i is not None else ""
    heading = re.sub(r"^(Chapter\s+\d+\s*[—–:-]\s*|\d+\s*[·.:—–-]\s*)", "", heading)
    return heading or fallback


def estimate(path: Path, solutions: Path | None = None) -> Chapter:
    """The chapter at ``path`` and the exercise whose worked solution is in ``solutions`` (same NN)."""
    number = path.name[:2]
    cells = read_cells(path)
    core, deep = tally_cells(cells)
    tallies = {"core": core, "deep dives": deep}
    exercise, exercise_path = 0.0, None
    folder = solutions if solutions is not None else path.parent.parent / "solutions"
    matches = sorted(folder.glob(f"{number}_*.ipynb")) if folder.is_dir() else []
    if matches:
        exercise_path = matches[0]
        ex_core, ex_deep = tally_cells(read_cells(exercise_path))
        tallies["exercise"] = ex_core
        exercise = ex_core.minutes() + ex_deep.minutes()
    return Chapter(number, path, title_of(cells, path.stem), core.minutes(), deep.minutes(), exercise,
                   exercise_path, tallies)


def chapters(root: Path = ROOT) -> list[Chapter]:
    return [estimate(p) for p in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))]


def round5(minutes: float) -> int:
    """To the nearest 5 minutes; anything above zero is at least 5."""
    if minutes <= 0:
        return 0
    return max(5, int(minutes / 5 + 0.5) * 5)


def time_line(ch: Chapter) -> str:
    line = f"**Time:** about {round5(ch.core)} min for the core path"
    if round5(ch.deep):
        line += f", {round5(ch.deep)} min more for the deep dives"
    if round5(ch.exercise):
        line += f"; the exercise about {round5(ch.exercise)} min"
    return line + "."


def hours(minutes: int) -> str:
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def table_text(chs: list[Chapter]) -> str:
    """The markdown table INSTRUCTORS.md holds between its markers (each row rounded as the Time lines are)."""
    rows = ["| chapter | core path | deep dives | exercise | core and exercise | total |",
            "|---|---:|---:|---:|---:|---:|"]
    for ch in chs:
        cells = [round5(ch.core), round5(ch.deep), round5(ch.exercise)]
        rows.append(f"| {ch.number} {ch.title} | " + " | ".join(f"{c} min" if c else "–" for c in cells)
                    + f" | {cells[0] + cells[2]} min | {sum(cells)} min |")
    sums = [sum(getattr(c, a) for c in chs) for a in ("core", "deep", "exercise")]
    rows.append("| **all** | " + " | ".join(f"**{hours(round5(m))}**" for m in sums)
                + f" | **{hours(round5(sums[0] + sums[2]))}** | **{hours(round5(sum(sums)))}** |")
    rows += ["", "The last row rounds the course's exact totals once; each row above is rounded on its own, so the "
                 "rows need not add up to it exactly. Estimated by `scripts/estimate_time.py` from the cells."]
    return "\n".join(rows)


def report(chs: list[Chapter]) -> str:
    out = [f"{'chapter':<44} {'core':>6} {'deep':>6} {'exer':>6} {'total':>6}   (minutes)"]
    for ch in chs:
        out.append(f"{ch.number + ' ' + ch.title[:40]:<44} {ch.core:6.1f} {ch.deep:6.1f} {ch.exercise:6.1f} "
                   f"{ch.total:6.1f}")
    core = sum(c.core for c in chs)
    total = sum(c.total for c in chs)
    out.append(f"{'all':<44} {core:6.1f} {sum(c.deep for c in chs):6.1f} "
               f"{sum(c.exercise for c in chs):6.1f} {total:6.1f}")
    out.append(f"aim: core of all chapters <= {CORE_AIM} min: {core:.0f} min "
               f"{'ok' if core <= CORE_AIM else 'missed'}")
    day = core + sum(c.exercise for c in chs)
    out.append(f"aim: core path with every exercise <= {DAY_AIM} min: {day:.0f} min "
               f"{'ok' if day <= DAY_AIM else 'missed'}")
    out.append(f"aim: everything with exercises <= {TOTAL_AIM} min: {total:.0f} min "
               f"{'ok' if total <= TOTAL_AIM else 'missed'}")
    return "\n".join(out)


def stated_line(path: Path) -> str | None:
    """The ``**Time:**`` line of the title cell, or None when it has none."""
    cells = read_cells(path)
    i = title_cell_index(cells)
    if i is None:
        return None
    found = TIME_LINE.search(source_of(cells[i]))
    return found.group(0).rstrip() if found else None


def write_line(ch: Chapter) -> bool:
    """Rewrite ``ch``'s Time line in place (markdown only); True if the file changed."""
    import nbformat
    from run_notebooks import stable_ids, text_of

    nb = nbformat.read(ch.path, as_version=4)
    i = title_cell_index(nb.cells)
    if i is None or not TIME_LINE.search(nb.cells[i].source):
        raise SystemExit(f"{_show(ch.path)}: its title cell has no **Time:** line to rewrite")
    nb.cells[i].source = TIME_LINE.sub(lambda _: time_line(ch), nb.cells[i].source, count=1)
    stable_ids(nb)
    new = text_of(nb)
    if new == ch.path.read_text(encoding="utf-8"):
        return False
    with open(ch.path, "w", encoding="utf-8", newline="\n") as f:
        f.write(new)
    return True


def table_span(text: str) -> tuple[int, int] | None:
    """Where the table goes in INSTRUCTORS.md (between the markers), or None without both markers."""
    start, end = text.find(TABLE_BEGIN), text.find(TABLE_END)
    if start < 0 or end < start:
        return None
    return start + len(TABLE_BEGIN), end


def instructors_with_table(text: str, chs: list[Chapter]) -> str | None:
    span = table_span(text)
    if span is None:
        return None
    return text[:span[0]] + "\n" + table_text(chs) + "\n" + text[span[1]:]


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def drifts(chs: list[Chapter], instructors: Path | None) -> list[str]:
    """Every stated time that differs from the estimate (and the INSTRUCTORS.md table, unless None)."""
    problems = []
    for ch in chs:
        stated = stated_line(ch.path)
        if stated is None:
            problems.append(f"{_show(ch.path)}: the title cell has no **Time:** line (want: {time_line(ch)})")
        elif stated != time_line(ch):
            problems.append(f"{_show(ch.path)}: states {stated!r}, the estimate is {time_line(ch)!r}")
    if instructors is not None and instructors.exists():
        text = instructors.read_text(encoding="utf-8")
        new = instructors_with_table(text, chs)
        if new is None:
            problems.append(f"{_show(instructors)}: no {TABLE_BEGIN} ... {TABLE_END} markers (table not checked)")
        elif new != text:
            problems.append(f"{_show(instructors)}: the chapter-times table differs from the estimate")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="chapters to write or check (default: all)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the Time lines (and INSTRUCTORS.md's table)")
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every drift")
    args = parser.parse_args(argv)
    everything = chapters()
    chosen = everything
    instructors = ROOT / "INSTRUCTORS.md"
    with_table = not args.paths                      # no path: every chapter and the table
    if args.paths:
        wanted = {p.resolve() for p in args.paths}
        with_table = instructors.resolve() in wanted   # INSTRUCTORS.md named: its table too
        wanted.discard(instructors.resolve())
        chosen = [c for c in everything if c.path.resolve() in wanted]
        missing = wanted - {c.path.resolve() for c in chosen}
        if missing:
            parser.error("not a chapter (notebooks/NN_x.ipynb) or INSTRUCTORS.md: "
                         + ", ".join(sorted(map(str, missing))))
    if args.check:
        problems = drifts(chosen, instructors if with_table else None)
        for problem in problems:
            print("DRIFT", problem)
        print(f"{len(problems)} drift(s)" if problems else "every stated time agrees with the estimate")
        return 1 if problems else 0
    print(report(everything))
    if args.write:
        for ch in chosen:
            if stated_line(ch.path) is None:
                print(f"skipped {_show(ch.path)}: its title cell has no **Time:** line")
            elif write_line(ch):
                print(f"wrote {_show(ch.path)}: {time_line(ch)}")
        if with_table:
            text = instructors.read_text(encoding="utf-8") if instructors.exists() else ""
            new = instructors_with_table(text, everything)
            if new is None:
                print(f"skipped INSTRUCTORS.md: it has no {TABLE_BEGIN} / {TABLE_END} markers")
            elif new != text:
                with open(instructors, "w", encoding="utf-8", newline="\n") as f:
                    f.write(new)
                print("wrote INSTRUCTORS.md's chapter-times table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
