"""Chapters 02 and 03: a live view of the legality indicator: toggle a scenario's three conditions, watch the verdict.

Each checkbox changes the *input* of a real check (the arguments, the caller's
scopes, the world), and the panel reruns ``toolkit.core.legality.check`` through the
scenario function. Nothing here fakes a bit.
"""
from __future__ import annotations

from typing import Callable

from toolkit.core import Verdict
from toolkit.present.text_view import pre_html

#: A scenario maps three switches (schema fixed?, authorized?, ready?) to a real verdict.
Scenario = Callable[[bool, bool, bool], Verdict]


def verdict_text(verdict: Verdict) -> str:
    """Plain text of what the panel shows: each test's line, the indicator, and what blocked the call."""
    lines = verdict.lines()
    blocked = ", ".join(verdict.blocked_by)
    lines.append(f"blocked by: {blocked}" if blocked else "allowed: all three tests pass")
    return "\n".join(lines)


class LegalityPanel:
    """Three checkboxes and a verdict display; drive it from Python with ``.set(...)`` and read ``.text()``."""

    def __init__(self, scenario: Scenario, labels: tuple[str, str, str]):
        import ipywidgets as w

        self.scenario = scenario
        self.boxes = [w.Checkbox(value=True, description=label, indent=False,
                                 layout=w.Layout(width="auto")) for label in labels]
        self.view = w.HTML()
        for box in self.boxes:
            box.observe(self._update, names="value")
        self.widget = w.VBox([w.HBox(self.boxes), self.view])
        self._update()

    def set(self, schema: bool | None = None, auth: bool | None = None, pre: bool | None = None) -> str:
        """Flip any of the three switches, as a student would, and return what is shown."""
        for box, value in zip(self.boxes, (schema, auth, pre)):
            if value is not None:
                box.value = value
        return self.text()

    @property
    def verdict(self) -> Verdict:
        return self.scenario(*(box.value for box in self.boxes))

    def text(self) -> str:
        return self._text

    def _update(self, _change: object = None) -> None:
        verdict = self.verdict
        self._text = verdict_text(verdict)
        colour = "#1a7f37" if verdict.legal else "#cf222e"
        self.view.value = pre_html(self._text, colour)

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)
