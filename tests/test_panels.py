"""The chapter widgets, driven from plain Python: set a value, read what the panel shows."""
import toolkit as tk
from course.worlds import CREATE_INVOICE, Books
from course.present.legality_panel import LegalityPanel
from course.present.scoring_panel import ScoringPanel

GOOD = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", "idempotency_key": "k"}


def scenario(amount_is_number, holds_scope, approved):
    world = Books(orders={"order-431": {"approved": approved}})
    caller = tk.Caller("a", frozenset({"billing.write"} if holds_scope else set()))
    args = {**GOOD, "amount": 120.0 if amount_is_number else "120"}
    return tk.check(tk.request("create_invoice", args, call_id="c"), CREATE_INVOICE, caller, world)


def test_legality_panel_follows_each_box():
    panel = LegalityPanel(scenario, ("schema", "auth", "pre"))
    assert "legal = 1 x 1 x 1 = 1" in panel.text() and "allowed" in panel.text()
    shown = panel.set(schema=False)
    assert "legal = 0" in shown and "blocked by: schema_ok" in shown and "$.amount" in shown
    shown = panel.set(schema=True, auth=False)
    assert "blocked by: auth_ok" in shown and "caller lacks billing.write" in shown
    shown = panel.set(auth=True, pre=False)
    assert "blocked by: Pre" in shown and "order_approved not met (requires: order is approved)" in shown
    panel.boxes[2].value = True          # a click on the widget itself, not through .set
    assert "legal = 1 x 1 x 1 = 1" in panel.text()
    assert "legal = 1" in panel.view.value   # the HTML the browser renders says the same


def test_scoring_panel_flips_with_the_price_of_risk():
    read, edit = tk.Option("read", 8, 1, 1), tk.Option("edit", 11, 2, 6)
    panel = ScoringPanel([read, edit])
    assert panel.text().endswith("chosen: read")
    assert panel.set(lam_r=0.25).endswith("chosen: edit")
    panel.lam_r.value = 1.0
    assert panel.text().endswith("chosen: read") and "chosen: read" in panel.view.value


# ------------------------------------------------------------------ the drawings
import html as _html
import re as _re

import pytest

from course.present.svg import drawn_html, svg_text


def drawn(value: str, attribute: str) -> list[str]:
    """The values of ``data-<attribute>`` in a panel's drawing, in order."""
    return _re.findall(rf" data-{attribute}='([^']*)'", value)


def states(value: str, attribute: str) -> dict[str, str]:
    """``{data-<attribute>: data-state}`` for every element that carries both."""
    return dict(_re.findall(rf" data-{attribute}='([^']*)' data-state='([^']*)'", value))


def hidden_text(value: str) -> str:
    match = _re.search(r"<pre style='[^']*' class='tk-text'>(.*?)</pre>", value, _re.S)
    assert match, "the panel keeps its text form in the page"
    return _html.unescape(match.group(1))


def test_svg_pieces_escape_what_they_show():
    piece = svg_text(0, 0, "<b>&\"", data_x="a\"b")
    assert "&lt;b&gt;&amp;" in piece and "data-x='a&quot;b'" in piece
    assert hidden_text(drawn_html("<svg></svg>", "a < b\n  c")) == "a < b\n  c"


def test_a_drawing_with_hidden_text_opens_as_the_text_view_did_and_a_panel_holds_no_double_quote():
    """A block with its text hidden (a figure such as ``choice_flip``) reads as the text view did."""
    from course.present.stream_panel import StreamPanel
    from course.present.text_view import pre_html

    assert drawn_html("<svg></svg>", "a 'b'").startswith(pre_html("")[:40])
    panel = StreamPanel("openai_stream.txt", position=3)
    assert panel.view.value.startswith("<div class='tk-panel'><svg") and '"' not in panel.view.value


def test_legality_lights_follow_the_boxes_and_show_not_evaluable_as_a_dash():
    panel = LegalityPanel(scenario, ("schema", "auth", "pre"))
    assert states(panel.view.value, "test") == {"schema_ok": "pass", "auth_ok": "pass", "Pre": "pass"}
    assert "data-product='1 × 1 × 1 = 1'" in panel.view.value and hidden_text(panel.view.value) == panel.text()
    panel.set(auth=False)
    assert states(panel.view.value, "test")["auth_ok"] == "fail" and drawn(panel.view.value, "verdict") == ["refused"]
    panel.set(auth=True, schema=False)     # a malformed amount: the later tests cannot be evaluated
    lights = states(panel.view.value, "test")
    assert lights["schema_ok"] == "fail"
    assert "not-evaluable" in lights.values()
    product = drawn(panel.view.value, "product")[0]
    assert "–" in product and product.endswith("= 0") and "legal = " in panel.text()   # text form unchanged


def test_scoring_drawing_frames_the_chosen_option():
    read, edit, banned = tk.Option("read", 8, 1, 1), tk.Option("edit", 11, 2, 6), tk.Option("wipe", 30, 0, 0, 0)
    panel = ScoringPanel([read, edit, banned])
    assert states(panel.view.value, "option") == {"read": "chosen", "edit": "scored", "wipe": "not-legal"}
    panel.lam_r.value = 0.25
    assert states(panel.view.value, "option")["edit"] == "chosen"
    assert drawn(panel.view.value, "score") == ["6.75", "7.5"]
    assert hidden_text(panel.view.value) == panel.text()


def test_invoice_lanes_draw_the_crash_and_every_invoice():
    from course.present.invoice_panel import InvoicePanel

    panel = InvoicePanel(durable=True, atomic=False, honours=False, crash="after_effect_before_ledger")
    value = panel.view.value
    assert drawn(value, "lane") == ["agent", "ledger", "billing"]
    assert drawn(value, "crash") == ["t2"]
    assert drawn(value, "invoice") == ["INV-9", "INV-10"] and drawn(value, "final-invoice") == ["INV-9", "INV-10"]
    panel.set(honours=True)
    assert drawn(panel.view.value, "final-invoice") == ["INV-9"] and drawn(panel.view.value, "invoices") == ["1"]
    panel.set(honours=False, crash="no crash")
    assert drawn(panel.view.value, "crash") == [] and hidden_text(panel.view.value) == panel.text()


def test_retry_axis_draws_one_wait_per_retry_and_the_escalation():
    from course.present.backoff_panel import BackoffPanel

    panel = BackoffPanel(beta=2, n_max=4, d0=1, jitter="none")
    assert drawn(panel.view.value, "wait") == ["1", "2", "4", "8"] and drawn(panel.view.value, "escalation") == ["15"]
    panel.n_max.value = 0
    assert drawn(panel.view.value, "wait") == [] and drawn(panel.view.value, "escalation") == ["0"]
    panel.set(n_max=3, jitter="full")
    assert len(drawn(panel.view.value, "wait")) == 3 and hidden_text(panel.view.value) == panel.text()


def test_stream_buffers_fill_until_the_completion_event():
    from course.present.stream_panel import StreamPanel

    panel = StreamPanel("openai_stream.txt", position=3)
    assert drawn(panel.view.value, "fragment") == ["1", "2", "3"]
    assert states(panel.view.value, "call") == {"call_1": "arriving"}
    panel.slider.value = 11
    assert set(states(panel.view.value, "call").values()) == {"arriving"}
    panel.set(12)
    assert states(panel.view.value, "call") == {"call_1": "complete", "call_2": "complete", "call_3": "complete"}
    assert hidden_text(panel.view.value) == panel.text()
    cut = StreamPanel("anthropic_stream_max_tokens.txt")
    cut.set(cut.slider.max)
    assert set(states(cut.view.value, "call").values()) == {"refused"}


@pytest.mark.parametrize("request_, layers, refused", [
    ("valid path", {}, None),
    ("outside path", {}, "path layer"),
    ("symlink out", {"path": False}, "executor rung 2"),
    ("cut JSON chunk", {}, "complete call"),
])
def test_read_file_ladder_marks_the_rung_that_refused(request_, layers, refused):
    from course.present.read_file_panel import ReadFilePanel

    with ReadFilePanel() as panel:
        panel.set(request=request_, path=layers.get("path", True))
        rungs = states(panel.view.value, "rung")
        assert [name for name, state in rungs.items() if state == "refused"] == ([refused] if refused else [])
        if "path" in layers:
            assert rungs["path layer"] == "off"
        assert drawn(panel.view.value, "opened") == (["1"] if refused is None else ["0"])
        assert hidden_text(panel.view.value) == panel.text()


# ------------------------------------------------------------ a panel and its text are one thing
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def shown_text(value: str) -> str:
    """The text form a panel shows in plain sight, under its drawing (no clipping style)."""
    match = _re.search(r"</div><pre style='([^']*)' class='tk-text'>(.*?)</pre>$", value, _re.S)
    assert match, "the panel shows its text form under the drawing"
    style = match.group(1)
    assert "clip" not in style and "position:absolute" not in style, "shown, not hidden"
    return _html.unescape(match.group(2))


def agrees(panel, verdict_of_text, verdict_of_drawing) -> None:
    """The text under the drawing is ``.text()``, and it states the verdict the drawing shows."""
    value = panel.view.value
    assert shown_text(value) == panel.text()
    assert verdict_of_text(panel.text()) == verdict_of_drawing(value), panel.text()


def test_the_legality_text_states_the_lights_verdict_after_every_click():
    panel = LegalityPanel(scenario, ("schema", "auth", "pre"))
    legal_in_text = lambda text: _re.search(r"^legal = .* = ([01])$", text, _re.M).group(1)
    legal_in_drawing = lambda value: {"legal": "1", "refused": "0"}[drawn(value, "verdict")[0]]
    for change in ({}, {"auth": False}, {"auth": True, "pre": False}, {"schema": False},
                   {"schema": True}, {"pre": True}):
        panel.set(**change)
        agrees(panel, legal_in_text, legal_in_drawing)
    panel.boxes[1].value = False                        # a click on the widget itself
    agrees(panel, legal_in_text, legal_in_drawing)
    assert legal_in_text(panel.text()) == "0"


def test_the_read_file_text_states_what_the_ladder_opened_after_every_choice():
    from course.present.read_file_panel import ReadFilePanel

    opened_in_text = lambda text: "1" if "touched    yes" in text else "0"
    with ReadFilePanel() as panel:
        for change in ({}, {"request": "valid path"}, {"request": "symlink out", "path": False},
                       {"request": "missing path", "path": True, "schema": False},
                       {"request": "cut JSON chunk"}):
            panel.set(**change)
            agrees(panel, opened_in_text, lambda value: drawn(value, "opened")[0])
        panel.menu.value = "valid path"
        agrees(panel, opened_in_text, lambda value: drawn(value, "opened")[0])
        assert opened_in_text(panel.text()) == "1"


def test_the_scoring_text_names_the_option_the_drawing_frames_after_every_move():
    read, edit = tk.Option("read", 8, 1, 1), tk.Option("edit", 11, 2, 6)
    panel = ScoringPanel([read, edit])
    chosen_in_text = lambda text: text.rsplit("chosen: ", 1)[1]
    for lam_c, lam_r in ((1, 1), (1, 0.25), (0, 3), (1, 1)):
        panel.set(lam_c=lam_c, lam_r=lam_r)
        agrees(panel, chosen_in_text, lambda value: drawn(value, "chosen")[0])
    panel.lam_r.value = 0.0
    agrees(panel, chosen_in_text, lambda value: drawn(value, "chosen")[0])
    assert chosen_in_text(panel.text()) == "edit"


def test_the_invoice_text_counts_the_invoices_the_lanes_draw_after_every_switch():
    from course.present.invoice_panel import InvoicePanel

    panel = InvoicePanel()
    count_in_text = lambda text: _re.search(r"^invoices for order-431: (\d+)", text, _re.M).group(1)
    for change in ({}, {"honours": True},
                   {"honours": False, "durable": False, "crash": "after_ledger"},
                   {"durable": True}, {"atomic": True, "crash": "after_effect_before_ledger"}):
        panel.set(**change)
        agrees(panel, count_in_text, lambda value: drawn(value, "invoices")[0])
        assert panel.text().startswith(f"durable key: {'on' if panel.durable.value else 'off'} |")
    panel.atomic.value = False                           # a click on the widget itself
    agrees(panel, count_in_text, lambda value: drawn(value, "invoices")[0])
    assert count_in_text(panel.text()) == "2"


def test_the_agent427_text_states_the_lights_verdict_after_every_click():
    from course.present.agent427_panel import agent427_panel

    panel = agent427_panel()
    legal_in_text = lambda text: _re.search(r"^legal = .* = ([01])$", text, _re.M).group(1)
    legal_in_drawing = lambda value: {"legal": "1", "refused": "0"}[drawn(value, "verdict")[0]]
    for change in ({}, {"pre": False}, {"schema": False}, {"schema": True, "pre": True, "auth": False},
                   {"auth": True}):
        panel.set(**change)
        agrees(panel, legal_in_text, legal_in_drawing)
    panel.boxes[0].value = False                        # a click on the widget itself
    agrees(panel, legal_in_text, legal_in_drawing)
    assert legal_in_text(panel.text()) == "0" and "blocked by: schema_ok" in panel.text()


def test_the_backoff_text_states_the_retries_and_escalation_the_axis_draws_after_every_move():
    from course.present.backoff_panel import BackoffPanel

    def in_text(text: str) -> tuple[int, float]:
        retries = _re.search(r"^the failure after retry (\d+) escalates", text, _re.M)
        total = _re.search(r"^total wait before escalating: ([\d.]+)s", text, _re.M).group(1)
        return (int(retries.group(1)) if retries else 0), float(total)

    def in_drawing(value: str) -> tuple[int, float]:
        return int(drawn(value, "retries")[0]), round(float(drawn(value, "escalation")[0]), 2)

    panel = BackoffPanel(beta=2, n_max=4, d0=1, jitter="none")
    for change in ({}, {"beta": 3}, {"n_max": 3}, {"jitter": "full"}, {"jitter": "decorrelated"},
                   {"jitter": "none", "n_max": 0}, {"n_max": 4, "d0": 0.5}, {"beta": 2, "d0": 1}):
        panel.set(**change)
        agrees(panel, in_text, in_drawing)
    panel.n_max.value = 2                               # a drag on the slider itself
    agrees(panel, in_text, in_drawing)
    assert in_text(panel.text()) == (2, 3.0)


def test_the_stream_text_states_what_may_run_as_the_drawing_does_at_every_position():
    from course.present.stream_panel import WAITING, StreamPanel

    def in_text(text: str) -> tuple[int, str]:
        position = int(_re.match(r"\S+: (\d+) of", text).group(1))
        if text.endswith(WAITING):
            return position, "none"
        return position, "ready" if "ready for validation" in text else "refused"

    def in_drawing(value: str) -> tuple[int, str]:
        calls = set(states(value, "call").values())
        last = "ready" if drawn(value, "verdict") == ["True"] else "refused" if "refused" in calls else "none"
        return int(drawn(value, "position")[0]), last

    panel = StreamPanel("openai_stream.txt", position=3)
    for position in (3, 0, 11, 12, 13, 5):
        panel.set(position)
        agrees(panel, in_text, in_drawing)
    panel.slider.value = 12                             # a drag on the slider itself
    agrees(panel, in_text, in_drawing)
    assert in_text(panel.text()) == (12, "ready")
    cut = StreamPanel("anthropic_stream_max_tokens.txt")
    cut.set(cut.slider.max)
    agrees(cut, in_text, in_drawing)
    assert in_text(cut.text())[1] == "refused"


# ------------------------------------------------------------ the notebooks: panels left alone
#: The chapters whose panels show their text (course/present/*_panel.py with ``shown=True``), and
#: what each panel shows when its notebook has run from the top.
SHOWN = {"01_a_request_is_not_an_action": "request    outside path",
         "02_contracts_and_legality": "legal = 1 x 1 x 1 = 1",
         "03_agent427_import_failure": "legal = 1 x 1 x 1 = 1",
         "04_choosing_among_legal_calls": "chosen: read the script",
         "05_ledger_and_duplicate_invoice": "invoices for order-431: 2 (INV-9, INV-10)",
         "06_backoff_and_retries": "total wait before escalating: 15s",
         "08_streaming_and_parallel_calls": "3 of 13 chunks received"}


def displays_the_panel(source: str) -> bool:
    """A cell whose last line is ``panel`` (a comment may follow): the panel displayed itself."""
    lines = source.strip().splitlines()
    return bool(lines) and lines[-1].split("#")[0].strip() == "panel"


def _notebook(name: str):
    return nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)


def stored_views(nb) -> list[str]:
    """Every HTML value in the stored state of each widget a code cell displays (children too)."""
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    found = []

    def html_values(model_id: str) -> list[str]:
        model = state[model_id]
        values = [model["state"]["value"]] if model["model_name"] == "HTMLModel" else []
        for child in model["state"].get("children", []):
            values += html_values(child.removeprefix("IPY_MODEL_"))
        return values

    for cell in nb.cells:
        if cell.cell_type != "code" or "knowledge_check(" in cell.source:   # the end-of-chapter quiz
            continue
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view:
                assert view["model_id"] in state, "every widget view has its state in the notebook"
                found += html_values(view["model_id"])
    return found


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_the_notebook_stores_its_panel_so_a_reload_shows_it(name):
    """Trusted, a reopened page draws the stored widget; untrusted, it shows the panel's text."""
    nb = _notebook(name)
    assert "widgets" in nb.metadata, f"run: python scripts/run_notebooks.py notebooks/{name}.ipynb"
    views = stored_views(nb)
    assert len(views) == 1, "one panel shown"
    assert SHOWN[name] in shown_text(views[0]), "the stored panel shows the notebook's last state"
    [cell] = [c for c in nb.cells if c.cell_type == "code" and displays_the_panel(c.source)]
    [output] = cell.outputs
    assert output.data["text/plain"] == shown_text(views[0]), "its plain text is the panel's text"


def test_a_panel_displayed_is_its_widget_with_its_text_as_plain_text():
    panel = LegalityPanel(scenario, ("schema", "auth", "pre"))
    panel.set(auth=False)
    bundle = panel._repr_mimebundle_()
    assert bundle["text/plain"] == panel.text() and "blocked by: auth_ok" in bundle["text/plain"]
    assert bundle[WIDGET_VIEW]["model_id"] == panel.widget.model_id


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_no_later_cell_changes_the_panel_or_prints_its_text(name):
    code = [c.source for c in _notebook(name).cells if c.cell_type == "code"]
    shown = next(i for i, source in enumerate(code) if displays_the_panel(source))
    for source in code[shown + 1:]:
        changes = r"\bpanel\.set\(|\bpanel\.\w+\.value\s*=|print\(panel\.text\(\)\)"
        assert not _re.search(changes, source), source


def test_stored_widget_ids_are_the_same_every_run(tmp_path):
    import importlib.util

    script = ROOT / "scripts" / "run_notebooks.py"
    spec = importlib.util.spec_from_file_location("_run_notebooks", script)
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    path = tmp_path / "panel.ipynb"
    texts = []
    for _ in range(2):
        source = ("import ipywidgets as w\n"
                  "w.VBox([w.Checkbox(description='on'), w.HTML('<b>x</b>')])")
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), path)
        assert runner.main([str(path)]) == 0
        texts.append(path.read_text(encoding="utf-8"))
    assert texts[0] == texts[1]
    nb = nbformat.reads(texts[0], as_version=4)
    assert stored_views(nb) == ["<b>x</b>"]
