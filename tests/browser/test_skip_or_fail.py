"""Without a browser the browser tests skip and say why; with REQUIRE_BROWSER=1 they fail instead.

Each case runs one browser test in a child pytest, with BROWSER_CHROMIUM pointing at a file
that does not exist (a machine without Chromium). No browser or server is started.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from widget_chapters import ROOT

TEST = "tests/browser/test_lab.py::test_the_readme_command_opens_the_start_page"
PLAYWRIGHT = importlib.util.find_spec("playwright") is not None


def run_without_chromium(require: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "REQUIRE_BROWSER"}
    env["BROWSER_CHROMIUM"] = str(ROOT / "no-such-dir" / "chromium")
    if require:
        env["REQUIRE_BROWSER"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsE", TEST],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_without_chromium_the_browser_tests_skip_with_the_reason():
    run = run_without_chromium(require=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped" in run.stdout, run.stdout
    assert "browser test skipped: " in run.stdout, run.stdout
    if PLAYWRIGHT:      # the first thing missing is Chromium, and the reason says how to get it
        assert "no Chromium at" in run.stdout and "apt-get install -y chromium" in run.stdout, run.stdout


def test_with_require_browser_a_missing_chromium_fails():
    run = run_without_chromium(require=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 error" in run.stdout, run.stdout
    assert "REQUIRE_BROWSER=1, but " in run.stdout, run.stdout
    if PLAYWRIGHT:
        assert "REQUIRE_BROWSER=1, but no Chromium at" in run.stdout, run.stdout
