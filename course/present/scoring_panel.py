"""Chapter 04: sliders for the prices of cost and risk, and the legal call they choose."""
from __future__ import annotations

from typing import Sequence

from toolkit.kernel import Option, choose
from course.present.text_view import panel_bundle
from course.present.svg import (AMBER, FAINT, GREEN, GREY, INK, LIGHT_GREEN, MUTED, PAPER, RED, drawn_html,
                                 svg_figure, svg_line, svg_rect, svg_text)


def choice_text(options: Sequence[Option], lam_c: float, lam_r: float) -> str:
    """What the panel shows: every legal option's governed score and the one chosen."""
    choice = choose(options, lam_c, lam_r)
    head = f"lambda_c = {lam_c:g}, lambda_r = {lam_r:g}"
    best = choice.best.name if choice.best else "nothing (no legal call)"
    return "\n".join([head, *choice.lines(), f"chosen: {best}"])


def choice_svg(options: Sequence[Option], lam_c: float, lam_r: float) -> str:
    """One row per option: its value as a bar, priced cost and risk taken off it, the score left; the chosen framed."""
    choice = choose(options, lam_c, lam_r)
    options = list(options)
    width, row = 760, 46
    height = 58 + row * len(options) + 20
    left, span = 190, 360
    top = max([o.value for o in options] + [1.0])
    low = min([0.0] + [s for s in choice.scores.values()])
    scale = span / (top - low)
    zero = left - low * scale
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8),
             svg_text(16, 24, f"λc = {lam_c:g} (price of cost) · λr = {lam_r:g} (price of risk)", 13, INK,
                      weight="bold"),
             svg_rect(left, 36, 10, 10, GREEN, rx=2), svg_text(left + 14, 45, "value", 11, MUTED),
             svg_rect(left + 64, 36, 10, 10, AMBER, rx=2), svg_text(left + 78, 45, "λc × cost", 11, MUTED),
             svg_rect(left + 150, 36, 10, 10, RED, rx=2), svg_text(left + 164, 45, "λr × risk", 11, MUTED),
             svg_text(left + 240, 45, "| score left", 11, INK)]
    for i, option in enumerate(options):
        y = 58 + i * row
        chosen = choice.best is not None and option.name == choice.best.name
        name = option.name
        if option.legal != 1:
            parts += [svg_rect(8, y, width - 16, row - 6, "white", FAINT, rx=6, dash="4 3", data_option=name,
                               data_state="not-legal"),
                      svg_text(20, y + 25, name, 13, GREY), svg_text(left, y + 25, "not legal: never scored", 12, GREY)]
            continue
        parts.append(svg_rect(8, y, width - 16, row - 6, LIGHT_GREEN if chosen else "white", GREEN if chosen
                              else FAINT, rx=6, data_option=name, data_state="chosen" if chosen else "scored"))
        parts.append(svg_text(20, y + 25, name, 13, INK, weight="bold" if chosen else "normal"))
        end = zero + option.value * scale
        parts.append(svg_rect(zero, y + 8, option.value * scale, 12, GREEN, rx=2))
        cost, risk = lam_c * option.cost * scale, lam_r * option.risk * scale
        parts.append(svg_rect(end - cost, y + 22, cost, 8, AMBER, rx=1))
        parts.append(svg_rect(end - cost - risk, y + 22, risk, 8, RED, rx=1))
        score = choice.scores[name]
        mark = zero + score * scale
        parts.append(svg_line(mark, y + 4, mark, y + 36, INK, 2, data_score=f"{score:g}"))
        parts.append(svg_text(left + span + 30, y + 25, f"score {score:g}", 13, INK, weight="bold"))
        if chosen:
            parts.append(svg_text(width - 20, y + 25, "chosen", 13, GREEN, "end", "bold"))
    parts.append(svg_line(zero, 52, zero, height - 14, MUTED, 1, dash="3 3"))
    best = choice.best.name if choice.best else "nothing"
    return svg_figure(width, height, parts, f"chosen: {best} at λc {lam_c:g}, λr {lam_r:g}", data_chosen=best)


class ScoringPanel:
    """Two sliders (λc, λr) over a fixed set of options; ``.set(lam_c=..., lam_r=...)`` then ``.text()``."""

    def __init__(self, options: Sequence[Option], lam_c: float = 1.0, lam_r: float = 1.0):
        import ipywidgets as w

        self.options = list(options)
        self.lam_c = w.FloatSlider(value=lam_c, min=0.0, max=3.0, step=0.25, description="λc (cost)")
        self.lam_r = w.FloatSlider(value=lam_r, min=0.0, max=3.0, step=0.25, description="λr (risk)")
        self.view = w.HTML()
        for slider in (self.lam_c, self.lam_r):
            slider.observe(self._update, names="value")
        self.widget = w.VBox([self.lam_c, self.lam_r, self.view])
        self._update()

    def set(self, lam_c: float | None = None, lam_r: float | None = None) -> str:
        if lam_c is not None:
            self.lam_c.value = lam_c
        if lam_r is not None:
            self.lam_r.value = lam_r
        return self.text()

    def text(self) -> str:
        return self._text

    def _update(self, _change: object = None) -> None:
        self._text = choice_text(self.options, self.lam_c.value, self.lam_r.value)
        drawing = choice_svg(self.options, self.lam_c.value, self.lam_r.value)
        self.view.value = drawn_html(drawing, self._text, shown=True)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """Displayed itself, the panel is its widget, with its text form as the plain text."""
        return panel_bundle(self.widget, self.text(), **kwargs)
