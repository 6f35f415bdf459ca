"""Chapter 08: the scheduler's plan as a timeline, and what a real run did, measured in logical steps.

``timeline_text`` and ``timeline`` draw rows shaped like ``Plan.rows()``
(``call_id``, ``name``, ``start``, ``end``, optionally ``reads``, ``writes``,
``waits_for``): one bar per call, from the logical step it starts in to the one
it ends in. If every call takes one step, a plan of waves ``[[r1, r2, w1], [w2],
[r3]]`` needs three steps where one-at-a-time needs five. The same drawing
shows a measured run: ``toolkit.wire.step_recorder.StepRecorder.rows()`` has
the same shape, in steps measured without a clock.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

Row = Mapping[str, Any]


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
        notes = [_touches(r)] if _touches(r) else []
        if r.get("waits_for"):
            notes.append("after " + ", ".join(_waited_ids(r)))
        lines.append((f"{label:<{label_width}}{blocks} " + "; ".join(notes)).rstrip())
    return "\n".join(lines)


def timeline(rows: Sequence[Row], title: str = "plan", ax: Any = None) -> Any:
    """Draw rows as a timeline (matplotlib): bars in logical steps, coloured by tool, arrows for waits.

    Returns the figure. Calls are listed top to bottom in the order given.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(7.2, 0.4 * max(len(rows), 2) + 1.2))
    else:
        fig = ax.figure
    colours = {name: f"C{i}" for i, name in enumerate(dict.fromkeys(r["name"] for r in rows))}
    where = {r["call_id"]: (i, r) for i, r in enumerate(rows)}
    labelled: set[str] = set()
    for i, r in enumerate(rows):
        ax.barh(i, r["end"] - r["start"], left=r["start"], height=0.55, color=colours[r["name"]], alpha=0.8,
                edgecolor="black", linewidth=0.6, label=None if r["name"] in labelled else r["name"])
        labelled.add(r["name"])   # one legend entry per tool
        note = _touches(r)
        if note:
            ax.text(r["end"] + 0.05, i, note, va="center", fontsize=8)
        for waited in _waited_ids(r):
            if waited in where:
                j, before = where[waited]
                ax.annotate("", xy=(r["start"] + 0.12, i - 0.2), xytext=(before["end"] - 0.12, j + 0.2),
                            arrowprops={"arrowstyle": "->", "color": "0.25", "lw": 0.9})
    steps = max((int(r["end"]) for r in rows), default=1)
    ax.set_yticks(range(len(rows)), [f"{r['call_id']} {r['name']}" for r in rows])
    ax.invert_yaxis()
    ax.set_xticks(range(steps + 1))
    ax.set_xlim(0, steps + 2.2)
    ax.set_xlabel("logical step (every call takes one)")
    ax.set_title(title)
    ax.grid(axis="x", linestyle=":", alpha=0.6)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def timelines(panels: Mapping[str, Sequence[Row]]) -> Any:
    """Several timelines stacked, sharing the step axis (e.g. the plan, a measured run, a one-at-a-time run)."""
    import matplotlib.pyplot as plt

    heights = [max(len(rows), 2) for rows in panels.values()]
    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(7.2, 0.32 * sum(heights) + 1.1 * len(panels)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for n, (ax, (title, rows)) in enumerate(zip(axes[:, 0], panels.items())):
        timeline(rows, title, ax)
        if n < len(panels) - 1:
            ax.set_xlabel("")
    return fig
