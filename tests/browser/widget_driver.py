"""Operate ipywidgets in a real page the way a student does, and read what the widget then shows.

Controls are found by the label printed beside them (``Step.label``); the text a panel
shows is its ``HTML`` display, found in the same box as the control. Nothing here talks to
the kernel directly: a click goes through the page, the widget's front end, the kernel's
observer, and back into the page, exactly as in class.

``Timer`` measures the click-to-update latency in the page itself: the time from the first
input event the page sees (pointer, key, input or change) to the moment the display's text
differs, recorded by a MutationObserver with ``performance.now()``.
"""
from __future__ import annotations

import json
from pathlib import Path

from widget_chapters import Step

#: How long any wait on the page may last: every wait is on a state (a kernel idle, a text shown, a
#: value chosen), so this bounds a hang, not a step; a busy machine (other work on both cores) can
#: take tens of seconds to start a kernel, list a folder or answer a click.
WAIT_MS = 180_000
#: Longer for running a whole notebook, whose cells start processes and servers of their own.
RUN_ALL_MS = 600_000

#: The address the README's command lands on: the start page (in a JupyterLab workspace, or not).
START_PAGE_ADDRESS = r"/lab/(workspaces/[^/]+/)?tree/notebooks/00_start_here\.ipynb"

#: True once JupyterLab shows the start page in front (the README's command opens it there).
START_PAGE_IN_FRONT = """() => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return false;
  const w = app.shell.currentWidget;
  return !!(w && w.context && w.context.path === 'notebooks/00_start_here.ipynb');
}"""

#: The innermost ``VBox`` around an element: a panel's own box (controls and display).
PANEL_BOX = "xpath=ancestor::div[contains(concat(' ', normalize-space(@class), ' '), ' widget-vbox ')][1]"

#: True once the notebook ``path`` is the current tab and its kernel is connected and idle.
KERNEL_READY = """(path) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path) return false;
  const k = w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""

#: True once every code cell has an execution count and the kernel is idle again; raises on a failed cell.
ALL_RAN = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const cells = w.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== 'code') continue;
    const outputs = cell.outputs;
    for (let j = 0; j < outputs.length; j++) {
      const o = outputs.get(j);
      if (o.type === 'error') {
        const err = o.toJSON();
        throw new Error('cell ' + i + ' failed: ' + err.ename + ': ' + err.evalue);
      }
    }
    if (cell.executionCount === null || cell.executionCount === undefined) return false;
  }
  return w.sessionContext.session.kernel.status === 'idle';
}"""


# ------------------------------------------------------------------ JupyterLab
def wait_for_kernel(page, path: str, timeout_ms: int = WAIT_MS) -> None:
    """Wait until the notebook ``path`` is in front and its kernel really is ready.

    The toolbar says "Idle" before the kernel's connection is up, and a "run all" sent then
    is lost; so wait for the session's kernel to report *connected* and *idle*.
    """
    page.wait_for_function(KERNEL_READY, arg=path, timeout=timeout_ms, polling=100)


#: JupyterLab has started in the tab: its application object is there and can open documents.
LAB_READY = "() => !!window.jupyterapp"


def open_in_lab(page, name: str, folder: str = "notebooks", timeout_ms: int = WAIT_MS) -> None:
    """Open ``<folder>/<name>.ipynb`` (as a double click in the file browser does) and wait for its kernel.

    Paths are relative to the server's root, the course's folder (``scripts/open_course.py``).
    """
    path = f"{folder}/{name}.ipynb"
    page.wait_for_function(LAB_READY, timeout=timeout_ms, polling=100)   # a test may be the first to use the tab
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path}).then(() => true)", path)
    wait_for_kernel(page, path, timeout_ms)


#: Once the kernel of the notebook ``path`` has connected: its details, kept for ``WRITTEN`` and
#: ``UNSAVED_STATE`` (JupyterLab writes them into the notebook's metadata when they arrive).
KERNEL_DETAILS = """async (path) => {
  const w = window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path) throw new Error(path + ' is not the current tab');
  const kernel = w.sessionContext.session.kernel;
  window.__kernelDetails = {path, name: kernel.name, info: await kernel.info};
  return true;
}"""

#: True once JupyterLab has written the kernel's language_info and name into the notebook ``path``,
#: and the tab shows the dirty state the notebook then has (the tab bar redraws a moment later).
WRITTEN = """(path) => {
  const w = window.jupyterapp.shell.currentWidget, d = window.__kernelDetails;
  if (!w || !w.context || w.context.path !== path || !d || d.path !== path) return false;
  const canonical = (value) => JSON.stringify(value, (key, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort()) : x);
  const model = w.context.model, spec = model.getMetadata('kernelspec') || {};
  const tab = document.querySelector('.lm-TabBar-tab[data-id="' + w.id + '"]');
  return canonical(model.getMetadata('language_info')) === canonical(d.info.language_info)
    && spec.name === d.name && !!tab && tab.classList.contains('jp-mod-dirty') === model.dirty;
}"""

#: What ``WRITTEN`` compares, for a failure message.
WRITTEN_STATE = """(path) => {
  const w = window.jupyterapp.shell.currentWidget, d = window.__kernelDetails;
  const tab = w && document.querySelector('.lm-TabBar-tab[data-id="' + w.id + '"]');
  return {current: w && w.context ? w.context.path : null, kernel: d || null,
          language_info: w && w.context ? w.context.model.getMetadata('language_info') : null,
          kernelspec: w && w.context ? w.context.model.getMetadata('kernelspec') : null,
          dirty: w && w.context ? w.context.model.dirty : null, tab: tab ? tab.className : null};
}"""

#: Whether the notebook ``path`` counts as changed, with both language_infos (after ``WRITTEN``).
UNSAVED_STATE = """(path) => {
  const w = window.jupyterapp.shell.currentWidget, d = window.__kernelDetails;
  const tab = document.querySelector('.lm-TabBar-tab[data-id="' + w.id + '"]');
  return {dirty: w.context.model.dirty, tab: tab ? tab.className : null,
          language_info: w.context.model.getMetadata('language_info'),
          kernel_language_info: d.info.language_info};
}"""


def unsaved_state(page, path: str, timeout_ms: int = WAIT_MS) -> dict:
    """``dirty`` (the model), ``tab`` (its classes; ``jp-mod-dirty``: the dot), both language_infos.

    Read once JupyterLab has written the kernel's details into the notebook: a wait on that state,
    not on a clock, so a slow page is read when it is ready, never before."""
    page.evaluate(KERNEL_DETAILS, path)
    try:
        page.wait_for_function(WRITTEN, arg=path, timeout=timeout_ms, polling=100)
    except Exception as error:      # a Playwright timeout: say what the notebook holds instead
        raise AssertionError(f"{path}: JupyterLab did not write the kernel's details into the "
                             f"notebook; {page.evaluate(WRITTEN_STATE, path)}") from error
    return page.evaluate(UNSAVED_STATE, path)


def run_all_in_lab(page, timeout_ms: int = RUN_ALL_MS) -> None:
    """Run > Run All Cells, then wait for every code cell to finish (a failing cell fails the test)."""
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells').then(() => true)")
    page.wait_for_function(ALL_RAN, timeout=timeout_ms, polling=100)


def close_in_lab(page) -> None:
    """Shut down the current notebook's kernel and close its tab (unsaved changes to a scratch copy are dropped)."""
    page.evaluate("""async () => {
      const w = window.jupyterapp.shell.currentWidget;
      if (!w || !w.sessionContext) return false;
      await w.sessionContext.shutdown();
      w.dispose();
      return true;
    }""")


# ------------------------------------------------------------------ controls and the display
def control_box(page, step: Step):
    """The widget element (not yet its input) of the control ``step`` names."""
    css = {"check": ".widget-checkbox", "slider": ".widget-slider", "select": ".widget-dropdown"}[step.kind]
    return page.locator(css).filter(has=page.get_by_text(step.label, exact=True))


def display_of(page, step: Step):
    """The HTML display of the panel that owns the control ``step`` names."""
    return control_box(page, step).locator(PANEL_BOX).locator(".widget-html-content")


def apply(page, step: Step, before_input=lambda: None, scroll: bool = True) -> None:
    """Operate the control as a student would; ``before_input`` runs just before the decisive input event."""
    box = control_box(page, step)
    if scroll:
        box.scroll_into_view_if_needed()
    if step.kind == "check":
        tick = box.locator("input[type=checkbox]")
        if tick.is_checked() != bool(step.value):
            before_input()
            tick.click()
        assert tick.is_checked() == bool(step.value)
    elif step.kind == "select":
        before_input()
        box.locator("select").select_option(label=str(step.value))
    elif step.kind == "slider":
        readout = box.locator(".widget-readout")     # the number beside a slider can be typed into
        readout.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(f"{step.value:g}")
        before_input()
        page.keyboard.press("Enter")
    else:
        raise ValueError(f"unknown control kind {step.kind!r}")


def wait_until_shown(page, display, shows: tuple[str, ...], hides: tuple[str, ...] = (),
                     timeout_ms: int = WAIT_MS, what: str = "") -> str:
    """Wait until the display shows every text in ``shows`` and none in ``hides``; return its text."""
    try:
        page.wait_for_function(
            """([el, shows, hides]) => { const t = el.innerText;
                 return shows.every(s => t.includes(s)) && !hides.some(s => t.includes(s)); }""",
            arg=[display.element_handle(), list(shows), list(hides)], timeout=timeout_ms, polling=20)
    except Exception as error:  # a Playwright timeout: say what the page shows instead
        text = display.inner_text() if display.count() == 1 else f"<{display.count()} displays>"
        raise AssertionError(f"{what}: expected the widget to show {list(shows)}"
                             + (f" and not {list(hides)}" if hides else "")
                             + f"; it shows:\n{text}") from error
    return display.inner_text()


def drawing_of(display) -> str:
    """The markup of the panel's drawing (its ``<svg>``); a panel that draws nothing fails."""
    drawing = display.locator("svg.tk-drawing")
    assert drawing.count() == 1, f"expected one drawing in the panel, found {drawing.count()}"
    return drawing.evaluate("(el) => el.outerHTML")


def wait_until_drawn(page, display, step: Step, before: str | None, timeout_ms: int = WAIT_MS,
                     what: str = "") -> str:
    """Wait until the drawing differs from ``before`` (when given) and matches ``step.draws`` / ``step.undraws``.

    A selector may match the ``<svg>`` itself (its ``data-*`` attributes sum up the state) or any element in it.
    """
    try:
        page.wait_for_function(
            """([el, before, draws, undraws]) => { const svg = el.querySelector('svg.tk-drawing');
                 return !!svg && (before === null || svg.outerHTML !== before)
                   && draws.every(s => svg.matches(s) || svg.querySelector(s) !== null)
                   && undraws.every(s => !svg.matches(s) && svg.querySelector(s) === null); }""",
            arg=[display.element_handle(), before, list(step.draws), list(step.undraws)], timeout=timeout_ms,
            polling=20)
    except Exception as error:  # a Playwright timeout: say what the drawing holds instead
        found = page.evaluate("""([el, sels]) => { const svg = el.querySelector('svg.tk-drawing');
            return svg ? sels.map(s => s + ': ' + (svg.querySelectorAll(s).length + (svg.matches(s) ? 1 : 0)))
                       : ['no drawing']; }""",
                              [display.element_handle(), list(step.draws + step.undraws)])
        raise AssertionError(f"{what}: the drawing did not "
                             + ("change" if before is not None else "show what it must")
                             + f"; must match {list(step.draws)}, must not match {list(step.undraws)}; "
                             + f"found {found}") from error
    return drawing_of(display)


def do_step(page, step: Step, claim: str = "", timeout_ms: int = WAIT_MS) -> str:
    """Apply ``step``; wait for the text form to show what it must and the drawing to change as it must.

    Returns the display's text; ``claim`` (what the chapter says the widget does) heads the failure message.
    """
    display = display_of(page, step)
    before = drawing_of(display)
    apply(page, step)
    what = f"{claim + '; ' if claim else ''}after setting {step.label!r} to {step.value!r}"
    text = wait_until_shown(page, display, step.shows, step.hides, timeout_ms, what=what)
    wait_until_drawn(page, display, step, before, timeout_ms, what=what)
    return text


# ------------------------------------------------------------------ latency
class Timer:
    """Input-event-to-changed-text latency of one display, measured inside the page."""

    EVENTS = "['pointerdown', 'mousedown', 'keydown', 'input', 'change']"
    INSTALL = """(el) => {
      const old = window.__widgetTimer;             // one timer per page: retire the previous widget's
      if (old) {
        old.observer.disconnect();
        for (const type of EVENTS) document.removeEventListener(type, old.mark, true);
      }
      const s = window.__widgetTimer = {el, armed: false, t0: null, t1: null, before: ''};
      s.mark = () => { if (s.armed && s.t0 === null) s.t0 = performance.now(); };
      for (const type of EVENTS) document.addEventListener(type, s.mark, true);
      s.observer = new MutationObserver(() => {
        if (s.armed && s.t0 !== null && s.t1 === null && s.el.innerText !== s.before) s.t1 = performance.now();
      });
      s.observer.observe(el, {subtree: true, childList: true, characterData: true});
    }""".replace("EVENTS", EVENTS)

    def __init__(self, page, display):
        self.page = page
        page.evaluate(self.INSTALL, display.element_handle())

    def arm(self) -> None:
        self.page.evaluate("() => { const s = window.__widgetTimer; s.before = s.el.innerText;"
                           " s.t0 = null; s.t1 = null; s.armed = true; }")

    def measure(self, page, step: Step, timeout_ms: int = WAIT_MS) -> float:
        """Apply ``step``; milliseconds from its input event to the display's changed text."""
        apply(page, step, before_input=self.arm, scroll=False)
        t0, t1, text = page.evaluate("""async (timeout) => {
          const s = window.__widgetTimer, deadline = performance.now() + timeout;
          while (s.t1 === null) {
            if (performance.now() > deadline) throw new Error('the display did not change');
            await new Promise(resolve => setTimeout(resolve, 5));
          }
          s.armed = false;
          return [s.t0, s.t1, s.el.innerText];
        }""", timeout_ms)
        if not (all(s in text for s in step.shows) and not any(s in text for s in step.hides)):
            wait_until_shown(page, display_of(page, step), step.shows, step.hides, timeout_ms,
                             what=f"timed step {step.label!r} = {step.value!r}")
        return t1 - t0


def time_flips(page, flip: tuple[Step, Step], clicks: int = 20) -> list[float]:
    """Alternate the two steps of ``flip`` ``clicks`` times; the latency of each, in milliseconds."""
    display = display_of(page, flip[0])
    timer = Timer(page, display)
    control_box(page, flip[0]).scroll_into_view_if_needed()
    wait_until_shown(page, display, flip[1].shows, flip[1].hides, what="before timing")
    samples = []
    for i in range(clicks):
        samples.append(timer.measure(page, flip[i % 2]))
    return samples


#: Click-to-update latency per front end and notebook, filled by the tests (printed at the end of the run).
LATENCY: dict[str, dict[str, dict]] = {}
#: Seconds a newcomer waits: server up, start page shown, its kernel ready (names starting "_" are not shown).
FIRST_RUN: dict[str, float] = {}


def record_latency(front_end: str, name: str, summary: dict, artifacts: Path) -> None:
    """Keep one widget's latency summary and add it to ``latency.json`` in the artifacts folder.

    Under ``pytest -n 2 --dist loadfile`` the Lab and Voila files run in two worker processes sharing
    ``$BROWSER_ARTIFACTS``: each merges its rows into the file (under a lock) instead of overwriting the other's.
    """
    import fcntl

    LATENCY.setdefault(front_end, {})[name] = summary
    target = artifacts / "latency.json"
    with open(artifacts / ".latency.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        merged = json.loads(target.read_text(encoding="utf-8")) if target.exists() else {}
        for end, rows in LATENCY.items():
            merged.setdefault(end, {}).update(rows)
        target.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def operate(page, display, chapter, front_end: str, name: str, artifacts: Path, clicks: int = 20) -> dict:
    """Operate a chapter's widget as a student would and return its latency summary.

    Screenshot (page and panel) as first shown, every step of the chapter's table (each must change
    the text form and the drawing as the chapter says), screenshots after the first change, then
    ``clicks`` timed flips.
    """
    display.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / f"{front_end}-{name}-1-first.png"))
    panel = control_box(page, chapter.steps[0]).locator(PANEL_BOX)     # controls and drawing, for a close look
    panel.screenshot(path=str(artifacts / f"{front_end}-{name}-panel-1-first.png"))
    where = "" if front_end == "lab" else f" ({front_end.capitalize()})"
    for number, step in enumerate(chapter.steps):
        do_step(page, step, f"{name}{where}: {chapter.summary}")
        if number == 0:
            page.screenshot(path=str(artifacts / f"{front_end}-{name}-2-changed.png"))
            panel.screenshot(path=str(artifacts / f"{front_end}-{name}-panel-2-changed.png"))
    summary = {**summarize(time_flips(page, chapter.flip, clicks)), "control": chapter.flip[0].label}
    record_latency(front_end, name, summary, artifacts)
    return summary


def summarize(samples: list[float]) -> dict:
    ordered = sorted(samples)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"clicks": len(samples), "median_ms": round(median, 1), "worst_ms": round(ordered[-1], 1),
            "samples_ms": [round(s, 1) for s in samples]}
