"""Which chapter notebooks show a widget, and what a student does with each one.

``widget_notebooks()`` finds the notebooks that display a widget, by looking at the
notebooks themselves; ``CHAPTERS`` says, per notebook, what to operate and what the page
must then show (the chapter's own claim about the widget, in the words the widget prints;
see ``course/present/*.py``). A widget notebook without an entry fails its browser test,
so a new chapter cannot slip through untested.

Each ``Step`` names a control by the label a student reads beside it:

* ``check``: a checkbox, ticked (True) or unticked (False);
* ``slider``: a slider, moved to a value (typed into its readout, as a student may);
* ``select``: a dropdown, set to one of its options.

After a step, every text in ``shows`` must appear in the widget's display, and no text in
``hides`` (read from the panel's text form, shown under the drawing). The drawing
must change at every step, every CSS selector in ``draws`` must match an element of it (e.g.
``[data-test="Pre"][data-state="fail"]``, a red light) and none in ``undraws``.
``Chapter.flip`` is a pair of steps that switch the display back and forth; it is
repeated to time the widget (input event to changed text).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: ``panel.widget`` alone on a line (a cell's displayed value), or ``display(... .widget ...)``.
WIDGET_LINE = re.compile(r"^\s*[A-Za-z_][\w.]*\.widget\s*$|display\([^)]*\.widget\b", re.MULTILINE)


@dataclass(frozen=True)
class Step:
    kind: str                       # "check" | "slider" | "select"
    label: str                      # the control's description, as shown on the page
    value: bool | float | int | str
    shows: tuple[str, ...]          # each must appear in the widget's display afterwards
    hides: tuple[str, ...] = ()     # none may appear
    draws: tuple[str, ...] = ()     # CSS selectors that must match in the drawing afterwards
    undraws: tuple[str, ...] = ()   # CSS selectors that must not


@dataclass(frozen=True)
class Chapter:
    first: tuple[str, ...]          # what the display shows after "run all" (the notebook's own cells drive it)
    steps: tuple[Step, ...]
    flip: tuple[Step, Step]         # two steps that change the display and change it back
    summary: str = ""               # what the chapter claims, for failure messages


def check(label: str, value: bool, *shows: str, hides: tuple[str, ...] = (), draws: tuple[str, ...] = (),
          undraws: tuple[str, ...] = ()) -> Step:
    return Step("check", label, value, shows, hides, draws, undraws)


def slider(label: str, value: float, *shows: str, hides: tuple[str, ...] = (), draws: tuple[str, ...] = (),
          undraws: tuple[str, ...] = ()) -> Step:
    return Step("slider", label, value, shows, hides, draws, undraws)


def select(label: str, value: str, *shows: str, hides: tuple[str, ...] = (), draws: tuple[str, ...] = (),
          undraws: tuple[str, ...] = ()) -> Step:
    return Step("select", label, value, shows, hides, draws, undraws)


LEGAL = "legal = 1 x 1 x 1 = 1"
ALLOWED = "allowed: all three tests pass"
WAITING = "cannot execute: no completion event yet"
UNTOUCHED = "touched    no: no file was opened"
DURABLE = "durable key (ledger on disk; off: in memory)"
ATOMIC = "atomic ledger (invoice + key in one transaction)"
HONOURS = "billing honours keys"

CHAPTERS: dict[str, Chapter] = {
    "01_a_request_is_not_an_action": Chapter(
        summary="the read_file status follows the request picked, and a hostile path never opens a file, "
                "even with the path layer switched off",
        # later cells run its requests through ``attempt``: the panel keeps its first request
        first=("request    outside path", "caught by  the path layer", UNTOUCHED),
        steps=(
            select("request", "valid path", "result     call_1: succeeded", "touched    yes: opened config.ts",
                   hides=("rejected",), draws=('[data-rung="the file is read"][data-state="passed"]',),
                   undraws=('[data-state="refused"]',)),
            select("request", "dot-dot climb", "result     call_1: rejected / authorization",
                   "caught by  the path layer", UNTOUCHED, draws=('[data-rung="path layer"][data-state="refused"]',)),
            check("path layer", False, "layers     schema on | path OFF | business on",
                  "caught by  the executor (rung 1 of the path ladder)", "rejected / authorization", UNTOUCHED,
                  draws=('[data-rung="path layer"][data-state="off"]',
                         '[data-rung="executor rung 1"][data-state="refused"]')),
            select("request", "symlink out", "caught by  the executor (rung 2 of the path ladder)",
                   "rejected / authorization", UNTOUCHED,
                   draws=('[data-rung="executor rung 2"][data-state="refused"]',)),
            select("request", "sibling-prefix path", "rejected / authorization", UNTOUCHED),
            check("path layer", True, "layers     schema on | path on | business on",
                  "caught by  the path layer", UNTOUCHED),
        ),
        flip=(select("request", "valid path", "succeeded", "touched    yes"),
              select("request", "outside path", "rejected / authorization", UNTOUCHED)),
    ),
    "02_contracts_and_legality": Chapter(
        summary="unticking a condition drops the indicator to 0 and names the failing test; ticking it restores 1",
        first=(LEGAL, ALLOWED),
        steps=(
            check("caller holds billing.write", False, "legal = 1 x 0 x 1 = 0", "blocked by: auth_ok",
                  "caller lacks billing.write", hides=(ALLOWED,), draws=('[data-test="auth_ok"][data-state="fail"]',
                  '[data-verdict="refused"]')),
            check("caller holds billing.write", True, LEGAL, ALLOWED, hides=("blocked by",),
                  draws=('[data-verdict="legal"]',), undraws=('[data-state="fail"]',)),
            check("order 431 approved", False, "legal = 1 x 1 x 0 = 0", "blocked by: Pre", hides=(ALLOWED,)),
            check("order 431 approved", True, LEGAL, ALLOWED),
            check("amount is a number", False, "schema_ok fail", "blocked by: schema_ok", "legal = 0 x 1 x – = 0",
                  hides=(ALLOWED,),
                  draws=('[data-test="schema_ok"][data-state="fail"]', '[data-state="not-evaluable"]',
                         '[data-product="0 × 1 × – = 0"]')),
            check("amount is a number", True, LEGAL, ALLOWED),
        ),
        flip=(check("caller holds billing.write", False, "blocked by: auth_ok"),
              check("caller holds billing.write", True, LEGAL)),
    ),
    "03_agent427_import_failure": Chapter(
        summary="Agent-427's proposal: each switch changes a real input, the indicator drops to 0 and names "
                "the failing test; restoring the switch restores 1",
        # later cells call the panel's scenario directly: the panel stays as it opened
        first=(LEGAL, ALLOWED),
        steps=(
            check("the imported symbol is exported", False, "legal = 1 x 1 x 0 = 0", "blocked by: Pre",
                  "symbol not exported", hides=(ALLOWED,), draws=('[data-test="Pre"][data-state="fail"]',)),
            check("the imported symbol is exported", True, LEGAL, ALLOWED),
            check("the caller holds fs.write", False, "legal = 1 x 0 x 1 = 0", "blocked by: auth_ok",
                  "caller lacks fs.write"),
            check("the caller holds fs.write", True, LEGAL, ALLOWED),
            check("the call uses the declared fields", False, "schema_ok fail", "blocked by: schema_ok",
                  "required property missing", "legal = 0 x – x – = 0", hides=(ALLOWED,),
                  draws=('[data-test="schema_ok"][data-state="fail"]', '[data-state="not-evaluable"]',
                         '[data-product="0 × – × – = 0"]')),
            check("the call uses the declared fields", True, LEGAL, ALLOWED),
        ),
        flip=(check("the imported symbol is exported", False, "blocked by: Pre"),
              check("the imported symbol is exported", True, LEGAL)),
    ),
    "04_choosing_among_legal_calls": Chapter(
        summary="with risk priced low the eager edit wins; priced at 1 again, reading the script wins",
        first=("lambda_c = 1, lambda_r = 1", "chosen: read the script"),
        steps=(
            slider("λr (risk)", 0.25, "lambda_r = 0.25", "chosen: eager edit",
                   draws=('[data-option="eager edit"][data-state="chosen"]',)),
            slider("λr (risk)", 1.0, "lambda_r = 1", "chosen: read the script",
                   draws=('[data-option="read the script"][data-state="chosen"]',)),
            slider("λc (cost)", 0.0, "lambda_c = 0", "chosen: read the script"),
            slider("λc (cost)", 1.0, "lambda_c = 1, lambda_r = 1", "chosen: read the script"),
        ),
        flip=(slider("λr (risk)", 0.25, "chosen: eager edit"),
              slider("λr (risk)", 1.0, "chosen: read the script")),
    ),
    "05_ledger_and_duplicate_invoice": Chapter(
        summary="with a crash after the ledger records the key, an in-memory key gives two invoices and a "
                "durable key one; an atomic ledger or a billing service that honours keys gives one",
        # later cells play the repairs on panels of their own: the panel stays as it opened
        first=("durable key: on | atomic ledger: off | billing honours keys: off | "
               "crash at after_effect_before_ledger", "invoices for order-431: 2"),
        steps=(
            check(HONOURS, True, "billing honours keys: on", "invoices for order-431: 1",
                  hides=("INV-10",), draws=('[data-invoices="1"]',)),
            check(HONOURS, False, "billing honours keys: off", "invoices for order-431: 2"),
            select("crash", "after_ledger", "invoices for order-431: 1"),
            check(DURABLE, False, "durable key: off", "invoices for order-431: 2 (INV-9, INV-10)",
                  "died with the process", draws=('[data-crash]', '[data-final-invoice="INV-10"]')),
            check(DURABLE, True, "durable key: on", "local ledger replays INV-9", "invoices for order-431: 1",
                  hides=("INV-10",), draws=('[data-invoices="1"]',), undraws=('[data-final-invoice="INV-10"]',)),
            select("crash", "after_effect_before_ledger", "invoices for order-431: 2"),
            check(ATOMIC, True, "atomic ledger: on", "one SQLite transaction", "invoices for order-431: 1"),
            check(ATOMIC, False, "atomic ledger: off", "invoices for order-431: 2"),
            check(HONOURS, True, "billing honours keys: on", "recognizes the key and returns INV-9",
                  "invoices for order-431: 1", draws=('[data-invoices="1"]',)),
            check(HONOURS, False, "billing honours keys: off", "invoices for order-431: 2"),
        ),
        flip=(select("crash", "after_ledger", "invoices for order-431: 1"),
              select("crash", "after_effect_before_ledger", "invoices for order-431: 2")),
    ),
    "06_backoff_and_retries": Chapter(
        summary="the delay plan and the escalation point follow beta and n_max; jitter changes the waits drawn",
        # later cells print other settings from panels of their own: the panel stays as it opened
        first=("beta=2, n_max=4", "the failure after retry 4 escalates", "total wait before escalating: 15s"),
        steps=(
            slider("β (growth)", 3.0, "beta=3, n_max=4", "the failure after retry 4 escalates",
                   "total wait before escalating: 40s", draws=('[data-escalation="40"]', '[data-retry="4"]')),
            slider("n_max (retries)", 3, "beta=3, n_max=3", "the failure after retry 3 escalates",
                   "total wait before escalating: 13s", hides=("retry 4",), draws=('[data-retry="3"]',),
                   undraws=('[data-retry="4"]',)),
            select("jitter", "full", "jitter=full, seed 0", "drawn by full jitter"),
            select("jitter", "none", "jitter=none", "total wait before escalating: 13s"),
            slider("n_max (retries)", 0, "no retry is allowed: the first failure escalates",
                   draws=('[data-escalation="0"]',), undraws=('[data-retry]',)),
            slider("n_max (retries)", 4, "the failure after retry 4 escalates"),
            slider("β (growth)", 2.0, "beta=2, n_max=4", "total wait before escalating: 15s"),
        ),
        flip=(slider("n_max (retries)", 3, "the failure after retry 3 escalates"),
              slider("n_max (retries)", 4, "the failure after retry 4 escalates")),
    ),
    "08_streaming_and_parallel_calls": Chapter(
        summary="the stream panel says nothing can execute until the completion event arrives",
        # later cells read the verdict off panels of their own: the panel stays as it opened
        first=("3 of 13 chunks received", "keys $.path", WAITING),
        steps=(
            slider("chunks", 11, "11 of 13 chunks received", WAITING, hides=("ready for validation",),
                   draws=('[data-call="call_3"][data-state="arriving"]',), undraws=('[data-state="complete"]',)),
            slider("chunks", 12, "12 of 13 chunks received", "finish_reason 'tool_calls'",
                   "completion event ('tool_calls'): 3 complete calls, ready for validation and execution",
                   hides=(WAITING,), draws=('[data-call="call_3"][data-state="complete"]',),
                   undraws=('[data-state="arriving"]',)),
            slider("chunks", 13, "13 of 13 chunks received", "3 complete calls", hides=(WAITING,)),
            slider("chunks", 0, "0 of 13 chunks received", "chunks so far: none", WAITING,
                   undraws=('[data-call]', '[data-chunk][data-state="received"]')),
        ),
        flip=(slider("chunks", 12, "3 complete calls"), slider("chunks", 11, WAITING)),
    ),
}


#: Widget notebooks whose widget is known not to work yet, and why. Each is a strict xfail: the test
#: still runs, and fails the run as soon as the widget works, so the entry is removed then.
KNOWN_BROKEN: dict[str, str] = {}


def known_broken(name: str) -> tuple:
    """Marks for a parametrized test of notebook ``name``: a strict xfail when its widget is known to be broken."""
    import pytest

    reason = KNOWN_BROKEN.get(name)
    return (pytest.mark.xfail(reason=reason, strict=True, raises=AssertionError),) if reason else ()


def _widget_classes() -> tuple[str, ...]:
    import ipywidgets

    return tuple(sorted(name for name, value in vars(ipywidgets).items()
                        if isinstance(value, type) and issubclass(value, ipywidgets.DOMWidget)))


def shows_a_widget(path: Path) -> bool:
    """True when a code cell displays a widget: a stored widget view, a widget's text form, or a ``.widget`` line."""
    classes = _widget_classes()
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if WIDGET_LINE.search(cell.source):
            return True
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                return True
            text = data.get("text/plain", "")
            if isinstance(text, str) and text.startswith(tuple(f"{name}(" for name in classes)):
                return True
    return False


@lru_cache(maxsize=None)
def widget_notebooks(folder: Path = ROOT / "notebooks") -> tuple[str, ...]:
    """The names (without .ipynb) of the chapter notebooks in ``folder`` that show a widget."""
    return tuple(path.stem for path in sorted(folder.glob("*.ipynb")) if shows_a_widget(path))


def chapter_for(name: str) -> "Chapter":
    """The operations for a widget notebook; a notebook without them fails (it must not go untested)."""
    import pytest

    if name not in CHAPTERS:
        pytest.fail(f"notebooks/{name}.ipynb shows a widget, but tests/browser/widget_chapters.py has no entry "
                    f"for it in CHAPTERS: add the controls to operate and what the page must then show",
                    pytrace=False)
    return CHAPTERS[name]


def start_page_title() -> str:
    """The start page's '# title', as its first heading shows it."""
    notebook = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)
    first = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    match = re.match(r"#\s+(.+)", first.source)
    assert match, "the start page opens with a '# title' line"
    return match.group(1).strip()


# The start page and the chapters whose only widget is their knowledge check: operated as the check is.
from knowledge_steps import knowledge_only  # noqa: E402

CHAPTERS.update(knowledge_only(CHAPTERS))
