"""Chapters 01-08: a monospaced text block for a page, optionally with a coloured edge (for text-only views).

``panel_bundle`` is what a panel shows when displayed itself (``panel`` as a cell's last
line): its widget, with the panel's text form as the plain text, so a page that cannot draw
the widget (a notebook not yet trusted, reopened before its kernel has run) shows the
panel's words, not a ``VBox(...)`` line.

The chapter panels draw instead (``course.present.svg``) and show their text form under the drawing.

Monospace keeps the panels' columns lined up in JupyterLab and in Voila alike
(Voila's page styles would otherwise set ``<pre>`` in a proportional font).
"""
from __future__ import annotations

import html
from typing import Any

STYLE = "font-family:var(--jp-code-font-family,monospace);line-height:1.35;"


def pre_html(text: str, colour: str | None = None) -> str:
    """``text`` escaped inside a ``<pre>``; ``colour`` draws a left edge (green for allowed, red for refused)."""
    edge = f"border-left:4px solid {colour};padding-left:8px;" if colour else ""
    return f"<pre style='{STYLE}{edge}'>{html.escape(text)}</pre>"


def panel_bundle(widget: Any, text: str, **kwargs: Any) -> dict[str, Any]:
    """``widget``'s mime bundle (its view), with ``text`` as its ``text/plain``."""
    return {**(widget._repr_mimebundle_(**kwargs) or {}), "text/plain": text}
