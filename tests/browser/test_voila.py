"""The course's widgets in Voila: the projector view, code hidden, nothing from the network.

Each widget notebook is served by ``python scripts/show_chapter.py notebooks/<name>.ipynb
--no-browser`` (what INSTRUCTORS.md tells an instructor to run), opened in headless Chromium, and
its widget is operated exactly as in the JupyterLab tests: the display must change as the chapter
says. Every request the page makes is recorded: one that leaves the machine (Voila's stock
template asks a CDN for Font Awesome) fails the test, and so does ipykernel's "eavesdropping"
warning in the server's terminal.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

import browser_harness as harness
import widget_driver as drive
from widget_chapters import chapter_for, known_broken, widget_notebooks

CLICKS = 20
#: Addresses a page may use without asking the network: the server itself, and inline data.
LOCAL_HOSTS = ("127.0.0.1", "localhost")
EAVESDROPPING = "susceptible to eavesdropping"


def not_local(urls: list[str]) -> list[str]:
    """The addresses among ``urls`` that are neither on this machine nor inline (data:, blob:)."""
    return [url for url in urls if urlsplit(url).scheme not in ("data", "blob")
            and urlsplit(url).hostname not in LOCAL_HOSTS]


def test_not_local_tells_the_cdn_from_the_server():
    cdn = "https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@^5/css/all.min.css"
    assert not_local(["http://127.0.0.1:8866/voila/static/voila.js", "data:;base64,=",
                      "blob:http://127.0.0.1/x", "http://localhost:8866/", cdn]) == [cdn]


def test_the_course_template_drops_exactly_the_stock_templates_cdn_links():
    """The stock "lab" template's only off-machine links are the two the course's template drops."""
    import jupyter_core.paths

    found = [Path(d, "voila", "templates", "lab", "index.html.j2")
             for d in jupyter_core.paths.jupyter_path()]
    stock = next(path for path in found if path.is_file())
    course = harness.ROOT / "lab-settings" / "voila" / "templates" / "course" / "index.html.j2"
    links = [line.strip() for line in stock.read_text(encoding="utf-8").splitlines()
             if "<link" in line and "https://" in line]
    assert len(links) == 2 and all("cdn.jsdelivr.net/npm/@fortawesome/" in link for link in links)
    dropped = course.read_text(encoding="utf-8")
    assert all(link in dropped for link in links), "the stock template's links changed"


@pytest.mark.parametrize("name", [pytest.param(name, marks=known_broken(name)) for name in widget_notebooks()])
def test_widget_in_voila(name: str, voila_ready, course: Path, scratch: Path, page, artifacts: Path):
    chapter = chapter_for(name)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    server = harness.Voila(course, name, scratch / "voila")
    try:
        page.goto(server.url, timeout=drive.RUN_ALL_MS)   # Voila runs every cell first
        shown = page.evaluate("document.body.textContent")   # hidden too: Voila keeps its spinner after a failure
        for sign in ("Traceback (most recent call last)", "There was an error when executing cell"):
            if sign in shown:
                start = max(0, shown.index(sign) - 300)
                pytest.fail(f"{name}: a cell failed in Voila:\n{shown[start:start + 1500]}", pytrace=False)
        display = drive.display_of(page, chapter.steps[0])
        display.first.wait_for(state="attached", timeout=drive.WAIT_MS)
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
    assert requested, "no request was recorded"
    assert not_local(requested) == [], f"{name}: the page asked the network: {not_local(requested)}"
    log = server.process.log_path.read_text(encoding="utf-8", errors="replace")
    assert "Kernel started" in log
    assert EAVESDROPPING not in log, f"{name}: the terminal warned:\n{log[-2000:]}"
