"""Chapter 01: the read_file panel: pick a request, cut validation layers, watch what stops it.

Two pieces, usable without any widget (the witness that records every file
opened is ``toolkit.files.witness.recording_opens``):

* ``demo_workspace(base)`` builds the chapter's small world under ``base``: a
  workspace ``ws`` with ``src/config.ts`` and ``src/routes.ts``, a link
  ``src/settings.ts`` that leads out of it, and two folders beside it that
  hold secrets (``outside`` and ``ws_evil``, whose name starts with ``ws``).
* ``attempt(tree, label, layers)`` sends one of the ``REQUESTS`` through a
  real host around ``make_read_file(..., layers=...)`` and reports the
  verdict, the layer that caught the call, the result, and the files opened.

``ReadFilePanel`` puts a dropdown and three checkboxes in front of
``attempt``; drive it from Python with ``.set(request=..., schema=False)`` and
read ``.text()``. Nothing is printed with an absolute path: the workspace is
shown as ``<workspace>``.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.core import ToolCall, request
from toolkit.core import Host, not_a_call
from toolkit.core import Verdict
from toolkit.core import ToolResult
from toolkit.files import LAYERS, make_read_file
from toolkit.wire import Assembler
from toolkit.wire import Refusal
from toolkit.files import Open, files_opened, recording_opens
from toolkit.present.text_view import pre_html

# ------------------------------------------------------------------ the chapter's world
#: The workspace's files; the same text as the recorded vendor examples.
FILES = {
    "src/config.ts": "export const port = 8080;\n",
    "src/routes.ts": 'export const routes = ["/", "/health"];\n',
}
#: Files that must never be read, beside the workspace.
SECRETS = {
    "outside/secret.txt": "SECRET-OUTSIDE: a file no read_file call may return\n",
    "ws_evil/secret.txt": "SECRET-SIBLING: its folder's name merely starts with 'ws'\n",
}
#: A link inside the workspace whose target lies outside it.
LINK_OUT = ("src/settings.ts", "../../outside/secret.txt")


@dataclass(frozen=True)
class DemoTree:
    """The folders ``demo_workspace`` made: the base, the workspace, and the outside folder."""

    base: Path
    ws: Path
    outside: Path

    def __repr__(self) -> str:   # no machine paths in a notebook
        return "DemoTree(<base>: ws/, outside/, ws_evil/)"

    def listing(self) -> list[str]:
        """Every file and link under the base, relative to it, links shown with their target."""
        rows = []
        for path in sorted(self.base.rglob("*")):
            rel = path.relative_to(self.base).as_posix()
            if path.is_symlink():
                rows.append(f"{rel} -> {os.readlink(path)}")
            elif path.is_file():
                rows.append(rel)
        return rows


def demo_workspace(base: Path | str) -> DemoTree:
    """Create the chapter's world under ``base`` (an empty folder) and return its paths."""
    base = Path(base)
    for rel, text in {**{f"ws/{k}": v for k, v in FILES.items()}, **SECRETS}.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text, encoding="utf-8")
    link, target = LINK_OUT
    os.symlink(target, base / "ws" / link)
    return DemoTree(base, base / "ws", base / "outside")


# ------------------------------------------------------------------ requests
WORKSPACE = "<workspace>"


@dataclass(frozen=True)
class PanelRequest:
    """One request the panel can send: arguments (``{ws}`` stands for the workspace), or a cut stream."""

    label: str
    arguments: Any = None
    fragments: tuple[str, ...] = ()
    note: str = ""

    @property
    def streamed(self) -> bool:
        return bool(self.fragments)

    def filled(self, ws: Path) -> Any:
        """The arguments with ``{ws}`` replaced by the real workspace path."""
        return _replace(self.arguments, "{ws}", str(ws))

    def shown(self) -> str:
        """The request as a student sees it (the workspace written as ``<workspace>``)."""
        if self.streamed:
            return "".join(self.fragments) + "   (the stream stops here)"
        return json.dumps(_replace(self.arguments, "{ws}", WORKSPACE), ensure_ascii=False)


def _replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return value


_REQUESTS = (
    PanelRequest("missing path", {}, note="the required field is absent"),
    PanelRequest("outside path", {"path": "/etc/passwd"}, note="schema-valid, outside the workspace"),
    PanelRequest("valid path", {"path": "src/config.ts"}, note="a file inside the workspace"),
    PanelRequest("sibling-prefix path", {"path": "{ws}_evil/secret.txt"},
                 note="its text starts with the workspace's path, but it is a different folder"),
    PanelRequest("symlink out", {"path": LINK_OUT[0]}, note="a link inside the workspace that leads out"),
    PanelRequest("dot-dot climb", {"path": "../outside/secret.txt"}, note='".." climbs above the workspace'),
    PanelRequest("wrong type", {"path": ["src/config.ts"]}, note="path given as an array"),
    PanelRequest("no such file", {"path": "src/config.json"}, note="inside, well-formed, but not there"),
    PanelRequest("cut JSON chunk", fragments=('{"path": "src/co',),
                 note="a streamed call that never received its completion signal"),
)
#: Every request the panel offers, by label, in menu order.
REQUESTS: dict[str, PanelRequest] = {r.label: r for r in _REQUESTS}
#: The requests that must never read anything.
HOSTILE = ("outside path", "sibling-prefix path", "symlink out", "dot-dot climb")

_LAYER_NAME = {"schema_ok": "schema", "auth_ok": "path", "Pre": "business"}
_LAYER_OF_TEST = {"schema_ok": "the schema layer", "auth_ok": "the path layer", "Pre": "the business layer"}


# ------------------------------------------------------------------ one attempt
@dataclass(frozen=True)
class Attempted:
    """What happened to one request under one choice of layers."""

    request: PanelRequest
    layers: frozenset[str]
    result: ToolResult
    verdict: Verdict | None          # None when nothing reached the host
    opened: tuple[str, ...]          # names of the files opened while handling the request
    caught_by: str

    @property
    def touched(self) -> bool:
        return bool(self.opened)

    @property
    def status_line(self) -> str:
        """``succeeded``, or ``rejected / authorization``: the status and, on failure, its class."""
        r = self.result
        return r.status.value if r.failure_class is None else f"{r.status.value} / {r.failure_class.value}"

    def lines(self) -> list[str]:
        r = self.result
        layer_word = " | ".join(f"{name} {'on' if name in self.layers else 'OFF'}"
                                for name in ("schema", "path", "business"))
        rows = [f"request    {self.request.label}: {self.request.shown()}",
                f"layers     {layer_word}"]
        if self.verdict is None:
            rows.append("checks     not run: nothing reached the host")
        else:
            tests = ", ".join(f"{t.name} {t.outcome.value}" + ("" if _LAYER_NAME[t.name] in self.layers else " (off)")
                              for t in self.verdict.tests)
            rows.append(f"checks     {tests} -> legal = {self.verdict.legal}")
        rows += [f"caught by  {self.caught_by}", f"result     {r.call_id}: {self.status_line}"]
        if r.errors:
            rows.append(f"error      {r.errors[0].line()}")
        if r.ok:
            rows.append(f"evidence   {r.evidence['size']} bytes, sha256 {r.evidence['sha256'][:16]}...")
        files = ", ".join(self.opened)
        rows.append(f"touched    {'yes: opened ' + files if self.opened else 'no: no file was opened'}")
        return rows

    def text(self) -> str:
        return "\n".join(self.lines())


def _caught_by(verdict: Verdict | None, result: ToolResult) -> str:
    if verdict is None:
        return "the stream assembler: no completion signal, so no call exists to run"
    if not verdict.legal:
        first = next(t for t in verdict.tests if t.outcome.value == "fail")
        return f"{_LAYER_OF_TEST[first.name]}: the host refused before running anything"
    if result.ok:
        return "nothing: the call was legal and ran"
    rung = re.search(r"rung (\d)", result.errors[0].message) if result.errors else None
    where = f"rung {rung.group(1)} of the path ladder" if rung else "the tool itself"
    return f"the executor ({where}), after the host had called the call legal"


def attempt(tree: DemoTree, label: str, layers: frozenset[str] | set[str] = LAYERS,
            call_id: str = "call_1") -> Attempted:
    """Send the request ``label`` through a host whose read_file contract keeps only ``layers``."""
    if label not in REQUESTS:
        raise ValueError(f"unknown request {label!r}; choose one of {list(REQUESTS)}")
    wanted = REQUESTS[label]
    layers = frozenset(layers)
    host = Host.of([make_read_file(tree.ws, layers=layers)])
    with recording_opens() as events:
        if wanted.streamed:
            assembler = Assembler()
            assembler.add(0, call_id=call_id, name="read_file")
            for fragment in wanted.fragments:
                assembler.add(0, arguments=fragment)
            outcome = assembler.finish(None)                    # the stream ended: no completion signal
            result = _answer(host, outcome[0])
        else:
            result = host.execute(request("read_file", wanted.filled(tree.ws), call_id=call_id))
    verdict = host.log[-1].verdict if host.log else None
    return Attempted(wanted, layers, result, verdict, tuple(files_opened(events)), _caught_by(verdict, result))


def _answer(host: Host, item: ToolCall | Refusal) -> ToolResult:
    """Run a complete call; answer a refusal with its own result (it never reaches the executor)."""
    if isinstance(item, ToolCall):
        return host.execute(item)
    return item.result or not_a_call(item)


# ------------------------------------------------------------------ the widget
class ReadFilePanel:
    """A request menu and three layer switches over a real ``read_file`` host.

    ``tree`` is a ``DemoTree``; without one the panel builds its own in a
    temporary folder, removed by ``close()``.
    """

    def __init__(self, tree: DemoTree | None = None, request: str = "outside path"):
        import ipywidgets as w

        self._tmp = None
        if tree is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="read-file-panel-")
            tree = demo_workspace(self._tmp.name)
        self.tree = tree
        self.menu = w.Dropdown(options=list(REQUESTS), value=request, description="request",
                               layout=w.Layout(width="340px"))
        self.boxes = {name: w.Checkbox(value=True, description=f"{name} layer", indent=False,
                                       layout=w.Layout(width="auto")) for name in ("schema", "path", "business")}
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
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _update(self, _change: object = None) -> None:
        self.current = attempt(self.tree, self.menu.value, self.layers)
        self._text = self.current.text()
        colour = "#1a7f37" if self.current.result.ok else "#cf222e"
        touched = "<b>a file was opened</b>" if self.current.touched else "nothing was opened"
        self.view.value = pre_html(self._text, colour) + f"<div>{touched}</div>"

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)


__all__ = ["Attempted", "DemoTree", "FILES", "HOSTILE", "LINK_OUT", "Open", "PanelRequest", "REQUESTS",
           "ReadFilePanel", "SECRETS", "attempt", "demo_workspace", "files_opened", "recording_opens"]
