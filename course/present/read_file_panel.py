"""Chapter 01: the read_file panel: pick a request, cut validation layers, watch what stops it.

``ReadFilePanel`` puts a dropdown of the chapter's ``REQUESTS`` and one
checkbox per ``READ_FILE_LAYERS`` switch in front of
``course.worlds.attempt``, and draws what the attempt reports. Drive it from
Python with ``.set(request=..., schema=False)`` and read ``.text()``. The
world it acts on is a ``course.worlds.DemoTree``; without one the panel makes
its own in a temporary folder, removed by ``close()`` (or a ``with`` block).
"""
from __future__ import annotations

import re

from toolkit.kernel import READ_FILE_LAYERS

from course.present.text_view import panel_bundle
from course.present.svg import (FAINT, GREEN, GREY, INK, LIGHT_GREEN, LIGHT_RED, MUTED, PAPER, RED, drawn_html,
                                 svg_figure, svg_line, svg_lines, svg_rect, svg_text)
from course.worlds import REQUESTS, Attempted, DemoTree, attempt, demo_workspace
from course.worlds.demo_tree import read_file_switch


#: The ladder a request climbs, bottom to top: (rung, what it asks, the host test or executor rung it stands for).
RUNGS = (("complete call", "did the call arrive whole?", None),
         ("schema layer", "are the arguments well-formed?", "schema_ok"),
         ("path layer", "does the path stay in the workspace?", "auth_ok"),
         ("business layer", "is the world ready for it?", "Pre"),
         ("executor rung 1", "lexical: no absolute path, no ..", 1),
         ("executor rung 2", "real path: no link leading out", 2),
         ("executor rung 3", "open step by step, no link followed", 3),
         ("the file is read", "the request becomes an action", 4))


def _rung_states(current: Attempted) -> list[str]:
    """One state per rung: passed, refused, off (a layer switched off) or unreached."""
    if current.verdict is None:
        return ["refused"] + ["unreached"] * (len(RUNGS) - 1)
    states, stopped = ["passed"], False
    outcomes = {t.name: t.outcome.value for t in current.verdict.tests}
    for _, _, test in RUNGS[1:4]:
        if read_file_switch(test) not in current.layers:
            states.append("off")
        elif outcomes[test] == "fail" and not stopped:
            states.append("refused")
            stopped = True
        else:
            states.append("unreached" if stopped else "passed")
    found = re.search(r"rung (\d)", current.caught_by)
    refused_at = int(found.group(1)) if found else (None if current.result.ok else 4)
    for _, _, rung in RUNGS[4:]:
        if stopped:
            states.append("unreached")
        elif refused_at == rung:
            states.append("refused")
            stopped = True
        else:
            states.append("passed")
    return states


def ladder_svg(current: Attempted) -> str:
    """The read_file ladder, bottom to top: each rung passed (green), switched off, refused (red) or never reached."""
    states = _rung_states(current)
    width, rung_h = 760, 30
    height = 52 + rung_h * len(RUNGS) + 16
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8),
             svg_text(16, 22, f"request: {current.request.label}", 13, INK, weight="bold")]
    shown, _ = svg_lines(16, 40, current.request.shown(), 60, 11, MUTED, most=1)
    parts.append(shown)
    parts += [svg_line(40, 48, 40, height - 12, MUTED, 3), svg_line(330, 48, 330, height - 12, MUTED, 3)]
    colours = {"passed": (LIGHT_GREEN, GREEN), "refused": (LIGHT_RED, RED), "off": ("white", GREY),
               "unreached": ("white", FAINT)}
    for i, ((name, question, _), state) in enumerate(zip(RUNGS, states)):
        y = height - 16 - (i + 1) * rung_h
        fill, edge = colours[state]
        parts.append(svg_rect(30, y + 3, 310, rung_h - 6, fill, edge, rx=4, dash="4 3" if state == "off" else None,
                              data_rung=name, data_state=state))
        parts.append(svg_text(46, y + 20, name, 12, INK if state != "unreached" else GREY,
                              weight="bold" if state == "refused" else "normal"))
        parts.append(svg_text(200, y + 20, {"passed": "passed", "refused": "REFUSED HERE", "off": "switched off",
                                            "unreached": "not reached"}[state], 11, edge, weight="bold"))
        parts.append(svg_text(356, y + 20, question, 11, MUTED))
    where = (f"stopped at: {RUNGS[states.index('refused')][0]}" if "refused" in states else "every rung passed")
    opened = f"opened {', '.join(current.opened)}" if current.opened else "no file opened"
    parts.append(svg_text(width - 16, 22, f"{where} · {opened}", 12, RED if "refused" in states else GREEN, "end",
                          "bold"))
    return svg_figure(width, height, parts, f"{current.request.label}: {where}; {opened}",
                      data_opened=len(current.opened))


class ReadFilePanel:
    """A request menu and three layer switches over a real ``read_file`` host."""

    def __init__(self, tree: DemoTree | None = None, request: str = "outside path"):
        import ipywidgets as w

        self._own = demo_workspace(prefix="read-file-panel-") if tree is None else None
        self.tree = tree if tree is not None else self._own
        self.menu = w.Dropdown(options=list(REQUESTS), value=request, description="request",
                               layout=w.Layout(width="340px"))
        self.boxes = {name: w.Checkbox(value=True, description=f"{name} layer", indent=False,
                                       layout=w.Layout(width="auto")) for name in READ_FILE_LAYERS}
        self.view = w.HTML()
        for control in (self.menu, *self.boxes.values()):
            control.observe(self._update, names="value")
        self.widget = w.VBox([self.menu, w.HBox(list(self.boxes.values())), self.view])
        self.current: Attempted | None = None
        self._update()

    def set(self, request: str | None = None, schema: bool | None = None, path: bool | None = None,
            business: bool | None = None) -> str:
        """Pick a request and flip layers, as a student would; returns what is shown."""
        if request is not None:
            if request not in REQUESTS:
                raise ValueError(f"unknown request {request!r}; choose one of {list(REQUESTS)}")
            self.menu.value = request
        for name, value in (("schema", schema), ("path", path), ("business", business)):
            if value is not None:
                self.boxes[name].value = value
        return self.text()

    @property
    def layers(self) -> frozenset[str]:
        return frozenset(name for name, box in self.boxes.items() if box.value)

    def text(self) -> str:
        return self._text

    def close(self) -> None:
        """Remove the panel's own temporary workspace, if it made one."""
        if self._own is not None:
            self._own.close()

    def __enter__(self) -> "ReadFilePanel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _update(self, _change: object = None) -> None:
        self.current = attempt(self.tree, self.menu.value, self.layers)
        self._text = self.current.text()
        self.view.value = drawn_html(ladder_svg(self.current), self._text, shown=True)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """Displayed itself, the panel is its widget, with its text form as the plain text."""
        return panel_bundle(self.widget, self.text(), **kwargs)


__all__ = ["RUNGS", "ReadFilePanel", "ladder_svg"]
