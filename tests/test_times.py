"""Chapters 00-09: times that hold. The estimator's pace reproduces what a student measured, and
INSTRUCTORS.md's day plans add up to its table.

The measurement is ``TIMED`` in scripts/estimate_time.py, the one table of what a student took:
the core path of every chapter, three chapters on their own, and every exercise together. These
tests hold the estimate of what was timed to it, so a change that moves a chapter's estimate out
of what the student took fails here, loudly. A section added since (a new ``## `` heading) is not
what was timed: the estimate counts it on top, and these tests leave it out.

When a test here fails, update honestly:

* you cut or lengthened a timed section: cut it back, or move the new material into a section of
  its own (a new heading: it is counted on top of the measurement, as growth);
* you renamed a timed section: rename it in ``TIMED`` (its ``sections``), nothing else;
* the course has changed enough to need timing again: time it with a student and write the new
  ranges into ``TIMED``, with the sections as timed, and recompute each ``extra``: what puts PACE's
  count of the chapter a tenth of a minute above the middle of its new range (so its stated time
  rounds to the range's top, a time that holds). Never widen a range, change an ``extra`` or a
  figure of PACE just to fit the estimate: the range is what a student took, not what the
  estimate says.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import estimate_time as est  # noqa: E402

CHAPTERS = est.chapters()
BY_NUMBER = {c.number: c for c in CHAPTERS}
HOW_TO_UPDATE = "see tests/test_times.py's docstring for how to update honestly"


# ------------------------------------------------------------------ the calibration
@pytest.mark.parametrize("name, part, what", [
    ("core path", "timed", "the core path as timed"),
    ("exercises", "exercise", "every exercise together"),
], ids=["core-path", "exercises"])
def test_the_whole_course_as_timed_is_what_the_student_took(name, part, what):
    """The core path as timed, and every exercise together: each chapter's part, summed."""
    measured = est.TIMED[name]
    total = sum(getattr(c, part) for c in CHAPTERS)
    assert measured.low <= total <= measured.high, (
        f"{what} is estimated at {total:.1f} min; a student took {measured.low:g}-"
        f"{measured.high:g} min ({HOW_TO_UPDATE})")


@pytest.mark.parametrize("number", [n for n, t in est.TIMED.items() if n.isdigit()
                                    and t.high is not None])
def test_each_chapter_timed_on_its_own_is_what_the_student_took(number):
    measured, ch = est.TIMED[number], BY_NUMBER[number]
    assert measured.low <= ch.timed <= measured.high, (
        f"chapter {number}'s core path as timed is estimated at {ch.timed:.1f} min (sections: "
        + ", ".join(f"{k or 'title'} {m:.1f}" for k, m in ch.sections.items())
        + f"); a student took {measured.low:g}-{measured.high:g} min ({HOW_TO_UPDATE})")
    assert est.stated(ch)[0] >= measured.low, "a stated time below what the student took"


def test_the_measurement_names_what_the_course_holds():
    """Every chapter was timed; every timed section still exists (a rename is renamed in TIMED);
    an ``extra`` stands only beside a measurement of that chapter alone, and stays within it."""
    assert {c.number for c in CHAPTERS} <= set(est.TIMED)
    for ch in CHAPTERS:
        timed = est.TIMED[ch.number]
        missing = [s for s in timed.sections if s not in ch.sections]
        assert not missing, f"chapter {ch.number}: timed sections gone or renamed: {missing}"
        assert timed.extra == 0 or timed.high is not None, f"{ch.number}: an extra with no measure"
        assert 0 <= timed.extra < (timed.low or 1), f"{ch.number}: the extra is not what it says"
    for name in ("core path", "exercises"):
        assert est.TIMED[name].low < est.TIMED[name].high


def test_the_old_figures_were_short_by_what_the_student_says():
    """The student's account: every chapter's core path took longer than stated (4 h 00 in all),
    01, 07 and 08 by 10-15 min each (their figures were 30, 25 and 25 min); the exercises
    less (the estimate stated 3 h 20)."""
    old = {"01": 30, "07": 25, "08": 25}
    for number, minutes in old.items():
        t = est.TIMED[number]
        assert (t.low, t.high) == (minutes + 10, minutes + 15)
    assert est.TIMED["core path"].low > 240 and est.TIMED["exercises"].high < 200


# ------------------------------------------------------------------ growth, the model, the check
def _notebook(path: Path, cells: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells), path)
    return path


def test_a_new_section_is_growth_and_the_timed_estimate_stays(tmp_path):
    timed_cells = [new_markdown_cell("# 01 · Tiny\n\n**Time:** about ? min"),
                   new_markdown_cell("## 1.1 A timed section\n\n" + " ".join(["word"] * 300))]
    before = est.estimate(_notebook(tmp_path / "a" / "notebooks" / "01_tiny.ipynb", timed_cells))
    after = est.estimate(_notebook(tmp_path / "b" / "notebooks" / "01_tiny.ipynb", timed_cells + [
        new_markdown_cell("## 1.9 A section added later\n\n" + " ".join(["word"] * 150)),
        new_code_cell("x = 1", outputs=[])]))
    assert before.growth == 0 and set(before.sections) == {"", "1.1"}
    words = 150 + len(est.WORD.findall("## 1.9 A section added later"))
    added = (words * est.PACE["words"].minutes + est.PACE["cells"].minutes
             + est.PACE["code_lines"].minutes)            # its heading, prose, one cell, one line
    assert after.growth == pytest.approx(added)
    assert after.timed == pytest.approx(before.timed) and after.core == pytest.approx(
        before.core + added)


def test_a_packaged_model_cell_counts_its_calls_and_one_start_a_section(tmp_path):
    def model_cell(source: str, calls: int | None = None):
        cell = new_code_cell(source, metadata={"tags": ["packaged-model", "nbval-ignore-output"]})
        if calls is not None:
            cell.metadata["model_calls"] = calls
        return cell

    cells = [new_markdown_cell("# 03 · Tiny\n\n## 3.1 One"),
             model_cell("run(tasks)", calls=40), model_cell("run(more)"),
             new_markdown_cell("## 3.2 Two"), model_cell("run(one)", calls=1),
             new_code_cell("plain()")]
    ch = est.estimate(_notebook(tmp_path / "model" / "notebooks" / "03_tiny.ipynb", cells))
    for cell in cells:
        cell.metadata.pop("tags", None)
    without = est.estimate(_notebook(tmp_path / "none" / "notebooks" / "03_tiny.ipynb", cells))
    core = ch.tallies["core"]
    calls = 40 + est.MODEL_CALLS_UNSTATED + 1
    assert (core.model_calls, core.model_starts, core.cells) == (calls, 2, 4)
    call, start = est.PACE["model_calls"].minutes, est.PACE["model_starts"].minutes
    assert ch.core - without.core == pytest.approx(calls * call + 2 * start)
    assert ch.sections["3.1"] - ch.sections["3.2"] == pytest.approx(
        (40 + est.MODEL_CALLS_UNSTATED - 1) * call)
    lines = est.model_cells([ch])
    assert len(lines) == 3 and sum("not stated: the default" in line for line in lines) == 1


def test_the_knowledge_check_closes_the_core_path_after_the_deep_dives(tmp_path):
    from course.present.knowledge_check import quiz

    path = _notebook(tmp_path / "notebooks" / "02_tiny.ipynb", [
        new_markdown_cell("# 02 · Tiny"),
        new_markdown_cell("## Deep dives\n\nthree more words"),
        new_code_cell("panel.widget", outputs=[new_output(
            "execute_result", data={"text/plain": "VBox()"}, execution_count=1)]),
        new_markdown_cell("## Check your understanding: chapter 02\n\nFour questions."),
        new_code_cell('from course.present.knowledge_check import knowledge_check\n\n'
                      'knowledge_check("02").widget')])
    ch = est.estimate(path)
    core, deep = ch.tallies["core"], ch.tallies["deep dives"]
    assert core.questions == len(quiz("02").questions) and core.panels == 0
    assert (deep.panels, deep.questions) == (1, 0)
    assert "Check your understanding" in ch.sections and ch.sections["Check your understanding"] > (
        core.questions * est.PACE["questions"].minutes)


# ------------------------------------------------------------------ the day plans add up
def _region(begin: str, end: str) -> str:
    text = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    span = est.between(text, begin, end)
    assert span, f"INSTRUCTORS.md has no {begin} ... {end}"
    return text[span[0]:span[1]]


def _table_rows() -> dict[str, tuple[int, int, int, int]]:
    """INSTRUCTORS.md's chapter-times table: chapter -> (core, deep, exercise, core + exercise)."""
    rows = re.findall(r"^\| (\d\d) .+? \| (\d+) min \| (\d+ min|–) \| (\d+ min|–) \| (\d+) min \|",
                      _region(est.TABLE_BEGIN, est.TABLE_END), re.M)
    def minutes(v: str) -> int:
        return int(v.split()[0]) if v[0].isdigit() else 0
    return {n: (int(c), minutes(d), minutes(e), int(b)) for n, c, d, e, b in rows}


def _minutes(clock: str) -> int:
    h, m = clock.split(":")
    return int(h) * 60 + int(m)


def test_the_one_day_plan_adds_up_the_table_and_its_breaks():
    table = _table_rows()
    assert list(table) == [c.number for c in CHAPTERS]
    plan = _region(est.PLAN_BEGIN, est.PLAN_END)
    rows = re.findall(r"^\| (\d\d:\d\d) \| (\d\d:\d\d) \| (.+?) \| (\d+) \|$", plan, re.M)
    chapters = [(what[:2], int(m)) for _, _, what, m in rows if what[:2].isdigit()]
    breaks = [int(m) for _, _, what, m in rows if not what[:2].isdigit()]
    assert [n for n, _ in chapters] == list(table), "every chapter once, in order"
    assert all(m == table[n][3] for n, m in chapters), "a block is the row's core and exercise"
    assert all(b - a == int(m) for a, b, _, m in [(_minutes(f), _minutes(t), w, m)
                                                 for f, t, w, m in rows])
    assert all(_minutes(rows[i][1]) == _minutes(rows[i + 1][0]) for i in range(len(rows) - 1))
    work = sum(m for _, m in chapters)
    assert work == sum(r[0] + r[2] for r in table.values())
    assert _minutes(rows[-1][1]) - _minutes(rows[0][0]) == work + sum(breaks)
    assert sum(breaks) == sum(b[2] for b in est.DAY_BREAKS)
    assert f"{est.hours(work)} of work and {est.hours(sum(breaks))} of breaks" in plan
    all_row = re.search(r"^\| \*\*all\*\* \|.*\| \*\*(.+?)\*\* \| \*\*.+?\*\* \|$",
                        _region(est.TABLE_BEGIN, est.TABLE_END), re.M).group(1)
    assert all_row == est.hours(est.round5(sum(c.core + c.exercise for c in CHAPTERS)))
    assert abs(work - est.round5(sum(c.core + c.exercise for c in CHAPTERS))) <= 5 * len(table)


def test_the_sessions_hold_every_chapter_once_and_add_up():
    table = _table_rows()
    plan = _region(est.PLAN_BEGIN, est.PLAN_END)
    row = r"^\| (\d+) \| ([\d, ]+) \| (\d+) min \| (\d+) min \| (\d+) min \| (-?\d+) min \|$"
    rows = re.findall(row, plan, re.M)
    assert rows, "no sessions table"
    numbers = [n for _, names, *_ in rows for n in names.split(", ")]
    assert numbers == list(table)
    for _, names, core, exercise, both, left in rows:
        group = names.split(", ")
        assert int(core) == sum(table[n][0] for n in group)
        assert int(exercise) == sum(table[n][2] for n in group)
        assert int(both) == int(core) + int(exercise) and int(left) == est.SESSION - int(both)
        assert int(both) <= est.SESSION or len(group) == 1
    assert sum(int(r[4]) for r in rows) == sum(r[0] + r[2] for r in table.values())
    fewest = len(est.sessions(CHAPTERS))
    assert len(rows) == fewest and f"as hold them ({fewest})" in " ".join(plan.split())


def test_sessions_share_out_evenly_and_a_long_chapter_sits_alone():
    def chapter(number: str, minutes: int):
        return est.Chapter(number, Path(number), "T", core=minutes, deep=0, exercise=0)

    even = est.sessions([chapter(f"{n:02d}", 40) for n in range(6)])
    assert [len(g) for g in even] == [3, 3]
    uneven = est.sessions([chapter("00", 10), chapter("01", 150), chapter("02", 60),
                           chapter("03", 50)])
    assert [[c.number for c in g] for g in uneven] == [["00"], ["01"], ["02", "03"]]


def test_the_readme_states_the_same_day():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = est.day_blocks(CHAPTERS)
    how_long = " ".join(readme.split("**How long:**", 1)[1].split("\n\n", 1)[0].split())
    assert f"{est.clock(blocks[0][0])} to {est.clock(blocks[-1][1])} with breaks" in how_long
    assert est.hours(est.round5(sum(c.core for c in CHAPTERS))) in how_long
