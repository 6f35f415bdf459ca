"""The course in JupyterLab, in a real headless Chromium.

* The README's "open the course" command brings up a server that sends the browser to the
  start page, and the start page renders and runs (what else a newcomer sees first is in
  ``test_first_run.py``).
* Every chapter notebook that shows a widget is opened, run top to bottom, and its widget is
  operated through the page (tick, move, pick); the widget's display must change as the
  chapter says (``widget_chapters.CHAPTERS``). A widget notebook without an entry there fails.
* Each widget's click-to-update latency is measured over 20 inputs and recorded.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import widget_driver as drive
from widget_chapters import CHAPTERS, ROOT, chapter_for, known_broken, start_page_title, widget_notebooks

WIDGET_NOTEBOOKS = widget_notebooks()
CLICKS = 20


# ------------------------------------------------------------------ no browser needed
def test_every_widget_notebook_has_operations():
    assert WIDGET_NOTEBOOKS, "no chapter notebook shows a widget: the discovery found nothing"
    missing = sorted(set(WIDGET_NOTEBOOKS) - set(CHAPTERS))
    # an entry may be written before its chapter exists, but not for a notebook that shows no widget
    stale = sorted(name for name in set(CHAPTERS) - set(WIDGET_NOTEBOOKS)
                   if (ROOT / "notebooks" / f"{name}.ipynb").exists())
    assert not missing, f"widget notebooks with no operations in widget_chapters.CHAPTERS: {missing}"
    assert not stale, f"CHAPTERS entries for notebooks that show no widget: {stale}"
    for name, chapter in CHAPTERS.items():
        assert chapter.steps and all(step.shows for step in chapter.steps), f"{name}: every step must check the page"
        assert chapter.flip[0].label == chapter.flip[1].label, f"{name}: the timed flip works one control"
        assert any(step.draws for step in chapter.steps), f"{name}: no step checks what the panel draws"


# ------------------------------------------------------------------ the start page
def test_the_readme_command_opens_the_start_page(lab, lab_page, artifacts: Path):
    page = lab_page                            # opened at the address the server gave the browser
    first = drive.FIRST_RUN["_first address"]   # what the tab showed first (it is shared by the run)
    assert re.search(drive.START_PAGE_ADDRESS, first), f"the README's command landed on {first}"
    drive.open_in_lab(page, "00_start_here")   # in front again (other tests use this tab too)
    heading = page.get_by_role("heading", name=start_page_title())
    heading.wait_for(state="visible", timeout=drive.WAIT_MS)
    drive.run_all_in_lab(page)
    shown = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())   # what the cells printed
    # the environment check ran in the browser's kernel and found nothing missing or too old
    assert re.search(r"toolkit \S+ imported", shown), shown
    for trouble in ("MISSING", "too old", "not installed", "Traceback"):
        assert trouble not in shown, f"the start page reports a problem ({trouble!r}):\n{shown}"
    page.screenshot(path=str(artifacts / "lab-00_start_here.png"))
    drive.close_in_lab(page)


# ------------------------------------------------------------------ every widget, operated
@pytest.mark.parametrize("name", [pytest.param(name, marks=known_broken(name)) for name in WIDGET_NOTEBOOKS])
def test_widget_in_lab(name: str, lab_page, artifacts: Path):
    chapter = chapter_for(name)
    page = lab_page
    drive.open_in_lab(page, name)
    try:
        drive.run_all_in_lab(page)
        display = drive.display_of(page, chapter.steps[0])
        display.first.wait_for(state="attached", timeout=drive.WAIT_MS)
        assert display.count() == 1, f"{name}: expected one panel around {chapter.steps[0].label!r}"
        drive.wait_until_shown(page, display, chapter.first, what=f"{name} after run all")
        summary = drive.operate(page, display, chapter, "lab", name, artifacts, CLICKS)
        print(f"{name}: click-to-update median {summary['median_ms']} ms, worst {summary['worst_ms']} ms")
    finally:
        drive.close_in_lab(page)
