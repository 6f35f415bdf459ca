"""Chapter 04: sliders for the prices of cost and risk, and the legal call they choose."""
from __future__ import annotations

from typing import Sequence

from toolkit.core import Option, choose
from toolkit.present.text_view import pre_html


def choice_text(options: Sequence[Option], lam_c: float, lam_r: float) -> str:
    """What the panel shows: every legal option's governed score and the one chosen."""
    choice = choose(options, lam_c, lam_r)
    head = f"lambda_c = {lam_c:g}, lambda_r = {lam_r:g}"
    best = choice.best.name if choice.best else "nothing (no legal call)"
    return "\n".join([head, *choice.lines(), f"chosen: {best}"])


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
        self.view.value = pre_html(self._text)

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)
