"""Chapter 01: a call is a small transaction: the chapter's diagram, drawn from the record's own state machine.

What the picture shows is listed, and checked, in ``toolkit.effects.call_stages``:
the main line's *stages*, each tagged with the execution-record state the call
is in once that stage has passed, and the side branches, each a *move* of that
record. ``moves()`` checks every move against ``records.TRANSITIONS`` before
anything is drawn or printed; this module only draws and prints.

``text()`` is the diagram as plain text (what a notebook's stored output and
nbval compare); ``draw()`` is the matplotlib figure. Every arrow ``draw()``
makes for a record move carries ``gid="move:<source>-><target>"``, so a test
can read the moves back out of the picture itself.
"""
from __future__ import annotations

import textwrap

# Branch, Stage and status_of are not used here; they stay importable as ``transaction_diagram.X`` for chapter 01.
from toolkit.effects import (BRANCHES, STAGES, Branch, RecordState, Stage, main_moves, moves, not_drawn,
                             status_of)

S = RecordState


def _tag(stage: Stage) -> str:
    return f"{stage.name} [{stage.state.value}]" if stage.state else stage.name


def text(width: int = 110) -> str:
    """The diagram as plain text: main line, side branches with their advice, and the moves it shows."""
    drawn = moves()
    line = " -> ".join(_tag(s) for s in STAGES)
    out = ["One call is a small transaction (the record's state after each stage in brackets):", ""]
    out += textwrap.wrap(line, width, subsequent_indent="    ", break_on_hyphens=False)
    out += ["", "Side branches (each still writes a result back under the call id):"]
    for b in BRANCHES:
        failure = f" ({', '.join(f.value for f in b.failure)})" if b.failure else ""
        head = f"  {b.stage:<8} --{b.label}--> {b.target.value}{failure}"
        out.append(head)
        out += textwrap.wrap(f"{b.then}: {b.advice}", width, initial_indent="      ", subsequent_indent="      ")
    out += ["", f"Record moves drawn ({len(drawn)}, each one in records.TRANSITIONS):"]
    out += textwrap.wrap(", ".join(f"{a.value}->{b.value}" for a, b in drawn), width,
                         initial_indent="  ", subsequent_indent="  ")
    rest = not_drawn()
    out.append(f"Moves the record also allows, left out of the picture ({len(rest)}): retries, cancellations, "
               "reconciling a timeout, a person's decision.")
    return "\n".join(out)


# ------------------------------------------------------------------ the picture
_MAIN_Y, _BRANCH_Y = 3.0, 1.45
_BOX_W, _BRANCH_W, _BOX_H, _STEP = 1.3, 1.42, 0.62, 1.74
_GREY, _RED, _AMBER, _BLUE = "#57606a", "#cf222e", "#9a6700", "#0969da"


def _box(ax, x: float, y: float, title: str, sub: str, colour: str, width: float = _BOX_W,
         sub_size: float = 7.5) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - width / 2, y - _BOX_H / 2), width, _BOX_H, boxstyle="round,pad=0.04",
                                linewidth=1.4, edgecolor=colour, facecolor="white", zorder=2))
    ax.text(x, y + 0.09, title, ha="center", va="center", fontsize=9.5, weight="bold", zorder=3)
    if sub:
        ax.text(x, y - 0.16, sub, ha="center", va="center", fontsize=sub_size, color=_GREY, zorder=3)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], colour: str, gid: str,
           label: str = "") -> None:
    from matplotlib.patches import FancyArrowPatch

    arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=11, linewidth=1.3, color=colour,
                            zorder=1, shrinkA=0, shrinkB=0)
    arrow.set_gid(gid)
    ax.add_patch(arrow)
    if label:
        ax.text((start[0] + end[0]) / 2 + 0.06, (start[1] + end[1]) / 2, label, fontsize=8, color=colour,
                ha="left", va="center", style="italic", zorder=3)


def draw(ax=None):
    """Draw the diagram with matplotlib and return the figure (``plt.show()`` displays it)."""
    import matplotlib.pyplot as plt

    drawn = moves()   # refuses to draw a move the record does not allow
    if ax is None:
        _, ax = plt.subplots(figsize=(13.8, 4.6))
    x_of = {stage.name: i * _STEP for i, stage in enumerate(STAGES)}
    main = set(main_moves())
    for i, stage in enumerate(STAGES):
        _box(ax, x_of[stage.name], _MAIN_Y, stage.name, stage.state.value if stage.state else "no record yet",
             _BLUE if stage.state else _GREY)
        if i:
            before = STAGES[i - 1]
            gid = (f"move:{before.state.value}->{stage.state.value}" if (before.state, stage.state) in main
                   else f"stage:{before.name}->{stage.name}")       # no record move: grey
            _arrow(ax, (x_of[before.name] + _BOX_W / 2, _MAIN_Y), (x_of[stage.name] - _BOX_W / 2, _MAIN_Y),
                   _BLUE if gid.startswith("move:") else _GREY, gid)
    for branch in BRANCHES:
        colour = _RED if branch.target is S.REJECTED else _AMBER
        gid = f"move:{branch.source.value}->{branch.target.value}"
        if branch.stage in x_of:                 # down from a main-line stage
            x = x_of[branch.stage]
            _arrow(ax, (x, _MAIN_Y - _BOX_H / 2), (x, _BRANCH_Y + _BOX_H / 2), colour, gid, branch.label)
        else:                                    # sideways from another branch (timeout -> awaiting_human)
            parent = _branch_x(branch.stage, x_of)
            x = parent + 2.6
            start, end = parent + _width(branch.stage) / 2, x - _width(branch.target.value) / 2
            _arrow(ax, (start, _BRANCH_Y), (end, _BRANCH_Y), colour, gid)
            ax.text((start + end) / 2, _BRANCH_Y + 0.1, branch.label, fontsize=8, color=colour, ha="center",
                    va="bottom", style="italic")
        _box(ax, x, _BRANCH_Y, branch.target.value, branch.then, colour, width=_width(branch.target.value),
             sub_size=6.8)
        note = "\n".join(textwrap.wrap(branch.advice, 27))
        ax.text(x, _BRANCH_Y - _BOX_H / 2 - 0.1, note, fontsize=7, color=_GREY, ha="center", va="top")
    left, right = x_of[STAGES[0].name] - 0.9, x_of[STAGES[-1].name] + 0.9
    bottom = _BRANCH_Y - 1.55
    ax.add_patch(_frame(left, bottom, right - left, _MAIN_Y + 0.75 - bottom))
    ax.text((left + right) / 2, _MAIN_Y + 0.55, "the transaction boundary of one complete call", ha="center",
            fontsize=8.5, color=_GREY)
    ax.text(left + 0.15, bottom + 0.15, "every branch still writes a result back under the call id",
            fontsize=8, color=_GREY, ha="left", va="bottom", style="italic")
    ax.set_xlim(left - 0.1, right + 0.1)
    ax.set_ylim(bottom - 0.1, _MAIN_Y + 0.9)
    ax.set_axis_off()
    ax.set_title(f"A call is a small transaction: {len(drawn)} record moves, each one in records.TRANSITIONS",
                 fontsize=11)
    ax.figure.tight_layout()
    return ax.figure


def _width(target: str) -> float:
    """A branch box wide enough for its caption."""
    then = max((b.then for b in BRANCHES if b.target.value == target), key=len, default="")
    return max(_BRANCH_W, 0.054 * len(then) + 0.12)


def _branch_x(stage: str, x_of: dict[str, float]) -> float:
    """A branch that leaves a branch box sits under that box."""
    parent = next(b for b in BRANCHES if b.target.value == stage)
    return x_of[parent.stage]


def _frame(x: float, y: float, w: float, h: float):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, fill=False, linestyle="--", linewidth=1.0, edgecolor=_GREY, zorder=0)


def drawn_moves(fig) -> list[tuple[str, str]]:
    """The record moves a drawn figure actually shows, read from its arrows' ``gid``s."""
    from matplotlib.patches import FancyArrowPatch

    found = []
    for ax in fig.axes:
        for patch in ax.patches:
            gid = patch.get_gid() or ""
            if isinstance(patch, FancyArrowPatch) and gid.startswith("move:"):
                source, target = gid.removeprefix("move:").split("->")
                found.append((source, target))
    return found


__all__ = ["BRANCHES", "Branch", "STAGES", "Stage", "draw", "drawn_moves", "main_moves", "moves", "not_drawn",
           "status_of", "text"]
