"""Chapter 01: a call is a small transaction: the chapter's diagram, drawn from the record's own state machine.

What the picture shows is listed, and checked, in ``course.worlds.call_stages``:
the main line's *stages*, each tagged with the execution-record state the call
is in once that stage has passed, and the side branches, each a *move* of that
record. ``moves()`` checks every move against ``records.TRANSITIONS`` before
anything is drawn or printed; this module only draws and prints.

``text()`` is the diagram as plain text (what a notebook's stored output and
nbval compare); ``draw()`` is the same diagram as inline SVG. Every arrow
``draw()`` makes for a record move carries ``data-move='<source>-><target>'``,
so ``drawn_moves`` (and a test) can read the moves back out of the drawing.
"""
from __future__ import annotations

import html
import re
import textwrap

# Branch, Stage and status_of are not used here; they stay importable as ``transaction_diagram.X`` for chapter 01.
from toolkit.effects import RecordState
from course.worlds import BRANCHES, STAGES, Branch, Stage, main_moves, moves, not_drawn, status_of
from course.present.svg import (AMBER, BLUE, GREY, INK, MUTED, PAPER, RED, svg_arrow, svg_figure, svg_lines, svg_rect,
                                 svg_text)

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
_STEP, _BOX_W, _BOX_H, _LEFT = 168, 122, 46, 100       # main line: pitch, box size, first box's centre
_MAIN_Y, _BRANCH_Y, _SIDEWAYS = 96, 236, 270          # box centres; a branch off a branch sits this far right
_BRANCH_W, _CHAR_W, _TITLE_W = 120, 5.6, 8.6           # narrowest branch box; one character at 10 px, at 13 px bold


def _box(x: float, y: float, title: str, sub: str, colour: str, width: float = _BOX_W, **data: object) -> list[str]:
    return [svg_rect(x - width / 2, y - _BOX_H / 2, width, _BOX_H, "white", colour, rx=6, **data),
            svg_text(x, y - 3, title, 13, INK, "middle", "bold"),
            svg_text(x, y + 14, sub, 10, MUTED, "middle")]


def draw() -> str:
    """The diagram as inline SVG (``display(HTML(draw()))`` shows it in a notebook).

    Each record-move arrow is a ``<g data-move='<source>-><target>'>``; an arrow along the main line that moves no
    record carries ``data-stage`` instead; stage boxes carry ``data-stage``, branch boxes ``data-branch``.
    """
    drawn = moves()   # refuses to draw a move the record does not allow
    x_of = {stage.name: _LEFT + i * _STEP for i, stage in enumerate(STAGES)}
    main = set(main_moves())
    left, right = x_of[STAGES[0].name] - _BOX_W / 2 - 24, x_of[STAGES[-1].name] + _BOX_W / 2 + 24
    top, bottom = 40, _BRANCH_Y + _BOX_H / 2 + 92
    width, height = right + 16, bottom + 12
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8),
             svg_text(16, 24, f"A call is a small transaction: {len(drawn)} record moves, each one in "
                              "records.TRANSITIONS", 14, INK, weight="bold"),
             svg_rect(left, top, right - left, bottom - top, "none", MUTED, rx=2, dash="6 4"),
             svg_text((left + right) / 2, top + 18, "the transaction boundary of one complete call", 11, MUTED,
                      "middle"),
             svg_text(left + 10, bottom - 10, "every branch still writes a result back under the call id", 11,
                      MUTED)]
    for i, stage in enumerate(STAGES):
        parts += _box(x_of[stage.name], _MAIN_Y, stage.name, stage.state.value if stage.state else "no record yet",
                      BLUE if stage.state else GREY, data_stage=stage.name)
        if i:
            before = STAGES[i - 1]
            ends = (x_of[before.name] + _BOX_W / 2, _MAIN_Y, x_of[stage.name] - _BOX_W / 2, _MAIN_Y)
            if (before.state, stage.state) in main:
                parts.append(svg_arrow(*ends, BLUE, 1.5, data_move=f"{before.state.value}->{stage.state.value}"))
            else:                                  # no record move: a grey step
                parts.append(svg_arrow(*ends, GREY, 1.5, data_stage=f"{before.name}->{stage.name}"))
    for branch in BRANCHES:
        colour = RED if branch.target is S.REJECTED else AMBER
        move = f"{branch.source.value}->{branch.target.value}"
        if branch.stage in x_of:                   # down from a main-line stage, labelled beside the arrow
            x = x_of[branch.stage]
            parts += [svg_arrow(x, _MAIN_Y + _BOX_H / 2, x, _BRANCH_Y - _BOX_H / 2, colour, 1.5, data_move=move),
                      svg_text(x + 6, (_MAIN_Y + _BRANCH_Y) / 2 + 4, branch.label, 11, colour)]
        else:                                      # sideways from another branch (timeout -> awaiting_human)
            parent = _branch_x(branch.stage, x_of)
            x = parent + _SIDEWAYS
            start, end = parent + _width(branch.stage) / 2, x - _width(branch.target.value) / 2
            parts += [svg_arrow(start, _BRANCH_Y, end, _BRANCH_Y, colour, 1.5, data_move=move),
                      svg_text((start + end) / 2, _BRANCH_Y - 6, branch.label, 11, colour, "middle")]
        parts += _box(x, _BRANCH_Y, branch.target.value, branch.then, colour, _width(branch.target.value),
                      data_branch=branch.label)
        note, _ = svg_lines(x, _BRANCH_Y + _BOX_H / 2 + 15, branch.advice, 24, 10, MUTED, anchor="middle", most=5)
        parts.append(note)
    label = (f"one call's stages, {' -> '.join(s.name for s in STAGES)}, and its side branches; record moves drawn: "
             + ", ".join(f"{a.value}->{b.value}" for a, b in drawn))
    return svg_figure(width, height, parts, label, data_moves=len(drawn))


def _width(target: str) -> float:
    """A branch box wide enough for its caption."""
    then = max((b.then for b in BRANCHES if b.target.value == target), key=len, default="")
    return max(_BRANCH_W, _CHAR_W * len(then) + 16, _TITLE_W * len(target) + 16)


def _branch_x(stage: str, x_of: dict[str, float]) -> float:
    """A branch that leaves a branch box sits under that box."""
    parent = next(b for b in BRANCHES if b.target.value == stage)
    return x_of[parent.stage]


_MOVE = re.compile(r"data-move='([^']*)'")


def drawn_moves(svg: str) -> list[tuple[str, str]]:
    """The record moves a drawing actually shows, read from its arrows' ``data-move`` attributes, in order."""
    found = []
    for value in _MOVE.findall(svg):
        source, target = html.unescape(value).split("->")
        found.append((source, target))
    return found


__all__ = ["BRANCHES", "Branch", "STAGES", "Stage", "draw", "drawn_moves", "main_moves", "moves", "not_drawn",
           "status_of", "text"]
