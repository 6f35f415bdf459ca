"""How quickly a student sees a widget answer, in a real browser.

Starts JupyterLab on a scratch copy of the notebooks (the README's command, headless), opens every
chapter notebook that shows a widget in headless Chromium, and measures for each:

* ready: from opening the notebook to its kernel being connected and idle;
* run all: from Run All Cells to the last cell done;
* click-to-update: from the input event to the widget's changed text, over 20 inputs
  (median and worst), measured inside the page.

Aim: every widget answers within 150 ms (worst of 20). Reported, never failed. Without
Chromium or Playwright the script says so and exits 0.

    python benchmarks/bench_browser.py
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "browser"))

import browser_harness as harness  # noqa: E402
import widget_driver as drive  # noqa: E402
from widget_chapters import CHAPTERS, KNOWN_BROKEN, widget_notebooks  # noqa: E402

AIM_MS = 150.0
CLICKS = 20


def main() -> int:
    missing = harness.missing_for_browser_tests()
    if missing:
        print(f"skipped: {missing}")
        print("RESULT browser_click_to_update skipped")
        return 0
    from playwright.sync_api import sync_playwright

    harness.install_cleanup()
    names = [n for n in widget_notebooks() if n in CHAPTERS and n not in KNOWN_BROKEN]
    worst_of_all, failed = 0.0, []
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as folder:
        base = Path(folder)
        started = time.perf_counter()
        lab = harness.Lab(harness.scratch_course(base / "course"), base / "lab")
        print(f"JupyterLab up in {time.perf_counter() - started:.1f} s")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=harness.chromium_executable(),
                                                     args=list(harness.CHROMIUM_ARGS), headless=True)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(60_000)
                page.goto(lab.opened_address())
                drive.wait_for_kernel(page, harness.Lab.START_PAGE)
                drive.close_in_lab(page)
                print(f"{'notebook':<36} {'ready':>7} {'run all':>8} {'median':>8} {'worst':>8}")
                for name in names:
                    chapter = CHAPTERS[name]
                    try:
                        t0 = time.perf_counter()
                        drive.open_in_lab(page, name)
                        t1 = time.perf_counter()
                        drive.run_all_in_lab(page)
                        t2 = time.perf_counter()
                        drive.wait_until_shown(page, drive.display_of(page, chapter.steps[0]), chapter.first,
                                               what=name)
                        for step in chapter.steps:
                            drive.do_step(page, step)
                        row = drive.summarize(drive.time_flips(page, chapter.flip, CLICKS))
                    except Exception as error:   # a broken notebook is reported, and the others still measured
                        print(f"{name:<36} not measured: {str(error).splitlines()[0]}")
                        failed.append(name)
                        continue
                    finally:
                        drive.close_in_lab(page)
                    worst_of_all = max(worst_of_all, row["worst_ms"])
                    print(f"{name:<36} {t1 - t0:>6.1f}s {t2 - t1:>7.1f}s {row['median_ms']:>6.1f}ms"
                          f" {row['worst_ms']:>6.1f}ms")
                browser.close()
        finally:
            left = lab.stop()
            if left:
                print(f"warning: processes outlived JupyterLab: {left}")
    if KNOWN_BROKEN:
        print("not measured (known to be broken): " + ", ".join(sorted(KNOWN_BROKEN)))
    verdict = "ok" if worst_of_all <= AIM_MS and not failed else "MISSED"
    print(f"RESULT browser_click_to_update_worst_ms {worst_of_all:.1f} aim<={AIM_MS:g} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
