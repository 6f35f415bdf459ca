"""Chapters 01-08: the one way panels draw: small inline-SVG pieces, and the block pairing a drawing with its text.

Every panel shows a drawing (SVG inside an ``ipywidgets.HTML``, no extension
needed) and its text form in the same block, rendered from the same state on every
change: shown under the drawing, or kept beside it visually hidden (a screen reader
and the browser tests read it either way); ``.text()`` returns the same text.
Elements carry ``data-*`` attributes naming what they stand for
(``data-test='Pre' data-state='fail'``), so a test can check the drawing itself.
"""
from __future__ import annotations

import html
import textwrap

from toolkit._show import shorten
from course.present.text_view import STYLE

INK, MUTED, FAINT, PAPER = "#24292f", "#57606a", "#d0d7de", "#f6f8fa"
GREEN, RED, AMBER, BLUE, GREY = "#1a7f37", "#cf222e", "#bf8700", "#0969da", "#8c959f"
LIGHT_GREEN, LIGHT_RED, LIGHT_AMBER, LIGHT_BLUE = "#dafbe1", "#ffebe9", "#fff8c5", "#ddf4ff"
FONT = "font-family:var(--jp-ui-font-family,system-ui,sans-serif)"

#: Hidden from the eye, not from a screen reader or ``innerText`` (a clipped block stays rendered).
HIDDEN = ("position:absolute;left:0;top:0;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;"
          "clip:rect(0 0 0 0);clip-path:inset(50%);white-space:pre;")


def _attrs(data: dict[str, object]) -> str:
    """``data_test="Pre"`` -> `` data-test='Pre'`` (every keyword a drawing function takes beyond its own)."""
    return "".join(f" {k.replace('_', '-')}='{html.escape(str(v), quote=True)}'" for k, v in data.items()
                   if k.startswith("data_"))


def svg_rect(x: float, y: float, w: float, h: float, fill: str, stroke: str | None = None, rx: float = 4,
             dash: str | None = None, **data: object) -> str:
    line = f" stroke='{stroke}' stroke-width='1.5'" if stroke else ""
    dashed = f" stroke-dasharray='{dash}'" if dash else ""
    return (f"<rect x='{x:.1f}' y='{y:.1f}' width='{max(w, 0):.1f}' height='{max(h, 0):.1f}' rx='{rx}' "
            f"fill='{fill}'{line}{dashed}{_attrs(data)}/>")


def svg_circle(cx: float, cy: float, r: float, fill: str, stroke: str | None = None, **data: object) -> str:
    line = f" stroke='{stroke}' stroke-width='2'" if stroke else ""
    return f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='{r}' fill='{fill}'{line}{_attrs(data)}/>"


def svg_line(x1: float, y1: float, x2: float, y2: float, stroke: str = FAINT, width: float = 1,
             dash: str | None = None, **data: object) -> str:
    dashed = f" stroke-dasharray='{dash}'" if dash else ""
    return (f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' stroke='{stroke}' "
            f"stroke-width='{width}'{dashed}{_attrs(data)}/>")


def svg_arrow(x1: float, y1: float, x2: float, y2: float, stroke: str = MUTED, width: float = 1.2,
              head: float = 7, **data: object) -> str:
    """A line from (x1, y1) to (x2, y2) with a filled head at its end, as one ``<g>`` carrying ``data``."""
    length = max(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1e-9)
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    base_x, base_y = x2 - head * ux, y2 - head * uy
    tip = ((x2, y2), (base_x + head / 2 * uy, base_y - head / 2 * ux), (base_x - head / 2 * uy, base_y + head / 2 * ux))
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in tip)
    return (f"<g{_attrs(data)}>{svg_line(x1, y1, base_x, base_y, stroke, width)}"
            f"<polygon points='{points}' fill='{stroke}'/></g>")


def svg_text(x: float, y: float, text: object, size: float = 13, fill: str = INK, anchor: str = "start",
             weight: str = "normal", mono: bool = False, **data: object) -> str:
    family = " font-family='monospace'" if mono else ""
    return (f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' fill='{fill}' text-anchor='{anchor}' "
            f"font-weight='{weight}'{family}{_attrs(data)}>{html.escape(str(text))}</text>")


def svg_lines(x: float, y: float, text: str, width: int, size: float = 11, fill: str = INK, lead: float = 1.25,
              anchor: str = "start", most: int = 3) -> tuple[str, int]:
    """``text`` wrapped at ``width`` characters as stacked ``<text>`` rows (at most ``most``); (svg, rows)."""
    rows = textwrap.wrap(text, width) or [""]
    if len(rows) > most:     # the last row holds the rest of the text, cut to the width
        rows = rows[:most - 1] + [shorten(" ".join(rows[most - 1:]), width)]
    parts = [svg_text(x, y + i * size * lead, row, size, fill, anchor) for i, row in enumerate(rows)]
    return "".join(parts), len(rows)


def svg_figure(width: float, height: float, parts: list[str], label: str, **data: object) -> str:
    """An ``<svg>`` of the given size; ``label`` is its accessible name (a one-line summary of the state)."""
    return (f"<svg xmlns='http://www.w3.org/2000/svg' class='tk-drawing' width='{width:.0f}' height='{height:.0f}' "
            f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' aria-label='{html.escape(label, quote=True)}' "
            f"style='{FONT};max-width:100%;height:auto'{_attrs(data)}>" + "".join(parts) + "</svg>")


def drawn_html(drawing: str, text: str, shown: bool = False) -> str:
    """The panel's text form and its drawing, as one block made from the same state.

    ``shown=True``: the drawing, then its text form in plain sight under it (every chapter
    panel: what the room reads changes with every click). Otherwise the
    text form comes first, hidden from the eye only; attributes are single-quoted throughout and
    the block opens as the panels' text view always has (``text_view.STYLE``), so the short
    ``repr`` of a panel's widget that a notebook stores stays the same.
    """
    if shown:
        return (f"<div class='tk-panel'>{drawing}</div>"
                f"<pre style='{STYLE}' class='tk-text'>{html.escape(text)}</pre>")
    return (f"<pre style='{STYLE}{HIDDEN}' class='tk-text'>{html.escape(text)}</pre>"
            f"<div class='tk-panel'>{drawing}</div>")


__all__ = ["AMBER", "BLUE", "FAINT", "GREEN", "GREY", "INK", "LIGHT_AMBER", "LIGHT_BLUE", "LIGHT_GREEN",
           "LIGHT_RED", "MUTED", "PAPER", "RED", "drawn_html", "svg_arrow", "svg_circle", "svg_figure", "svg_line",
           "svg_lines", "svg_rect", "svg_text"]
