"""Chapters 00-09: a chapter's knowledge check, answered in a real page, in JupyterLab and in Voila.

Chapter 02 shows its legality panel and, at its end, its knowledge check. Run all (or served by
Voila), a student picks a wrong answer to the first question and then the right one: the page must
show each verdict with its reason, light the question red and then green, count the right answer,
and the menu (the widget's model, through the page) must hold the letter picked. Every wait is on
what the page shows, never on a clock.

The check is put into the notebook by ``scripts/add_knowledge_checks.py``: a notebook without it
fails here with that instruction.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import browser_harness as harness
import widget_driver as drive
from knowledge_steps import ANSWER, answer_steps, carries_check
from widget_chapters import ROOT

CHAPTER, NAME = "02", "02_contracts_and_legality"
CLAIM = "the chapter 02 check says why a wrong and then the right answer are wrong and right"

#: The letter a ``<select>`` shows as chosen is the widget model's value, as the page renders it.
CHOSEN = """([box, label]) => { const s = box.querySelector('select');
  return !!s && s.selectedIndex >= 0 && s.options[s.selectedIndex].text === label; }"""


def needs_the_check() -> None:
    if not carries_check(ROOT / "notebooks" / f"{NAME}.ipynb"):
        pytest.fail(f"notebooks/{NAME}.ipynb has no knowledge check: run "
                    "python scripts/add_knowledge_checks.py, then scripts/run_notebooks.py", pytrace=False)


def answer_wrong_then_right(page, front_end: str, artifacts: Path) -> None:
    wrong, right = answer_steps(CHAPTER, 0)
    display = drive.display_of(page, wrong)
    display.first.wait_for(state="attached", timeout=drive.WAIT_MS)
    assert display.count() == 1, f"expected one knowledge check around {ANSWER!r}"
    drive.wait_until_shown(page, display, (f"chapter {CHAPTER}, question 1 of", "your answer: none yet",
                                           "score: 0 of"), what=f"{NAME} ({front_end}) before answering")
    for number, step in enumerate((wrong, right), 1):
        text = drive.do_step(page, step, f"{NAME} ({front_end}): {CLAIM}")
        box = drive.control_box(page, step)
        page.wait_for_function(CHOSEN, arg=[box.element_handle(), str(step.value)],
                               timeout=drive.WAIT_MS, polling=20)
        assert ("score: 1 of" in text) == (step is right), text
        assert display.locator(".tk-text").is_visible(), "the question and the verdict are on the page"
        box.locator(drive.PANEL_BOX).screenshot(path=str(artifacts / f"{front_end}-check-{number}.png"))


def test_a_wrong_then_the_right_answer_in_lab(lab_page, artifacts: Path):
    needs_the_check()
    drive.open_in_lab(lab_page, NAME)
    try:
        drive.run_all_in_lab(lab_page)
        answer_wrong_then_right(lab_page, "lab", artifacts)
    finally:
        drive.close_in_lab(lab_page)


def test_a_wrong_then_the_right_answer_in_voila(voila_ready, course: Path, scratch: Path, page,
                                               artifacts: Path):
    needs_the_check()
    server = harness.Voila(course, NAME, scratch / "voila-check")
    try:
        page.goto(server.url, timeout=drive.RUN_ALL_MS)   # Voila runs every cell first
        shown = page.evaluate("document.body.textContent")
        assert "Traceback (most recent call last)" not in shown, f"{NAME}: a cell failed in Voila"
        assert "knowledge_check(" not in page.locator("body").inner_text(), "Voila shows code"
        answer_wrong_then_right(page, "voila", artifacts)
    finally:
        page.close()                                  # leave the kernel's socket before the server goes
        left = server.stop()
        assert not left, f"processes outlived Voila: {[harness.command_line(p) for p in left]}"
