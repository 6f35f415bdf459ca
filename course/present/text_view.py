"""Chapters 01-08: a monospaced text block for a page, optionally with a coloured edge (for text-only views).

The chapter panels draw instead (``course.present.svg``) and keep their text form hidden beside the drawing.

Monospace keeps the panels' columns lined up in JupyterLab and in Voila alike
(Voila's page styles would otherwise set ``<pre>`` in a proportional font).
"""
from __future__ import annotations

import html

STYLE = "font-family:var(--jp-code-font-family,monospace);line-height:1.35;"


def pre_html(text: str, colour: str | None = None) -> str:
    """``text`` escaped inside a ``<pre>``; ``colour`` draws a left edge (green for allowed, red for refused)."""
    edge = f"border-left:4px solid {colour};padding-left:8px;" if colour else ""
    return f"<pre style='{STYLE}{edge}'>{html.escape(text)}</pre>"
