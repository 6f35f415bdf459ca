"""Chapter 01: the chapter's small world: a workspace beside two folders of secrets, and requests sent into it.

* ``demo_workspace(base)`` builds the world under ``base``: a workspace ``ws``
  with ``src/config.ts`` and ``src/routes.ts``, a link ``src/settings.ts``
  that leads out of it, and two folders beside it that hold secrets
  (``outside`` and ``ws_evil``, whose name starts with ``ws``). Without a
  ``base`` it makes a temporary folder of its own; the ``DemoTree`` it returns
  then owns that folder and removes it on ``close()``, at the end of a ``with``
  block, or when the interpreter exits (a notebook may keep it for the kernel's life).
* ``attempt(tree, label, layers)`` sends one of the ``REQUESTS`` through a
  real host around ``make_read_file(..., layers=...)`` and reports the
  verdict, the layer that caught the call, the result, and the files opened
  (``course.worlds.recording_opens`` is the witness).
* ``allowed_extensions(".ts", ".md")`` is an example business rule for read_file, a
  precondition that refuses any other kind of file.

Nothing is reported with an absolute path: the workspace is shown as ``<workspace>``.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from toolkit.kernel import Condition, Host, Tool, ToolCall, ToolError, ToolResult, Verdict, request
from toolkit._ids import not_a_call
from toolkit.kernel import READ_FILE_LAYERS, make_read_file
from toolkit._paths import ReadRefused, shown
from course.worlds.witness import files_opened, recording_opens
from toolkit.kernel import Assembler
from toolkit.kernel import Refusal

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


class DemoTree:
    """The folders ``demo_workspace`` made: ``base``, the workspace ``ws``, and ``outside``.

    A tree made in a temporary folder of its own removes it on ``close()`` (also
    at the end of a ``with`` block, or at interpreter exit); one built under a
    folder the caller gave leaves that folder alone.
    """

    def __init__(self, base: Path | str, owned: bool = False):
        self.base = Path(base)
        self.ws, self.outside = self.base / "ws", self.base / "outside"
        self._remove = weakref.finalize(self, shutil.rmtree, str(self.base), ignore_errors=True) if owned else None

    def __repr__(self) -> str:   # no machine paths in a notebook
        return "DemoTree(<base>: ws/, outside/, ws_evil/)"

    def __enter__(self) -> "DemoTree":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the temporary folder, if this tree made it (once; later calls do nothing)."""
        if self._remove is not None:
            self._remove()

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


def demo_workspace(base: Path | str | None = None, prefix: str = "chapter01-") -> DemoTree:
    """Create the chapter's world under ``base`` (an empty folder), or in a temporary folder the tree owns."""
    tree = DemoTree(tempfile.mkdtemp(prefix=prefix), owned=True) if base is None else DemoTree(base)
    try:
        for rel, text in {**{f"ws/{k}": v for k, v in FILES.items()}, **SECRETS}.items():
            (tree.base / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree.base / rel).write_text(text, encoding="utf-8")
        link, target = LINK_OUT
        os.symlink(target, tree.ws / link)
    except BaseException:
        tree.close()
        raise
    return tree


# ------------------------------------------------------------------ requests
_SHOWN_WORKSPACE = "<workspace>"


@dataclass(frozen=True)
class DemoRequest:
    """One request the chapter sends: arguments (``{ws}`` stands for the workspace), or a cut stream."""

    label: str
    arguments: Any = None
    fragments: tuple[str, ...] = ()
    note: str = ""

    @property
    def streamed(self) -> bool:
        return bool(self.fragments)

    def filled(self, ws: Path) -> Any:
        """The arguments with ``{ws}`` replaced by the real workspace path."""
        return _replace_text(self.arguments, "{ws}", str(ws))

    def shown(self) -> str:
        """The request as a student sees it (the workspace written as ``<workspace>``)."""
        if self.streamed:
            return "".join(self.fragments) + "   (the stream stops here)"
        return json.dumps(_replace_text(self.arguments, "{ws}", _SHOWN_WORKSPACE), ensure_ascii=False)


def _replace_text(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replace_text(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_text(v, old, new) for v in value]
    return value


_REQUESTS = (
    DemoRequest("missing path", {}, note="the required field is absent"),
    DemoRequest("outside path", {"path": "/etc/passwd"}, note="schema-valid, outside the workspace"),
    DemoRequest("valid path", {"path": "src/config.ts"}, note="a file inside the workspace"),
    DemoRequest("sibling-prefix path", {"path": "{ws}_evil/secret.txt"},
                note="its text starts with the workspace's path, but it is a different folder"),
    DemoRequest("symlink out", {"path": LINK_OUT[0]}, note="a link inside the workspace that leads out"),
    DemoRequest("dot-dot climb", {"path": "../outside/secret.txt"}, note='".." climbs above the workspace'),
    DemoRequest("wrong type", {"path": ["src/config.ts"]}, note="path given as an array"),
    DemoRequest("no such file", {"path": "src/config.json"}, note="inside, well-formed, but not there"),
    DemoRequest("cut JSON chunk", fragments=('{"path": "src/co',),
                note="a streamed call that never received its completion signal"),
)
#: Every request the chapter sends, by label, in menu order.
REQUESTS: dict[str, DemoRequest] = {r.label: r for r in _REQUESTS}
#: The requests that must never read anything.
HOSTILE = ("outside path", "sibling-prefix path", "symlink out", "dot-dot climb")


# ------------------------------------------------------------------ one attempt
@dataclass(frozen=True)
class Attempted:
    """What happened to one request under one choice of layers."""

    request: DemoRequest
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
        layer_word = " | ".join(f"{name} {'on' if name in self.layers else 'OFF'}" for name in READ_FILE_LAYERS)
        rows = [f"request    {self.request.label}: {self.request.shown()}",
                f"layers     {layer_word}"]
        if self.verdict is None:
            rows.append("checks     not run: nothing reached the host")
        else:
            tests = ", ".join(f"{t.name} {t.outcome.value}" + ("" if read_file_switch(t.name) in self.layers
                                                                 else " (off)") for t in self.verdict.tests)
            rows.append(f"checks     {tests} -> legal = {self.verdict.legal}")
        rows += [f"caught by  {self.caught_by}", f"result     {r.call_id}: {self.status_line}"]
        if r.errors:
            rows.append(f"error      {r.errors[0].line()}")
        if r.ok:
            rows.append(f"evidence   {r.evidence['size']} bytes, sha256 {r.evidence['sha256'][:16]}")
        files = ", ".join(self.opened)
        rows.append(f"touched    {'yes: opened ' + files if self.opened else 'no: no file was opened'}")
        return rows

    def text(self) -> str:
        return "\n".join(self.lines())


def read_file_switch(test: str) -> str:
    """The switch (a key of ``READ_FILE_LAYERS``) cutting the layer behind legality test ``test``: auth_ok -> path."""
    return next(name for name, layer in READ_FILE_LAYERS.items() if layer.test == test)


def _caught_by(verdict: Verdict | None, result: ToolResult, rung: int | None) -> str:
    """Who stopped the call: the assembler, a layer of the host (by its switch name), or the executor's rung."""
    if verdict is None:
        return "the stream assembler: no completion signal, so no call exists to run"
    if not verdict.legal:
        first = next(t for t in verdict.tests if t.outcome.value == "fail")
        return f"the {read_file_switch(first.name)} layer: the host refused before running anything"
    if result.ok:
        return "nothing: the call was legal and ran"
    where = f"rung {rung} of the path ladder" if rung is not None else "the tool itself"
    return f"the executor ({where}), after the host had called the call legal"


def attempt(tree: DemoTree, label: str, layers: Iterable[str] = tuple(READ_FILE_LAYERS),
            call_id: str = "call_1") -> Attempted:
    """Send the request ``label`` through a host whose read_file contract keeps only ``layers``."""
    if label not in REQUESTS:
        raise ValueError(f"unknown request {label!r}; choose one of {list(REQUESTS)}")
    wanted = REQUESTS[label]
    layers = frozenset(layers)
    read_file = make_read_file(tree.ws, layers=layers)
    rungs: list[int] = []            # the rung that refused, when the executor's own open refuses

    def run(arguments: dict, world: Any) -> Any:
        try:
            return read_file.run(arguments, world)
        except ReadRefused as refusal:
            rungs.append(refusal.rung)
            raise

    host = Host.of([Tool(read_file.contract, run)])
    with recording_opens() as events:
        if wanted.streamed:
            assembler = Assembler()
            assembler.add(0, call_id=call_id, name="read_file")
            for fragment in wanted.fragments:
                assembler.add(0, arguments=fragment)
            outcome = assembler.finish(None)                    # the stream ended: no completion signal
            result = _answer_streamed(host, outcome[0])
        else:
            result = host.execute(request("read_file", wanted.filled(tree.ws), call_id=call_id))
    verdict = host.log[-1].verdict if host.log else None
    caught_by = _caught_by(verdict, result, rungs[-1] if rungs else None)
    return Attempted(wanted, layers, result, verdict, tuple(files_opened(events)), caught_by)


def _answer_streamed(host: Host, item: ToolCall | Refusal) -> ToolResult:
    """Run a complete call; answer a refusal with its own result (it never reaches the executor)."""
    if isinstance(item, ToolCall):
        return host.execute(item)
    return item.result or not_a_call(item)


def common_errors(workspace: Path | str) -> list[dict[str, Any]]:
    """The chapter's four common errors, each produced by a real call to ``read_file``.

    The workspace should hold ``src/config.ts`` and no ``config/settings.yaml``.
    Each row: the error, the example call, the error code, the pointer, and
    what goes back to the model (the structured error's message and hint).
    """
    host = Host.of([make_read_file(workspace)])
    cases = [
        ("missing required field", "path absent", {}),
        ("wrong type", "path given as an array", {"path": ["src/config.ts"]}),
        ("out-of-range enum", "mode outside the list", {"path": "src/config.ts", "mode": "binary"}),
        ("wrong tool chosen", "read_file on a config that doesn't exist", {"path": "config/settings.yaml"}),
    ]
    rows = []
    for label, example, arguments in cases:
        result = host.execute(request("read_file", arguments, call_id=f"call_{len(rows) + 1}"))
        error = result.errors[0]
        rows.append({"error": label, "example": example, "arguments": arguments, "status": result.status.value,
                     "failure_class": result.failure_class.value if result.failure_class else "",
                     "code": error.code, "pointer": error.pointer,
                     "feedback": f"{error.message} — hint: {error.hint}" if error.hint else error.message})
    return rows


def allowed_extensions(*suffixes: str) -> Condition:
    """A business rule for read_file: only files ending in one of ``suffixes`` (``".ts"``)."""
    allowed = tuple(sorted(suffixes))
    either = " or ".join(allowed)

    def has_suffix(arguments: dict, world: Any) -> bool | ToolError:
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if isinstance(path, str) and path.endswith(allowed):
            return True
        return ToolError("precondition_failed", "$.path",
                         f"{shown(path)}: this tool reads only {', '.join(allowed)}",
                         expected=list(allowed), received=shown(path),
                         hint=f"ask for a file ending in {either}, or switch tools",
                         retryable=False)
    return Condition("allowed_extension", f"path ends in {either}", has_suffix)


__all__ = ["Attempted", "DemoRequest", "DemoTree", "FILES", "HOSTILE", "LINK_OUT", "REQUESTS",
           "SECRETS", "allowed_extensions", "attempt", "common_errors", "demo_workspace"]
