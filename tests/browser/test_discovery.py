"""Widget notebooks are found by reading the notebooks, so a new chapter cannot slip past the browser tests.

No browser needed: these check the discovery on small notebooks made here, and on the course.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from widget_chapters import CHAPTERS, KNOWN_BROKEN, ROOT, shows_a_widget, widget_notebooks


def write(folder: Path, name: str, *cells) -> Path:
    path = folder / f"{name}.ipynb"
    nbformat.write(new_notebook(cells=list(cells)), path)
    return path


def test_each_sign_of_a_widget_is_recognized(tmp_path: Path):
    view = new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                            "text/plain": "x"})
    text_form = new_output("execute_result", data={"text/plain": "VBox(children=(Checkbox(value=True),))"},
                           execution_count=1)
    signs = {
        "stored_view": new_code_cell("show()", outputs=[view]),
        "stored_text": new_code_cell("panel", outputs=[text_form]),
        "last_line": new_code_cell("panel = make()\npanel.widget"),
        "display_call": new_code_cell("display(panel.widget)"),
    }
    for name, cell in signs.items():
        assert shows_a_widget(write(tmp_path, name, new_markdown_cell("# x"), cell)), name


def test_lookalikes_are_not_widgets(tmp_path: Path):
    lookalikes = [
        new_code_cell("print(panel.text())", outputs=[new_output("stream", name="stdout", text="VBox(children=\n")]),
        new_code_cell("result", outputs=[new_output("execute_result", data={"text/plain": "Verdict(legal=1)"},
                                                    execution_count=1)]),
        new_code_cell("x = panel.widget.children"),
        new_markdown_cell("Run `panel.widget` to see it."),
    ]
    assert not shows_a_widget(write(tmp_path, "plain", *lookalikes))


def test_the_course_has_widget_notebooks_and_known_broken_entries_name_real_chapters():
    found = widget_notebooks(ROOT / "notebooks")
    assert found, "no chapter notebook shows a widget"
    # every chapter, the start page included, ends with its knowledge check: a widget
    assert set(found) == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert set(KNOWN_BROKEN) <= set(CHAPTERS), "a known-broken entry names a notebook with no operations"
