"""Chapter 01: the read_file panel: pick a request, cut validation layers, watch what stops it.

``ReadFilePanel`` puts a dropdown of the chapter's ``REQUESTS`` and one
checkbox per ``READ_FILE_LAYERS`` switch in front of
``toolkit.worlds.attempt``, and draws what the attempt reports. Drive it from
Python with ``.set(request=..., schema=False)`` and read ``.text()``. The
world it acts on is a ``toolkit.worlds.DemoTree``; without one the panel makes
its own in a temporary folder, removed by ``close()`` (or a ``with`` block).
"""
from __future__ import annotations

from toolkit.files import READ_FILE_LAYERS
from toolkit.present.text_view import pre_html
from toolkit.worlds import REQUESTS, Attempted, DemoTree, attempt, demo_workspace


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
        colour = "#1a7f37" if self.current.result.ok else "#cf222e"
        touched = "<b>a file was opened</b>" if self.current.touched else "nothing was opened"
        self.view.value = pre_html(self._text, colour) + f"<div>{touched}</div>"

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)


__all__ = ["ReadFilePanel"]
