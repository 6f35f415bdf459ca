"""Chapters 00-09: how long each takes a student, counted from its cells at a measured pace.

    python scripts/estimate_time.py           # per chapter: estimate, measurement, before/after
    python scripts/estimate_time.py --write   # write the estimate everywhere a time is stated
    python scripts/estimate_time.py --write notebooks/06_backoff_and_retries.ipynb   # its line only
    python scripts/estimate_time.py --write INSTRUCTORS.md README.md   # these documents only
    python scripts/estimate_time.py --check   # write nothing; exit 1 naming every drifted time

Where a time is stated (``--write`` writes every one; nobody types them):

* each chapter's title cell (its first markdown cell): one line ``**Time:** ...``;
* INSTRUCTORS.md: the chapter-times table and the day plans (each between its markers);
* README.md: the chapters table's last column (core path and exercise), and ``**How long:**``.

A chapter is ``notebooks/NN_x.ipynb``; its exercise is ``solutions/NN_y.ipynb`` (the student's copy
in ``exercises/`` is generated from it and differs only in the regions the student writes). A
``## Deep dives`` heading ends the core path: what follows is the deep dives, until a ``## Check
your understanding`` heading. The knowledge check that closes a chapter is the core path's last
section: a student who skips the deep dives still takes it. Each ``## `` heading opens a section of
the core path, named by its number (``1.6``) or, without one, by its words up to a colon; the title
cell and whatever precedes the first heading are the section ``""``.

How a notebook is counted (every cell, in order), each count at its rate in ``PACE``:

* markdown: its ``words``; the lines of a fenced block inside it are ``code_lines``;
* a code cell: one of ``cells`` (run it, find its output), its non-blank source lines
  ``code_lines``;
* its output: ``output_lines`` (printed or displayed text; a rendered Markdown table by its lines,
  a formula as one line) and ``figures`` (a PNG, or an SVG drawing);
* a code cell that shows a widget (its last line ends in ``.widget``, it calls ``interact``, or its
  output holds a widget view) is one of ``panels``, its text form not read; the knowledge check's
  widget (``knowledge_check("NN")``) is its ``questions`` instead (as many as the chapter has in
  ``course/present/knowledge_questions.toml``);
* a code cell tagged ``packaged-model`` runs the real model that ships with the course: its
  ``model_calls`` (the number in the cell's metadata ``model_calls``, else
  ``MODEL_CALLS_UNSTATED``), and once per section one of ``model_starts``;
* an exercise's graded check cell (nbgrader ``grade`` or the ``check`` tag) is run and its verdict
  read: one of ``cells`` and its output; its source is the grader's, not the lesson, and not read;
* in an exercise, each region between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is one of
  ``parts``, and each non-blank line of the worked solution inside it one of ``written_lines``
  (written, not read).

The pace is calibrated on a measurement: ``TIMED`` holds what a student took, and
``tests/test_times.py`` holds the estimate to it. Where a chapter was timed on its own and the
counts above do not explain its time, the difference is that chapter's ``extra``, written in the
same table beside the measurement it comes from.
"""
from __future__ import annotations

import argparse
import io
import json
import re
import sys
import textwrap
import tokenize
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass(frozen=True)
class Rate:
    """One figure of a student's pace: how long one counted thing takes, and why."""
    value: float
    unit: str           # "words a minute", or "s" or "min" for each thing counted
    thing: str          # what one counted thing is, as the documents say it
    why: str

    @property
    def minutes(self) -> float:
        """Minutes for one counted thing."""
        if self.unit == "words a minute":
            return 1 / self.value
        return self.value / 60 if self.unit == "s" else self.value

    def text(self) -> str:
        if self.unit == "words a minute":
            return f"{self.thing} at {self.value:g} words a minute"
        return f"{self.value:g} {self.unit} per {self.thing}"


#: A student's pace: every figure the estimate uses, each key a count of ``Tally``. With these
#: figures the course's counts give what a student took (``TIMED``; tests/test_times.py).
PACE = {
    "words": Rate(150, "words a minute", "prose",
                  "careful reading of technical prose, well below the ~240 of non-fiction"),
    "code_lines": Rate(6, "s", "line of code read",
                       "code is read at about a third of prose speed, some 8 tokens a line"),
    "cells": Rate(20, "s", "cell run",
                  "run it, wait for the kernel, find its output on the screen"),
    "output_lines": Rate(3, "s", "line of output",
                         "output is skimmed for the value the prose points at"),
    "figures": Rate(60, "s", "figure", "read the axes, find the point the text makes"),
    "panels": Rate(2, "min", "panel played with",
                   "each control moved once or twice, and what changes watched"),
    "questions": Rate(45, "s", "knowledge-check question",
                      "some 75 words: the question, its choices, why the pick is right or wrong"),
    "parts": Rate(4, "min", "exercise part",
                  "read the stub and its hint, plan, run the check, fix once"),
    "written_lines": Rate(30, "s", "line the student writes",
                          "the hint above it says what; the student who timed it was quick here"),
    "model_calls": Rate(2, "s", "call to the packaged model",
                        "SmolLM2-135M, 30-80 tokens greedy: 1-2 s on a busy 2-core machine"),
    "model_starts": Rate(8, "s", "start of the packaged model",
                         "llama.cpp's server answered 5-8 s after it started, same machine"),
}
#: How many calls a ``packaged-model`` cell is counted for when its metadata does not say
#: (``"model_calls": N``): the chapters' model cells make from one call to a task set of 20 run
#: twice, so a cell that makes many should say how many.
MODEL_CALLS_UNSTATED = 10


@dataclass(frozen=True)
class Timed:
    """What a student took for the core path of a chapter or the course, or for the exercises."""
    sections: tuple[str, ...] = ()     # a chapter's core sections as timed (see section_key)
    low: float | None = None           # minutes: the least and the most the student took, when
    high: float | None = None          # this was timed on its own
    extra: float = 0.0                 # minutes the student took beyond what PACE counts


#: Each chapter's title, summary and closing knowledge check were timed with its sections (the
#: start page, 00, has no summary).
EVERY_CHAPTER = ("", "Summary", "Check your understanding")


def _numbered(chapter: int, last: int) -> tuple[str, ...]:
    return tuple(f"{chapter}.{n}" for n in range(1, last + 1)) + EVERY_CHAPTER


#: What a student measured: the core path of every chapter took 4 h 45 - 5 h 15, and chapters
#: 01, 07 and 08 each 10-15 min more than their stated times (then 30, 25 and 25 min, of a stated
#: 4 h 00 in all); every exercise together 2 h 20 - 2 h 30. The other chapters were timed only
#: within the course's total. A chapter's ``sections`` are its core path's as the pace was
#: calibrated on them (commit eb477c0). The counts in PACE do not tell 01, 07 and 08 from the
#: others (their prose, code, output, panels and questions are alike): no pace at all (any rates
#: for the counts, prose no faster than 250 words a minute) gives those three their 40, 35 and 35
#: min unless the course's core path comes to 5 h 23 or more, past the 5 h 15 measured (a linear
#: program over the counts of eb477c0 says so). What the student took beyond the counts is
#: written down instead, as those chapters' ``extra``. A section added since is not in
#: ``sections``: the estimate counts it on top, and the measurement stays what was measured.
TIMED = {
    "core path": Timed(low=285, high=315),
    "exercises": Timed(low=140, high=150),
    "00": Timed(("", "How to use the course", "Environment check", "The whole idea in one cell",
                 "The chapters", "Check your understanding")),
    "01": Timed(_numbered(1, 6), 40, 45, extra=11.0),
    "02": Timed(_numbered(2, 5)),
    "03": Timed(_numbered(3, 5)),
    "04": Timed(_numbered(4, 6)),
    "05": Timed(_numbered(5, 8)),
    "06": Timed(_numbered(6, 6)),
    "07": Timed(_numbered(7, 7), 35, 40, extra=7.7),
    "08": Timed(_numbered(8, 7), 35, 40, extra=6.3),
    "09": Timed(("The recordings, and how they are served", "1.", "2.", "3.", "4.", "5.",
                 "Your model, live", "The same boundary over MCP") + EVERY_CHAPTER),
}

DAY_AIM = 480         # minutes: a class day's work, the core path and the exercise of every chapter
DAY_START = 9 * 60    # the one-day plan starts at 09:00
#: The one-day plan's breaks: (clock time in minutes, what, minutes), each taken at the chapter
#: boundary nearest its time.
DAY_BREAKS = ((10 * 60 + 30, "break", 15), (12 * 60 + 30, "lunch", 60),
              (15 * 60 + 30, "break", 15))
SESSION = 120         # minutes: one session of a class that meets several times

DEEP_DIVES = "Deep dives"
CHECK = "Check your understanding"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
TIME_LINE = re.compile(r"^\*\*Time:\*\*.*$", re.M)
TABLE_BEGIN, TABLE_END = "<!-- chapter-times:begin -->", "<!-- chapter-times:end -->"
PLAN_BEGIN, PLAN_END = "<!-- day-plan:begin -->", "<!-- day-plan:end -->"
README_BEGIN, README_END = "<!-- chapters:begin -->", "<!-- chapters:end -->"
HOW_LONG = re.compile(r"^\*\*How long:\*\*.*?(?=\n\n)", re.M | re.S)
README_ROW = re.compile(r"^(\| (\d\d) \|.*\| )(\d+ min|–)( \|)$", re.M)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PICTURES = ("image/png", "image/svg+xml", "image/jpeg")
WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
SECTION_NUMBER = re.compile(r"\d+(\.\d+)*\.?")
KNOWLEDGE_CHECK = re.compile(r"""\bknowledge_check\(\s*["'](\d\d)["']""")
MODEL_TAG = "packaged-model"


def source_of(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _counted(text: str) -> set[int]:
    """The numbers of the lines worth a read: the first line of each statement, and the first line
    of each run of comment lines. The course fits its code to 100 characters, and a statement or a
    comment broken to fit is read (and typed) as the one it was."""
    lines = text.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {n for n, line in enumerate(lines, 1) if line.strip()}
    starts, fresh, previous_comment = set(), True, 0
    for token in tokens:
        if token.type in (tokenize.NEWLINE, tokenize.NL):
            fresh = token.type == tokenize.NEWLINE or fresh
        elif token.type == tokenize.COMMENT:
            row = token.start[0]
            if lines[row - 1].lstrip().startswith("#"):
                if previous_comment != row - 1:
                    starts.add(row)
                previous_comment = row
        elif token.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER) and fresh:
            starts.add(token.start[0])
            fresh = False
    return {n for n in starts if 0 < n <= len(lines) and lines[n - 1].strip()}


def _lines(text: str) -> int:
    return len(_counted(text))


@dataclass
class Tally:
    """What one stretch of cells holds; each field is counted at the rate of its name in PACE."""
    words: int = 0
    code_lines: int = 0
    cells: int = 0
    output_lines: int = 0
    figures: int = 0
    panels: int = 0
    questions: int = 0
    parts: int = 0
    written_lines: int = 0
    model_calls: int = 0
    model_starts: int = 0

    def minutes(self) -> float:
        return sum(getattr(self, name) * rate.minutes for name, rate in PACE.items())

    def add(self, other: Tally) -> Tally:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self


def shows_widget(cell: Any) -> bool:
    """A code cell that puts a widget on the screen."""
    lines = [line for line in source_of(cell).splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    if lines and re.search(r"\.widget\s*$", lines[-1]):
        return True
    if re.search(r"\binteract(ive)?\s*\(", source_of(cell)):
        return True
    return any(WIDGET_VIEW in output.get("data", {}) for output in cell.get("outputs", []))


def questions_in(cell: Any) -> int:
    """How many questions a knowledge-check cell asks (0 for any other cell)."""
    found = KNOWLEDGE_CHECK.search(source_of(cell))
    if not found:
        return 0
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from course.present.knowledge_check import quiz

    return len(quiz(found.group(1)).questions)


def model_calls_in(cell: Any) -> int:
    """How many calls to the packaged model a cell makes (0 unless tagged ``packaged-model``)."""
    meta = cell.get("metadata", {})
    if MODEL_TAG not in meta.get("tags", []):
        return 0
    stated = meta.get("model_calls")
    return stated if isinstance(stated, int) and stated > 0 else MODEL_CALLS_UNSTATED


def count_markdown(text: str, tally: Tally) -> None:
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
    tally.cells += 1
    tally.model_calls += model_calls_in(cell)
    if is_check(cell):          # the grader's check: run, and its verdict read, not its code
        count_outputs(cell, tally)
        return
    inside = False
    source = source_of(cell)
    counted = _counted(source)
    for number, line in enumerate(source.splitlines(), 1):
        text = line.strip()
        if text.startswith(BEGIN):
            inside = True
            tally.parts += 1
        elif text.startswith(END):
            inside = False
        elif text and number in counted:
            if inside:
                tally.written_lines += 1
            else:
                tally.code_lines += 1
    asked = questions_in(cell)
    if asked:
        tally.questions += asked
    elif shows_widget(cell):
        tally.panels += 1
    else:
        count_outputs(cell, tally)


def section_key(heading: str) -> str:
    """A section's name: the number of ``## 1.6 The path ladder`` (``1.6``), else its words up to
    a colon (``## Check your understanding: chapter 01``: ``Check your understanding``)."""
    words = heading.removeprefix("## ").strip()
    first = words.split()[0] if words else ""
    if SECTION_NUMBER.fullmatch(first):
        return first
    return words.split(":")[0].strip()


def markdown_parts(text: str) -> list[tuple[str | None, str]]:
    """A markdown cell cut at its ``## `` headings (outside fenced blocks): (section key, text),
    the key None for the text before the first heading."""
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in text.splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            parts.append((section_key(line), []))
        parts[-1][1].append(line)
    return [(key, "\n".join(lines)) for key, lines in parts if key is not None or lines]


def tally_cells(cells: list) -> tuple[dict[str, Tally], Tally]:
    """(the core path by section, the deep dives) of a notebook's cells."""
    sections: dict[str, Tally] = {"": Tally()}
    deep = Tally()
    current, section, started = sections[""], "", set()
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            for key, text in markdown_parts(source_of(cell)):
                if key == DEEP_DIVES:
                    current, section = deep, DEEP_DIVES
                elif key is not None and (current is not deep or key == CHECK):
                    section = key
                    current = sections.setdefault(key, Tally())
                count_markdown(text, current)
        elif cell.get("cell_type") == "code":
            count_code(cell, current)
            if model_calls_in(cell) and section not in started:   # the model starts once a section
                started.add(section)
                current.model_starts += 1
    return sections, deep


@dataclass
class Chapter:
    number: str
    path: Path
    title: str
    core: float                 # minutes, the core path: every section, and the chapter's extra
    deep: float
    exercise: float
    exercise_path: Path | None = None
    tallies: dict = field(default_factory=dict)
    sections: dict = field(default_factory=dict)   # minutes of each core section, by section key
    growth: float = 0.0         # minutes of core sections the student did not time (added since)

    @property
    def total(self) -> float:
        return self.core + self.deep + self.exercise

    @property
    def timed(self) -> float:
        """Minutes of the core path as it was timed: the timed sections and the extra."""
        return self.core - self.growth


def read_cells(path: Path) -> list:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def title_cell_index(cells: list) -> int | None:
    return next((i for i, c in enumerate(cells) if c.get("cell_type") == "markdown"), None)


def title_of(cells: list, fallback: str) -> str:
    i = title_cell_index(cells)
    lines = source_of(cells[i]).splitlines() if i is not None else []
    heading = next((line[2:].strip() for line in lines if line.startswith("# ")), "")
    heading = re.sub(r"^(Chapter\s+\d+\s*[—–:-]\s*|\d+\s*[·.:—–-]\s*)", "", heading)
    return heading or fallback


def estimate(path: Path, solutions: Path | None = None) -> Chapter:
    """The chapter at ``path``, and its exercise: the worked solution in ``solutions`` (same NN)."""
    number = path.name[:2]
    cells = read_cells(path)
    sections, deep = tally_cells(cells)
    core = Tally()
    for tally in sections.values():
        core.add(tally)
    tallies = {"core": core, "deep dives": deep}
    exercise, exercise_path = 0.0, None
    folder = solutions if solutions is not None else path.parent.parent / "solutions"
    matches = sorted(folder.glob(f"{number}_*.ipynb")) if folder.is_dir() else []
    if matches:
        exercise_path = matches[0]
        ex_sections, ex_deep = tally_cells(read_cells(exercise_path))
        ex = Tally()
        for tally in ex_sections.values():
            ex.add(tally)
        tallies["exercise"] = ex
        exercise = ex.minutes() + ex_deep.minutes()
    timed = TIMED.get(number, Timed())
    minutes = {key: tally.minutes() for key, tally in sections.items()}
    growth = sum(m for key, m in minutes.items() if key not in timed.sections)
    return Chapter(number, path, title_of(cells, path.stem), core.minutes() + timed.extra,
                   deep.minutes(), exercise, exercise_path, tallies, minutes, growth)


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


def clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def stated(ch: Chapter) -> tuple[int, int, int]:
    """(core path, deep dives, exercise) as every document states them: each to 5 minutes."""
    return round5(ch.core), round5(ch.deep), round5(ch.exercise)


def pace_text() -> str:
    """The pace, in one sentence, from PACE."""
    return "; ".join(rate.text() for rate in PACE.values())


def table_text(chs: list[Chapter]) -> str:
    """The table INSTRUCTORS.md holds between its markers (rows rounded as the Time lines are)."""
    rows = ["| chapter | core path | deep dives | exercise | core and exercise | total |",
            "|---|---:|---:|---:|---:|---:|"]
    for ch in chs:
        cells = list(stated(ch))
        rows.append(f"| {ch.number} {ch.title} | "
                    + " | ".join(f"{c} min" if c else "–" for c in cells)
                    + f" | {cells[0] + cells[2]} min | {sum(cells)} min |")
    sums = [sum(getattr(c, a) for c in chs) for a in ("core", "deep", "exercise")]
    rows.append("| **all** | " + " | ".join(f"**{hours(round5(m))}**" for m in sums)
                + f" | **{hours(round5(sums[0] + sums[2]))}** | **{hours(round5(sum(sums)))}** |")
    rows += ["", "The last row rounds the course's exact totals once; each row above is rounded on "
                 "its own, so the rows need not add up to it exactly. Estimated by "
                 f"`scripts/estimate_time.py` from the cells, at this pace: {pace_text()}."]
    return "\n".join(rows)


def day_blocks(chs: list[Chapter]) -> list[tuple[int, int, str, int]]:
    """The one-day plan: (from, to, what, minutes) in clock minutes, chapters and breaks in order.

    Each break is taken at the chapter boundary nearest its time in DAY_BREAKS."""
    blocks, now, breaks = [], DAY_START, list(DAY_BREAKS)
    for ch in chs:
        core, _, exercise = stated(ch)
        length = core + exercise
        while blocks and breaks and breaks[0][0] - now < now + length - breaks[0][0]:
            _, name, pause = breaks.pop(0)
            blocks.append((now, now + pause, name, pause))
            now += pause
        what = f"{ch.number} {ch.title}: the core path"
        what += ", then the exercise" if exercise else ""
        blocks.append((now, now + length, what, length))
        now += length
    return blocks


def sessions(chs: list[Chapter]) -> list[list[Chapter]]:
    """Whole chapters (core path and exercise) in order, in as few sessions of SESSION minutes as
    hold them, the longest as short as it can be (a chapter longer than a session has its own)."""
    minutes = [stated(c)[0] + stated(c)[2] for c in chs]
    count, used = 0, SESSION
    for m in minutes:                     # the fewest sessions: fill each in turn
        count, used = (count + 1, m) if used + m > SESSION else (count, used + m)

    def split(start: int, parts: int) -> tuple[int, list[int]]:
        """(the longest session, where each starts) for chapters[start:] in ``parts`` sessions."""
        if parts == 1:
            return sum(minutes[start:]), [start]
        best: tuple[int, list[int]] = (sum(minutes) + 1, [])
        for end in range(start + 1, len(minutes) - parts + 2):
            rest, starts = split(end, parts - 1)
            longest = max(sum(minutes[start:end]), rest)
            if longest < best[0]:
                best = (longest, [start] + starts)
        return best

    starts = split(0, min(count, len(chs)))[1] + [len(chs)]
    return [chs[a:b] for a, b in zip(starts, starts[1:])]


def plan_text(chs: list[Chapter]) -> str:
    """INSTRUCTORS.md's day plans (between their markers): one day, and a class in sessions."""
    blocks = day_blocks(chs)
    work = sum(m for _, _, what, m in blocks if what[:2].isdigit())
    pause = sum(m for _, _, what, m in blocks if not what[:2].isdigit())
    deep = round5(sum(ch.deep for ch in chs))
    out = [f"**One day.** The core path and the exercise of every chapter: {hours(work)} of work "
           f"and {hours(pause)} of breaks, from {clock(blocks[0][0])} to {clock(blocks[-1][1])}. "
           "Each break falls between two chapters, at the boundary nearest its time.", "",
           "| from | to | what | minutes |", "|---|---|---|---:|"]
    out += [f"| {clock(a)} | {clock(b)} | {what} | {m} |" for a, b, what, m in blocks]
    groups = sessions(chs)
    out += ["", f"**A class in sessions of {hours(SESSION)}.** Whole chapters, each with its core "
            f"path and exercise, in as few sessions as hold them ({len(groups)}), shared out as "
            "evenly as whole chapters allow. What a session leaves over is for questions and a "
            "short break.", "",
            "| session | chapters | core path | exercises | minutes | left over |",
            "|---:|---|---:|---:|---:|---:|"]
    for n, group in enumerate(groups, 1):
        core = sum(stated(c)[0] for c in group)
        exercise = sum(stated(c)[2] for c in group)
        names = ", ".join(c.number for c in group)
        out.append(f"| {n} | {names} | {core} min | {exercise} min | {core + exercise} min | "
                   f"{SESSION - core - exercise} min |")
    out += ["", f"The deep dives add about {hours(deep)}, for reading afterwards or a second day. "
            "Both plans add up the table's rows, so they change when it does "
            "(`python scripts/estimate_time.py --write`)."]
    return "\n".join(out)


def how_long_text(chs: list[Chapter]) -> str:
    """README.md's ``**How long:**`` paragraph, from the table's last row and the one-day plan."""
    core, deep = (round5(sum(getattr(c, a) for c in chs)) for a in ("core", "deep"))
    day = day_blocks(chs)
    both = round5(sum(c.core + c.exercise for c in chs))
    text = (f"**How long:** about {hours(core)} for the core of all {len(chs)} chapters, "
            f"{hours(both)} with every exercise (one long day, {clock(day[0][0])} to "
            f"{clock(day[-1][1])} with breaks); the optional deep dives add {hours(deep)}. "
            "The times are counted from the cells at a pace calibrated on a student who timed "
            "the course.")
    return textwrap.fill(text, width=117, break_on_hyphens=False)


def between(text: str, begin: str, end: str) -> tuple[int, int] | None:
    """Where the generated text goes (between the markers), or None without both markers."""
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        return None
    return start + len(begin), stop


def table_span(text: str) -> tuple[int, int] | None:
    return between(text, TABLE_BEGIN, TABLE_END)


def _replace(text: str, span: tuple[int, int] | None, new: str) -> str | None:
    return None if span is None else text[:span[0]] + "\n" + new + "\n" + text[span[1]:]


def instructors_with_table(text: str, chs: list[Chapter]) -> str | None:
    """INSTRUCTORS.md with its table and day plans written; None without the table's markers."""
    new = _replace(text, table_span(text), table_text(chs))
    if new is not None and between(new, PLAN_BEGIN, PLAN_END) is not None:
        new = _replace(new, between(new, PLAN_BEGIN, PLAN_END), plan_text(chs))
    return new


def readme_with_times(text: str, chs: list[Chapter]) -> str | None:
    """README.md with its chapters' times and ``**How long:**`` written; None without markers."""
    span = between(text, README_BEGIN, README_END)
    if span is None:
        return None
    by_number = {c.number: stated(c)[0] + stated(c)[2] for c in chs}

    def row(m: re.Match) -> str:
        minutes = f"{by_number[m.group(2)]} min" if m.group(2) in by_number else m.group(3)
        return m.group(1) + minutes + m.group(4)

    inside = README_ROW.sub(row, text[span[0]:span[1]])
    text = text[:span[0]] + inside + text[span[1]:]
    return HOW_LONG.sub(lambda _: how_long_text(chs), text, count=1)


def stated_table(text: str) -> dict[str, tuple[int, int, int]]:
    """INSTRUCTORS.md's table as it stands: chapter -> (core path, deep dives, exercise)."""
    span = table_span(text)
    row = r"^\| (\d\d) .+? \| (\d+) min \| (\d+ min|–) \| (\d+ min|–) \|"
    rows = re.findall(row, text[span[0]:span[1]], re.M) if span else []
    return {n: tuple(int(v.split()[0]) if v[0].isdigit() else 0 for v in (c, d, e))
            for n, c, d, e in rows}


def report(chs: list[Chapter], before: dict[str, tuple[int, int, int]] | None = None) -> str:
    """The exact estimate per chapter, how it stands against what was measured, and (given
    ``before``, the times INSTRUCTORS.md states) each stated time before and after ``--write``."""
    def name(ch: Chapter) -> str:
        return f"{ch.number} {ch.title[:40]}"

    out = [f"{'chapter':<44} {'core':>6} {'deep':>6} {'exer':>6} {'total':>6}   (minutes, exact)"]
    for ch in chs:
        out.append(f"{name(ch):<44} {ch.core:6.1f} {ch.deep:6.1f} {ch.exercise:6.1f} "
                   f"{ch.total:6.1f}")
    core, exercise = sum(c.core for c in chs), sum(c.exercise for c in chs)
    out.append(f"{'all':<44} {core:6.1f} {sum(c.deep for c in chs):6.1f} "
               f"{exercise:6.1f} {sum(c.total for c in chs):6.1f}")
    whole, tasks = TIMED["core path"], TIMED["exercises"]
    out.append(f"measured: core path {whole.low:g}-{whole.high:g} min; the estimate of what was "
               f"timed {sum(c.timed for c in chs):.1f}, added since "
               f"{sum(c.growth for c in chs):.1f}")
    out.append(f"measured: exercises {tasks.low:g}-{tasks.high:g} min; the estimate {exercise:.1f}")
    for ch in chs:
        timed = TIMED.get(ch.number)
        if timed and timed.high is not None:
            out.append(f"measured: {ch.number} {timed.low:g}-{timed.high:g} min; the estimate of "
                       f"what was timed {ch.timed:.1f} (extra {timed.extra:g}), added since "
                       f"{ch.growth:.1f}")
    day = core + exercise
    out.append(f"aim: core path with every exercise <= {DAY_AIM} min: {day:.0f} min "
               f"{'ok' if day <= DAY_AIM else 'missed'}")
    if before:
        out += ["", f"{'stated (minutes)':<44} {'core path':>10} {'deep dives':>10} "
                    f"{'exercise':>10}   (before -> after)"]
        sums = [[0, 0], [0, 0], [0, 0]]
        for ch in chs:
            was, now = before.get(ch.number, (0, 0, 0)), stated(ch)
            for i in range(3):
                sums[i][0] += was[i]
                sums[i][1] += now[i]
            out.append(f"{name(ch):<44} "
                       + " ".join(f"{was[i]:>4} ->{now[i]:>4}" for i in range(3)))
        out.append(f"{'all (sum of the rows)':<44} "
                   + " ".join(f"{a:>4} ->{b:>4}" for a, b in sums))
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


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def documents(root: Path = ROOT) -> dict[Path, Any]:
    """Each document that states times, and the function that writes them into its text."""
    return {root / "INSTRUCTORS.md": instructors_with_table, root / "README.md": readme_with_times}


def drifts(chs: list[Chapter], docs: list[Path] | None) -> list[str]:
    """Every stated time that differs from the estimate: the lines of ``chs``, and ``docs`` (each
    written from every chapter of the course it belongs to)."""
    problems = []
    for ch in chs:
        line = stated_line(ch.path)
        if line is None:
            problems.append(f"{_show(ch.path)}: the title cell has no **Time:** line "
                            f"(want: {time_line(ch)})")
        elif line != time_line(ch):
            problems.append(f"{_show(ch.path)}: states {line!r}, the estimate is {time_line(ch)!r}")
    for path in docs or []:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        new = documents(path.parent)[path](text, chapters(path.parent))
        if new is None:
            problems.append(f"{_show(path)}: no markers for its times (not checked)")
        elif new != text:
            problems.append(f"{_show(path)}: the times it states differ from the estimate")
    return problems


def model_cells(chs: list[Chapter]) -> list[str]:
    """One line per ``packaged-model`` cell: where it is, and the calls counted for it."""
    out = []
    for ch in chs:
        for path in (ch.path, ch.exercise_path):
            for cell in read_cells(path) if path else []:
                calls = model_calls_in(cell)
                if calls:
                    said = "model_calls" in cell.get("metadata", {})
                    out.append(f"model: {_show(path)} cell {cell.get('id', '?')}: {calls} calls "
                               f"({'as its metadata says' if said else 'not stated: the default'})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path,
                        help="chapters or documents to write or check (default: all)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true",
                      help="write the estimate everywhere a time is stated")
    mode.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 naming every drift")
    args = parser.parse_args(argv)
    everything = chapters()
    chosen, docs = everything, list(documents())
    if args.paths:
        wanted = {p.resolve() for p in args.paths}
        docs = [d for d in documents() if d.resolve() in wanted]
        wanted -= {d.resolve() for d in docs}
        chosen = [c for c in everything if c.path.resolve() in wanted]
        missing = wanted - {c.path.resolve() for c in chosen}
        if missing:
            parser.error("not a chapter (notebooks/NN_x.ipynb), INSTRUCTORS.md or README.md: "
                         + ", ".join(sorted(map(str, missing))))
    if args.check:
        problems = drifts(chosen, docs)
        for problem in problems:
            print("DRIFT", problem)
        print(f"{len(problems)} drift(s)" if problems
              else "every stated time agrees with the estimate")
        return 1 if problems else 0
    instructors = ROOT / "INSTRUCTORS.md"
    before = stated_table(instructors.read_text(encoding="utf-8")) if instructors.exists() else {}
    print(report(everything, before))
    for line in model_cells(everything):
        print(line)
    if args.write:
        for ch in chosen:
            if stated_line(ch.path) is None:
                print(f"skipped {_show(ch.path)}: its title cell has no **Time:** line")
            elif write_line(ch):
                print(f"wrote {_show(ch.path)}: {time_line(ch)}")
        for path in docs:
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            new = documents()[path](text, everything)
            if new is None:
                print(f"skipped {_show(path)}: it has no markers for its times")
            elif new != text:
                with open(path, "w", encoding="utf-8", newline="\n") as f:
                    f.write(new)
                print(f"wrote {_show(path)}: its times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
