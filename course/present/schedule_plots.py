"""Chapter 08: the scheduler's plan as a timeline, and what a real run did, measured in logical steps.

``timeline_text`` and ``timeline`` draw rows shaped like ``Plan.rows()``
(``call_id``, ``name``, ``start``, ``end``, optionally ``reads``, ``writes``,
``waits_for``): one bar per call, from the logical step it starts in to the one
it ends in, and an arrow from each call to every call that waits for it. If
every call takes one step, a plan of waves ``[[r1, r2, w1], [w2], [r3]]`` needs
three steps where one-at-a-time needs five. The same drawing shows a measured
run: ``course.worlds.step_recorder.StepRecorder.rows()`` has the same shape, in
steps measured without a clock.

``timeline`` returns a ``Timeline``: a notebook shows its SVG drawing, and its
plain-text form (``.text``, also its ``repr``) is the ``timeline_text`` table.
Bars carry ``data-call``, ``data-start`` and ``data-end``; arrows carry
``data-wait="w1->w2"``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from course.present.svg import (AMBER, BLUE, FAINT, GREY, INK, LIGHT_AMBER, LIGHT_BLUE, MUTED, PAPER, svg_figure,
                                 svg_arrow, svg_line, svg_rect, svg_text)

Row = Mapping[str, Any]
#: Bar colours by what a call does: (fill, outline).
TOOL_COLOURS = {"read_file": (LIGHT_BLUE, BLUE), "write_file": (LIGHT_AMBER, AMBER)}
LABEL_W, STEP_W, ROW_H, HEAD_H = 150, 96, 30, 24


def _waited_ids(row: Row) -> list[str]:
    """Call ids out of ``waits_for`` entries such as ``"w1 (write-write file:c.txt)"``."""
    return [entry.rsplit(" (", 1)[0] for entry in row.get("waits_for", [])]


def _touches(row: Row) -> str:
    parts = []
    if row.get("reads"):
        parts.append("reads " + ", ".join(row["reads"]))
    if row.get("writes"):
        parts.append("writes " + ", ".join(row["writes"]))
    return "; ".join(parts)


def _note(row: Row) -> str:
    """What a call touches and whom it waits for: ``"writes file:c.txt; after w1"``."""
    waits = "after " + ", ".join(_waited_ids(row)) if row.get("waits_for") else ""
    return "; ".join(part for part in (_touches(row), waits) if part)


def timeline_text(rows: Sequence[Row], cell: int = 6) -> str:
    """The timeline as text: one line per call, a ``[####]`` block in each logical step it occupies."""
    if not rows:
        return "(no calls)"
    steps = max(int(r["end"]) for r in rows)
    labels = [f"{r['call_id']} {r['name']}" for r in rows]
    label_width = max(map(len, labels)) + 2
    head = " " * label_width + "".join(f"{f'step {s}':<{cell + 1}}" for s in range(steps))
    lines = [head.rstrip()]
    for label, r in zip(labels, rows):
        blocks = "".join(("[" + "#" * (cell - 2) + "] ") if r["start"] <= s < r["end"] else " " * (cell + 1)
                         for s in range(steps))
        lines.append(f"{label:<{label_width}}{blocks} {_note(r)}".rstrip())
    return "\n".join(lines)


class Timeline:
    """A drawn timeline: a notebook shows ``svg``; ``text`` (also the ``repr``) is the same in words."""

    def __init__(self, svg: str, text: str):
        self.svg, self.text = svg, text

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return self.text


def _section(rows: Sequence[Row], title: str, top: float, steps: int) -> tuple[list[str], float]:
    """The SVG pieces of one timeline starting at height ``top``; returns (pieces, height used)."""
    parts = [svg_text(10, top + 16, title, 13, INK, weight="bold")]
    grid_top = top + HEAD_H
    body = ROW_H * max(len(rows), 1)
    for s in range(steps + 1):
        x = LABEL_W + s * STEP_W
        parts.append(svg_line(x, grid_top, x, grid_top + body + 4, FAINT, 1, "3 3"))
        if s < steps:
            parts.append(svg_text(x + STEP_W / 2, grid_top + body + 18, f"step {s}", 11, MUTED, "middle"))
    where = {r["call_id"]: i for i, r in enumerate(rows)}
    for i, r in enumerate(rows):
        y = grid_top + i * ROW_H
        fill, stroke = TOOL_COLOURS.get(r["name"], ("white", GREY))
        parts.append(svg_text(10, y + 19, f"{r['call_id']} {r['name']}", 12, INK, mono=True))
        parts.append(svg_rect(LABEL_W + r["start"] * STEP_W + 4, y + 5, (r["end"] - r["start"]) * STEP_W - 8,
                              ROW_H - 10, fill, stroke, rx=4, data_call=r["call_id"], data_start=r["start"],
                              data_end=r["end"]))
        note = _note(r)
        if note:
            parts.append(svg_text(LABEL_W + steps * STEP_W + 10, y + 19, note, 11, MUTED))
        for waited in _waited_ids(r):
            if waited in where:
                j, before = where[waited], rows[where[waited]]
                parts.append(svg_arrow(LABEL_W + before["end"] * STEP_W - 6, grid_top + j * ROW_H + ROW_H / 2,
                                       LABEL_W + r["start"] * STEP_W + 5, y + ROW_H / 2, MUTED, 1.2,
                                       data_wait=f"{waited}->{r['call_id']}"))
    return parts, HEAD_H + body + 28


def timelines(panels: Mapping[str, Sequence[Row]]) -> Timeline:
    """Several timelines stacked on one step axis (e.g. the plan, a measured run, a one-at-a-time run)."""
    steps = max((int(r["end"]) for rows in panels.values() for r in rows), default=1)
    notes = max((len(_note(r)) for rows in panels.values() for r in rows), default=0)
    width = LABEL_W + steps * STEP_W + 20 + 6.2 * notes
    parts, top = [], 8.0
    for title, rows in panels.items():
        section, used = _section(rows, title, top, steps)
        parts += section
        top += used + 8
    parts.insert(0, svg_rect(0, 0, width, top, PAPER, rx=8))
    label = "; ".join(f"{title}: {max((int(r['end']) for r in rows), default=0)} logical steps"
                      for title, rows in panels.items())
    text = "\n\n".join(f"{title}\n{timeline_text(rows)}" for title, rows in panels.items())
    return Timeline(svg_figure(width, top, parts, label), text)


def timeline(rows: Sequence[Row], title: str = "plan") -> Timeline:
    """One timeline: bars in logical steps, coloured by tool, an arrow from each call to the calls waiting for it."""
    return timelines({title: rows})


__all__ = ["TOOL_COLOURS", "Timeline", "timeline", "timeline_text", "timelines"]
