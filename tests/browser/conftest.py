"""Fixtures for the real-browser tests: one headless Chromium, one JupyterLab, a Voila per notebook.

* Without Playwright, Voila or Chromium on the machine, the browser tests are skipped with the
  reason; with ``REQUIRE_BROWSER=1`` (as in ``.ci/run``) they fail instead.
* The servers run on a scratch copy of the repository with their own Jupyter folders, and are
  stopped (kernels included) in every case: fixture teardown, interpreter exit, SIGTERM.
  Teardown fails the run if any process they started is still alive.
* JupyterLab is started by the README's "open the course" command (``scripts/open_course.py``);
  its one shared tab records every address it requests (``lab_requests``).
* Screenshots, ``latency.json`` and ``first_run.json`` go to ``$BROWSER_ARTIFACTS`` (default:
  ``artifacts/browser/`` in the repository, which git ignores), named at the end of the run.
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

import pytest

import browser_harness as harness
from widget_driver import FIRST_RUN, LATENCY, START_PAGE_IN_FRONT, WAIT_MS

REQUIRE_BROWSER = os.environ.get("REQUIRE_BROWSER") == "1"
#: Where screenshots go without ``BROWSER_ARTIFACTS`` (README.md and INSTRUCTORS.md say so).
DEFAULT_ARTIFACTS = harness.ROOT / "artifacts" / "browser"
VIEWPORT = {"width": 1280, "height": 900}

_ARTIFACTS: list[Path] = []
_STARTED = time.time()           # a latency.json older than this run is an earlier run's


def require(reason: str | None) -> None:
    """Skip (or, with REQUIRE_BROWSER=1, fail) when ``reason`` says what is missing."""
    if reason is None:
        return
    if REQUIRE_BROWSER:
        pytest.fail(f"REQUIRE_BROWSER=1, but {reason}", pytrace=False)
    pytest.skip(f"browser test skipped: {reason}")


def artifacts_folder() -> Path:
    """``$BROWSER_ARTIFACTS``, else ``artifacts/browser/`` in the repository."""
    return Path(os.environ.get("BROWSER_ARTIFACTS") or DEFAULT_ARTIFACTS)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = artifacts_folder()
    folder.mkdir(parents=True, exist_ok=True)
    if not _ARTIFACTS:
        _ARTIFACTS.append(folder)
    return folder


@pytest.fixture(scope="session")
def scratch(tmp_path_factory) -> Path:
    """A folder for this run's servers: the course copy, Jupyter's folders, logs."""
    harness.install_cleanup()
    return tmp_path_factory.mktemp("browser")


@pytest.fixture(scope="session")
def course(scratch: Path) -> Path:
    """A scratch copy of the repository (JupyterLab autosaves; the committed files stay untouched)."""
    return harness.scratch_course(scratch / "course")


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole run; every process it started is gone after it closes."""
    require(harness.missing_for_browser_tests())
    from playwright.sync_api import sync_playwright

    marker = f"chromium-{secrets.token_hex(8)}"
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(
            executable_path=harness.chromium_executable(), args=list(harness.CHROMIUM_ARGS), headless=True,
            env={**os.environ, harness.MARKER_VAR: marker})
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()
        left = harness.wait_gone(marker, harness.GONE_S)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        assert not left, f"Chromium processes outlived the browser: {left}"


@pytest.fixture(scope="session")
def lab(browser, course: Path, scratch: Path):
    """JupyterLab started by the README's "open the course" command, shared by every Lab test."""
    server = harness.Lab(course, scratch / "lab")
    try:
        yield server
    finally:
        left = server.stop()
        assert not left, f"processes outlived JupyterLab: {[harness.command_line(p) for p in left]}"


@pytest.fixture(scope="session")
def voila_ready(browser) -> None:
    require(harness.missing_for_browser_tests(need_voila=True))


@pytest.fixture(scope="session")
def lab_requests() -> list[str]:
    """Every address the shared JupyterLab tab has requested, from its very first one."""
    return []


@pytest.fixture(scope="session")
def lab_page(browser, lab, lab_requests):
    """One JupyterLab tab for the run, opened where the README's command sends a learner's browser.

    Each widget test opens its notebook in it (as a double click would) and closes it again,
    so JupyterLab loads once instead of once per notebook.
    """
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)       # every wait is on a state; this only bounds a hang
    page.on("request", lambda request: lab_requests.append(request.url))
    try:
        address = lab.opened_address()
        FIRST_RUN["server up (s)"] = round(lab.up_seconds, 2)
        FIRST_RUN["_page requested"] = time.monotonic()
        page.goto(address, timeout=WAIT_MS)
        # whichever test uses the tab first, JupyterLab has finished opening the start page before it acts
        # (else the start page, restored late, would take the front from the notebook a test just opened)
        page.wait_for_function(START_PAGE_IN_FRONT, timeout=WAIT_MS, polling=100)
        # what loaded first, kept for the tests that check it whenever they run in this shared tab
        FIRST_RUN["_first address"], FIRST_RUN["_start page shown"] = page.url, time.monotonic()
        yield page
    finally:
        context.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    try:
        yield page
    finally:
        context.close()


def _latency_rows() -> dict:
    """This process's latency rows, or (in the controller of an ``-n 2`` run) the workers' ``latency.json``."""
    if LATENCY:
        return LATENCY
    saved = artifacts_folder() / "latency.json"
    if saved.exists() and saved.stat().st_mtime >= _STARTED:
        import json

        return json.loads(saved.read_text(encoding="utf-8"))
    return {}


def pytest_terminal_summary(terminalreporter) -> None:
    latency = _latency_rows()
    if not latency and not _ARTIFACTS:
        return
    write = terminalreporter.write_line
    shown = {name: value for name, value in FIRST_RUN.items() if not name.startswith("_")}
    if shown:
        terminalreporter.section("browser: a newcomer's first run (the README's open command)")
        write("   ".join(f"{name} {value}" for name, value in shown.items()))
    terminalreporter.section("browser: click-to-update latency (input event to changed text)")
    for front_end, rows in sorted(latency.items()):
        for name, row in sorted(rows.items()):
            write(f"{front_end:<6} {name:<36} median {row['median_ms']:>6.1f} ms   worst {row['worst_ms']:>6.1f} ms"
                  f"   ({row['clicks']} clicks on {row['control']!r})")
    write(f"screenshots and latency.json: {_ARTIFACTS[0] if _ARTIFACTS else artifacts_folder()}")
