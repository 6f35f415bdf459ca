"""Chapter 08: the scenery of a round: a small workspace served by read_file and write_file, and a slow disk.

``FileRound`` makes a temporary workspace with two source files
(``src/config.ts``, ``src/routes.ts``), two notes to read (``A.md``, ``B.md``)
and an empty ``notes/`` folder, and a host with two tools: the ``read_file`` of
chapter 01 and ``write_file``, which replaces one file inside the workspace.
Each contract declares what it touches, ``reads=("file:{path}",)`` and
``writes=("file:{path}",)``: that is all the scheduler reads. ``read`` and
``write`` build the requests. ``close()`` (or leaving a ``with`` block) removes
the folder.

``SlowDisk`` wraps an executor so that calls *finish* in a chosen order,
whatever order they start in: each call waits until the one before it in
``finish_order`` has finished, then runs. It records the order results arrive
in (``arrived``), which is what a reconciler that pairs by position would see:
``naive_pairing``, the broken reconciler the chapter warns about.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from toolkit.kernel import Contract, Host, Tool, ToolCall, ToolResult, request
from toolkit._workspace import Workspace
from toolkit.kernel import make_read_file, path_guard
from course.worlds import ScratchFolder

#: The files the workspace starts with.
ROUND_FILES: dict[str, str] = {
    "src/config.ts": "export const port = 8080;\n",
    "src/routes.ts": 'export const routes = ["/", "/health"];\n',
    "A.md": "contents of A\n",
    "B.md": "contents of B\n",
}


def write_file_contract(workspace: Workspace) -> Contract:
    """``write_file(path, content)``: replace one text file inside ``workspace``; it writes ``file:{path}``."""
    return Contract(
        "write_file", "Replace one text file inside the workspace with the given content.",
        {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
         "required": ["path", "content"], "additionalProperties": False},
        guards=(path_guard(workspace),), writes=("file:{path}",))


class FileRound(ScratchFolder):
    """A temporary workspace and its host (read_file, write_file); see the module docstring."""

    def __init__(self) -> None:
        super().__init__("chapter08-")
        self.root = self.base
        (self.root / "notes").mkdir()
        for path, text in ROUND_FILES.items():
            (self.root / path).parent.mkdir(exist_ok=True)
            (self.root / path).write_text(text, encoding="utf-8")
        self.workspace = Workspace(self.root)
        self.host = Host.of([make_read_file(self.workspace), Tool(write_file_contract(self.workspace), self._write)])

    def _write(self, arguments: dict, world: Any) -> dict[str, Any]:
        target = self.workspace.root / self.workspace.check(arguments["path"])
        target.write_text(arguments["content"], encoding="utf-8")
        return {"path": arguments["path"], "bytes": len(arguments["content"].encode("utf-8"))}

    @staticmethod
    def read(path: str, call_id: str) -> ToolCall:
        return request("read_file", {"path": path}, call_id)

    @staticmethod
    def write(path: str, content: str, call_id: str) -> ToolCall:
        return request("write_file", {"path": path, "content": content}, call_id)

    def text(self, path: str) -> str:
        """What the file at ``path`` (inside the workspace) holds now."""
        return (self.root / path).read_text(encoding="utf-8")


class SlowDisk:
    """An executor whose calls finish in ``finish_order``; ``arrived`` lists the results as they came back."""

    def __init__(self, execute: Callable[[ToolCall], ToolResult], finish_order: Sequence[str],
                 patience: float = 10.0):
        self.execute, self.patience = execute, patience
        self.after = dict(zip(finish_order[1:], finish_order))     # call id -> the call that must finish first
        self.finished = {call_id: threading.Event() for call_id in finish_order}
        self.arrived: list[ToolResult] = []
        self._lock = threading.Lock()

    def __call__(self, call: ToolCall) -> ToolResult:
        before = self.after.get(call.call_id)
        if before is not None and not self.finished[before].wait(self.patience):
            raise RuntimeError(f"{call.call_id} waited {self.patience:g} s for {before}, which never finished")
        try:
            result = self.execute(call)
            with self._lock:
                self.arrived.append(result)
            return result
        finally:
            if call.call_id in self.finished:
                self.finished[call.call_id].set()


__all__ = ["ROUND_FILES", "FileRound", "SlowDisk", "write_file_contract"]


def naive_pairing(calls: Sequence[ToolCall], arrived: Sequence[ToolResult]
                  ) -> dict[str, ToolResult]:
    """The broken reconciler: the i-th call with the i-th result to arrive. Never use it
    (``toolkit.wire.pair_results`` pairs by id)."""
    return {call.call_id: result for call, result in zip(calls, arrived)}
