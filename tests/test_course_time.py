"""Chapters 00-09: the stated times. Each chapter's **Time:** line, INSTRUCTORS.md's table and day
plans and README.md's times agree with scripts/estimate_time.py, the estimator counts cells the way
its docstring says, and a class day holds the core path and every exercise. (What the pace is
calibrated on: tests/test_times.py.)"""
import sys
from dataclasses import fields
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import estimate_time as est  # noqa: E402

CHAPTERS = est.chapters()


# ------------------------------------------------------------------ the course agrees with the script
@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.path.stem for c in CHAPTERS])
def test_the_stated_time_line_is_the_estimate(chapter):
    assert est.stated_line(chapter.path) == est.time_line(chapter), (
        f"run: python scripts/estimate_time.py --write {chapter.path.relative_to(ROOT)}")


def test_the_instructors_table_is_the_estimate():
    text = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    if est.table_span(text) is None:
        pytest.skip(f"INSTRUCTORS.md has no {est.TABLE_BEGIN} / {est.TABLE_END} markers yet, so no table to check")
    assert est.instructors_with_table(text, CHAPTERS) == text, "run: python scripts/estimate_time.py --write"
    for chapter in CHAPTERS:
        assert f"| {chapter.number} {chapter.title} |" in text


def test_the_documents_state_the_estimate():
    """INSTRUCTORS.md (table, day plans) and README.md (chapter times, **How long:**) as --write
    writes them."""
    docs = list(est.documents())
    assert est.drifts([], docs) == [], "run: python scripts/estimate_time.py --write"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert est.how_long_text(CHAPTERS) in readme


def test_the_report_gives_the_estimate_the_measurement_and_each_time_before_and_after(capsys):
    before = {c.number: (5, 5, 5) for c in CHAPTERS}
    text = est.report(CHAPTERS, before)
    core = sum(c.core for c in CHAPTERS)
    day = core + sum(c.exercise for c in CHAPTERS)
    assert f"core path with every exercise <= 480 min: {day:.0f} min" in text
    assert f"{core:6.1f}" in text.splitlines()[len(CHAPTERS) + 1]        # the "all" row
    assert "measured: core path 285-315 min" in text and "measured: 01 40-45 min" in text
    for ch in CHAPTERS:
        now = est.stated(ch)
        assert f"   5 ->{now[0]:>4}    5 ->{now[1]:>4}    5 ->{now[2]:>4}" in text, ch.number
    assert f"{5 * len(CHAPTERS):>4} ->{sum(est.stated(c)[0] for c in CHAPTERS):>4}" in text
    assert "before -> after" not in est.report(CHAPTERS)
    with capsys.disabled():
        print("\n" + est.report(CHAPTERS, est.stated_table(
            (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8"))))


def test_a_class_day_holds_the_core_path_and_every_exercise():
    """The core path and the exercise of every chapter within a day's work (the deep dives are
    optional reading: their total is reported, not held to the day)."""
    day = sum(c.core + c.exercise for c in CHAPTERS)
    assert day <= est.DAY_AIM, f"core and exercises {day:.0f} min (aim {est.DAY_AIM})"


# ------------------------------------------------------------------ the pace
def test_every_figure_of_the_pace_is_counted_and_has_a_reason():
    assert list(est.PACE) == [f.name for f in fields(est.Tally)]
    for name, rate in est.PACE.items():
        assert rate.value > 0 and rate.unit in ("words a minute", "s", "min"), name
        assert len(rate.why) >= 20, f"{name} has no reason"
        assert rate.text() in est.pace_text()
    assert est.Tally(words=150, cells=3).minutes() == pytest.approx(
        150 * est.PACE["words"].minutes + 3 * est.PACE["cells"].minutes)


def test_the_pace_is_plausible_for_a_student():
    pace = {name: rate.minutes for name, rate in est.PACE.items()}
    assert 100 <= est.PACE["words"].value <= 250       # technical prose: slower than fiction
    assert pace["code_lines"] > pace["words"]          # a line of code takes longer than a word
    assert pace["written_lines"] > pace["code_lines"] > pace["output_lines"]   # write > read > skim
    assert pace["panels"] > pace["cells"] and pace["parts"] > pace["written_lines"]
    assert pace["questions"] >= 50 * pace["words"]     # a question and its choices: 50 words
    assert 0.5 <= est.PACE["model_calls"].value <= 10 and est.PACE["model_calls"].unit == "s"


# ------------------------------------------------------------------ the counting rules, on tiny notebooks
WORDS_150 = " ".join(["word"] * 150)


def _chapter(tmp_path, with_exercise=True):
    notebooks, solutions = tmp_path / "notebooks", tmp_path / "solutions"
    notebooks.mkdir()
    solutions.mkdir()
    nb = new_notebook(cells=[
        new_markdown_cell("# 01 · Tiny\n\n**In this chapter you will**\n\n- count\n\n**Time:** about ? min"),
        new_markdown_cell(WORDS_150 + "\n\n```\nfenced 1\nfenced 2\n```\n\nSee [the link](http://a.b/c/d)."),
        new_code_cell("x = 1\n\ny = 2\nprint(x, y)",
                      outputs=[new_output("stream", name="stdout", text="a\nb\nc\n\nd\n")]),
        new_code_cell("panel = Panel()\npanel.widget",
                      outputs=[new_output("execute_result", data={"text/plain": "VBox(\nchildren)"},
                                          execution_count=2)]),
        new_code_cell("plot()", outputs=[new_output("display_data", data={"image/png": "iVBOR",
                                                                          "text/plain": "<Figure>"})]),
        new_markdown_cell("## Deep dives\n\nthree more words"),
        new_code_cell("z = 3", outputs=[new_output("execute_result", data={"text/plain": "1\n2"},
                                                   execution_count=4)]),
    ])
    path = notebooks / "01_tiny.ipynb"
    nbformat.write(nb, path)
    if with_exercise:
        ex = new_notebook(cells=[
            new_markdown_cell("# Exercise 1\n\n" + " ".join(["do"] * 30)),
            new_code_cell("def f(a):\n    # return the double\n    ### BEGIN SOLUTION\n    b = a * 2\n\n"
                          "    return b\n    ### END SOLUTION"),
            new_code_cell("assert f(2) == 4\nprint('ok')", metadata={"tags": ["check"]},
                          outputs=[new_output("stream", name="stdout", text="ok\n")]),
        ])
        nbformat.write(ex, solutions / "01_tiny_exercise.ipynb")
    return path


def test_cells_are_counted_as_the_docstring_says(tmp_path):
    ch = est.estimate(_chapter(tmp_path))
    core, deep, ex = ch.tallies["core"], ch.tallies["deep dives"], ch.tallies["exercise"]
    title_words = len(est.WORD.findall("01 · Tiny In this chapter you will count Time: about ? min"))
    assert core.words == title_words + 150 + 3           # "See", "the", "link": the address is not read
    assert core.code_lines == 2 + 3 + 2 + 1               # fenced lines, then each code cell's non-blank lines
    # the panel's text form is not read; the deep dives' marker cell counts in them
    assert (core.cells, core.output_lines, core.figures, core.panels) == (3, 4, 1, 1)
    assert (deep.words, deep.cells, deep.code_lines, deep.output_lines) == (5, 1, 1, 2)
    assert (ex.parts, ex.written_lines, ex.code_lines, ex.cells, ex.output_lines) == (1, 2, 2, 2, 1)
    assert ex.words == 2 + 30
    pace = {name: rate.minutes for name, rate in est.PACE.items()}
    extra = est.TIMED["01"].extra                 # the file is named 01_: chapter 01's extra
    assert ch.core == pytest.approx(core.words * pace["words"] + 3 * pace["cells"]
                                    + 8 * pace["code_lines"] + 4 * pace["output_lines"]
                                    + pace["figures"] + pace["panels"] + extra)
    assert ch.deep == pytest.approx(5 * pace["words"] + pace["cells"] + pace["code_lines"]
                                    + 2 * pace["output_lines"])
    assert ch.exercise == pytest.approx(32 * pace["words"] + 2 * pace["cells"]
                                        + 2 * pace["code_lines"] + pace["output_lines"]
                                        + pace["parts"] + 2 * pace["written_lines"])
    assert ch.total == pytest.approx(ch.core + ch.deep + ch.exercise)
    assert ch.title == "Tiny"


def test_without_a_deep_dive_marker_everything_is_core(tmp_path):
    path = _chapter(tmp_path, with_exercise=False)
    nb = nbformat.read(path, as_version=4)
    nb.cells[5].source = "### Not the marker\n\nthree more words"     # a heading, but not "## Deep dives"
    nbformat.write(nb, path)
    ch = est.estimate(path)
    assert ch.deep == 0 and ch.exercise == 0 and ch.exercise_path is None
    assert ch.tallies["core"].cells == 4


def test_interact_and_a_widget_view_count_as_widgets():
    assert est.shows_widget(new_code_cell("interact(f, x=3)"))
    assert est.shows_widget(new_code_cell("show()", outputs=[new_output(
        "display_data", data={est.WIDGET_VIEW: {"model_id": "m"}, "text/plain": "IntSlider()"})]))
    assert est.shows_widget(new_code_cell("p = P()\np.widget\n# look at it"))
    assert not est.shows_widget(new_code_cell("print(panel.widget.value)"))


def test_displays_count_as_what_the_student_sees():
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    cell = new_code_cell("show()", outputs=[
        new_output("display_data", data={"text/markdown": table, "text/plain": "<Markdown object>"}),
        new_output("display_data", data={"text/latex": "$$d_n = d_0 \\beta^n$$", "text/plain": "<Math object>"}),
        new_output("display_data", data={"text/html": "<div><svg width='10'></svg></div>", "text/plain": "<HTML>"}),
        new_output("error", ename="ValueError", evalue="bad", traceback=["line 1", "line 2"])])
    tally = est.Tally()
    est.count_code(cell, tally)
    assert (tally.output_lines, tally.figures) == (3 + 1 + 3, 1)   # table rows, one formula, error + traceback


def test_a_graded_check_is_run_not_read():
    check = new_code_cell("x = 1\ny = 2\nassert x < y\nprint('ok')", metadata={"nbgrader": {"grade": True}},
                          outputs=[new_output("stream", name="stdout", text="ok\n")])
    tally = est.Tally()
    est.count_code(check, tally)
    assert (tally.cells, tally.code_lines, tally.output_lines) == (1, 0, 1)


def test_rounding_and_the_time_line():
    assert [est.round5(m) for m in (0, 0.4, 2.4, 7.4, 7.5, 26.0, 31.2)] == [0, 5, 5, 5, 10, 25, 30]
    ch = est.Chapter("06", Path("x"), "T", core=26.0, deep=14.0, exercise=31.0)
    assert est.time_line(ch) == ("**Time:** about 25 min for the core path, 15 min more for the deep dives; "
                                 "the exercise about 30 min.")
    assert est.time_line(est.Chapter("00", Path("x"), "T", 12.0, 0, 0)) == "**Time:** about 10 min for the core path."


def test_write_changes_only_the_time_line_and_check_then_agrees(tmp_path):
    path = _chapter(tmp_path)
    before = nbformat.read(path, as_version=4)
    ch = est.estimate(path)
    assert est.drifts([ch], None) and est.stated_line(path) == "**Time:** about ? min"
    assert est.write_line(ch) is True
    after = nbformat.read(path, as_version=4)
    assert est.stated_line(path) == est.time_line(ch)
    assert after.cells[0].source.replace(est.time_line(ch), "**Time:** about ? min") == before.cells[0].source
    assert [c.source for c in after.cells[1:]] == [c.source for c in before.cells[1:]]
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]
    assert est.drifts([est.estimate(path)], None) == []
    assert est.write_line(est.estimate(path)) is False            # a second write changes nothing


def test_a_chapter_without_a_time_line_is_a_drift(tmp_path):
    path = _chapter(tmp_path)
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source = "# 01 · Tiny"
    nbformat.write(nb, path)
    (problem,) = est.drifts([est.estimate(path)], None)
    assert "no **Time:** line" in problem


def test_the_instructors_table_goes_between_the_markers_only(tmp_path):
    ch = est.estimate(_chapter(tmp_path))
    text = f"before\n{est.TABLE_BEGIN}\nold table\n{est.TABLE_END}\nafter\n"
    new = est.instructors_with_table(text, [ch])
    assert new.startswith(f"before\n{est.TABLE_BEGIN}\n| chapter |") and new.endswith(f"{est.TABLE_END}\nafter\n")
    assert "old table" not in new and f"| 01 Tiny | {est.round5(ch.core)} min |" in new
    assert est.instructors_with_table(new, [ch]) == new
    two = est.table_text([ch, est.Chapter("02", Path("y"), "Two", core=61.0, deep=0.0, exercise=12.0)])
    total = [r for r in two.splitlines() if r.startswith("| **all**")][0]
    assert total.startswith(f"| **all** | **{est.hours(est.round5(ch.core + 61.0))}** |"), "exact sum, rounded once"
    assert "| 02 Two | 60 min | – | 10 min | 70 min |" in two
    assert est.instructors_with_table("no markers here\n", [ch]) is None
    instructors = tmp_path / "INSTRUCTORS.md"
    instructors.write_text(text, encoding="utf-8")
    problems = est.drifts([], [instructors])
    assert any("INSTRUCTORS.md: the times it states differ" in p for p in problems)
