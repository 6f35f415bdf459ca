"""Chapters 02 and 03: a live view of the legality indicator: toggle a scenario's three conditions, watch the verdict.

Each checkbox changes the *input* of a real check (the arguments, the caller's
scopes, the world), and the panel reruns ``toolkit.kernel.legality.check`` through the
scenario function. Nothing here fakes a bit.
"""
from __future__ import annotations

from typing import Callable

from toolkit.kernel import LAYER_OF, PRE_QUESTIONS, Outcome, Test, Verdict
from course.present.text_view import panel_bundle
from course.present.svg import (GREEN, GREY, INK, LIGHT_GREEN, LIGHT_RED, MUTED, PAPER, RED, drawn_html,
                                 svg_circle, svg_figure, svg_lines, svg_rect, svg_text)

#: A scenario maps three switches (schema fixed?, authorized?, ready?) to a real verdict.
Scenario = Callable[[bool, bool, bool], Verdict]


def verdict_text(verdict: Verdict) -> str:
    """Plain text of what the panel shows: each test's line, the indicator, and what blocked the call."""
    lines = verdict.lines()
    blocked = ", ".join(verdict.blocked_by)
    lines.append(f"blocked by: {blocked}" if blocked else "allowed: all three tests pass")
    return "\n".join(lines)


#: How each test's light looks: its colour, the digit in it, and the word under it.
LIGHTS = {Outcome.PASS: (GREEN, "1", "pass"), Outcome.FAIL: (RED, "0", "fail"),
          Outcome.NOT_EVALUABLE: (GREY, "–", "not evaluable")}


def light_title(test: Test) -> str:
    """What a light asks: ``Pre`` says which of its two questions said no (world ready, intended), if any did."""
    said_no = [PRE_QUESTIONS[e.code] for e in test.errors if e.code in PRE_QUESTIONS] if test.name == "Pre" else []
    return " & ".join(dict.fromkeys(said_no)) or (LAYER_OF[test.name].passed if test.name in LAYER_OF else "")


def product_line(verdict: Verdict) -> str:
    """The indicator as the lights show it: a test that was not evaluable is ``–``, e.g. ``1 × – × 0 = 0``."""
    return " × ".join(LIGHTS[t.outcome][1] for t in verdict.tests) + f" = {verdict.legal}"


def legality_svg(verdict: Verdict, labels: tuple[str, str, str] | None = None) -> str:
    """Three lights (one per test: its outcome and first reason), the product, and the verdict."""
    parts, width, height = [], 760, 190
    parts.append(svg_rect(0, 0, width, height, PAPER, rx=8))
    for i, test in enumerate(verdict.tests):
        x = 20 + i * 175
        colour, digit, word = LIGHTS[test.outcome]
        parts.append(svg_rect(x, 14, 160, 162, "white", colour if test.outcome is not Outcome.PASS else "#d0d7de",
                              rx=8))
        parts.append(svg_circle(x + 80, 52, 26, colour, data_test=test.name, data_state=word.replace(" ", "-")))
        parts.append(svg_text(x + 80, 61, digit, 26, "white", "middle", "bold"))
        parts.append(svg_text(x + 80, 98, f"{test.name}: {light_title(test)}", 12, INK, "middle", "bold"))
        parts.append(svg_text(x + 80, 115, word, 12, colour, "middle", "bold"))
        reason = "; ".join(e.message for e in test.errors)
        if not reason:
            reason = "could not be checked" if test.outcome is Outcome.NOT_EVALUABLE else (labels[i] if labels else "")
        drawn, _ = svg_lines(x + 80, 133, reason, 26, 10.5, MUTED, anchor="middle", most=3)
        parts.append(drawn)
    x = 555
    verdict_colour = GREEN if verdict.legal else RED
    parts.append(svg_rect(x, 14, 185, 162, LIGHT_GREEN if verdict.legal else LIGHT_RED, verdict_colour, rx=8,
                          data_verdict="legal" if verdict.legal else "refused"))
    parts.append(svg_text(x + 92, 44, "legal =", 14, INK, "middle"))
    parts.append(svg_text(x + 92, 80, product_line(verdict), 24, verdict_colour, "middle", "bold",
                          data_product=product_line(verdict)))
    parts.append(svg_text(x + 92, 116, "the call may run" if verdict.legal else "the call is refused", 14,
                          verdict_colour, "middle", "bold"))
    if verdict.blocked_by:
        parts.append(svg_text(x + 92, 140, "stopped by " + " and ".join(verdict.blocked_by), 12, INK, "middle"))
    label = f"legal = {product_line(verdict)}: " + ", ".join(
        f"{t.name} {LIGHTS[t.outcome][2]}" for t in verdict.tests)
    return svg_figure(width, height, parts, label, data_legal=verdict.legal)


class LegalityPanel:
    """Three checkboxes and a verdict display; drive it from Python with ``.set(...)`` and read ``.text()``."""

    def __init__(self, scenario: Scenario, labels: tuple[str, str, str]):
        import ipywidgets as w

        self.scenario, self.labels = scenario, labels
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
        self.view.value = drawn_html(legality_svg(verdict, self.labels), self._text, shown=True)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """Displayed itself, the panel is its widget, with its text form as the plain text."""
        return panel_bundle(self.widget, self.text(), **kwargs)
