"""The course's widgets in Voila: the instructor's projector view, code hidden.

Each widget notebook is served by ``voila notebooks/<name>.ipynb --no-browser`` (what
INSTRUCTORS.md tells an instructor to run), opened in headless Chromium, and its widget is
operated exactly as in the JupyterLab tests: the display must change as the chapter says.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import browser_harness as harness
import widget_driver as drive
from widget_chapters import chapter_for, known_broken, widget_notebooks

CLICKS = 20


@pytest.mark.parametrize("name", [pytest.param(name, marks=known_broken(name)) for name in widget_notebooks()])
def test_widget_in_voila(name: str, voila_ready, course: Path, scratch: Path, page, artifacts: Path):
    chapter = chapter_for(name)
    server = harness.Voila(course, name, scratch / "voila")
    try:
        page.goto(server.url, timeout=180_000)        # Voila runs every cell before the page is complete
        shown = page.evaluate("document.body.textContent")   # hidden too: Voila keeps its spinner after a failure
        for sign in ("Traceback (most recent call last)", "There was an error when executing cell"):
            if sign in shown:
                start = max(0, shown.index(sign) - 300)
                pytest.fail(f"{name}: a cell failed in Voila:\n{shown[start:start + 1500]}", pytrace=False)
        display = drive.display_of(page, chapter.steps[0])
        display.first.wait_for(state="attached", timeout=60_000)
        assert display.count() == 1, f"{name}: expected one panel around {chapter.steps[0].label!r}"
        drive.wait_until_shown(page, display, chapter.first, what=f"{name} in Voila")

        # the projector view hides the code: no editors, no source lines
        assert page.locator(".jp-InputArea-editor, .CodeMirror, .cm-editor").count() == 0
        assert "panel.widget" not in page.locator("body").inner_text(), f"{name}: Voila shows code"

        drive.operate(page, display, chapter, "voila", name, artifacts, CLICKS)
    finally:
        page.close()                                  # leave the kernel's socket before the server goes
        left = server.stop()
        assert not left, f"processes outlived Voila: {[harness.command_line(p) for p in left]}"
