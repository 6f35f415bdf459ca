"""Chapter 01: read_file and its ladder: a path climbs three rungs before a byte is read.

    rung 1  check_lexical(root, p)   p as text stays inside root (components compared, ".." never above root)
    rung 2  check_realpath(root, p)  realpath(root / p) stays inside root (every link resolved, nothing opened)
    rung 3  open_confined(root, r)   open r component by component with O_NOFOLLOW; lstat before = fstat after;
                                     a regular file of at most the cap, and at most the cap read

    confine(root, p)           = rung 2 after rung 1          (the contract's path guard: opens nothing)
    read_confined(root, p)     = rung 3 on confine(root, p)   (what the executor runs, always)
    write_confined(root, r, b) = rung 3's walk, then b in a new file renamed over r   (edit_file's write)

Each rung catches what the one before it misses: rung 1 refuses ``../etc/passwd`` and ``/ws_evil``
(``PurePosixPath.is_relative_to``, never ``str.startswith``); rung 2 a link inside the workspace that points
out of it; rung 3 a link swapped in after rungs 1 and 2 looked (check, then use, is a race), and FIFOs,
devices and directories, unopened. Nothing is decoded or expanded (``%2e%2e``, ``~``, ``$HOME`` are text).
``make_read_file`` puts the ladder into a contract, one layer each (schema; path guard = rungs 1 and 2;
an existing small file as precondition), and its executor climbs all three rungs again, whatever the
layers. Every refusal is a ``toolkit._paths.PathRefused``; rung 3's system calls are ``toolkit._nofollow``.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from toolkit.kernel.legality import LAYER_OF, Layer
from toolkit.kernel.contract import Condition, Contract, Retry
from toolkit.kernel.call import ToolError
from toolkit.kernel.host import Tool
from toolkit._caps import MAX_FILE_BYTES
from toolkit._nofollow import FileRead, folder, plain_relative, read_nofollow, write_nofollow
from toolkit._paths import PathRefused
from toolkit._read_checks import file_conditions
from toolkit._workspace import Workspace

_INSIDE = "a relative path inside the workspace"


# ------------------------------------------------------------------ rung 1
def check_lexical(root: Path, path: object) -> PurePosixPath:
    """Rung 1: the path as text, relative to ``root`` (the workspace's real path) and tidied. Touches no file."""
    def refuse(kind: str, why: str) -> PathRefused:
        return PathRefused(1, kind, path, why, _INSIDE)

    problem = PathRefused.of_text(path, _INSIDE)   # not a string, empty, NUL, backslash, control...
    if problem:
        raise problem
    candidate = PurePosixPath(path)
    base = PurePosixPath(root)
    if candidate.is_absolute():
        if not candidate.is_relative_to(base):   # compares components: /ws_evil is not under /ws
            raise refuse("absolute", "it lies outside the workspace")
        candidate = candidate.relative_to(base)
    parts: list[str] = []
    for part in candidate.parts:
        if part == "..":
            if not parts:
                raise refuse("traversal", 'its ".." climbs above the workspace')
            parts.pop()
        elif part != ".":
            parts.append(part)
    return PurePosixPath(*parts)


# ------------------------------------------------------------------ rung 2
def check_realpath(root: Path, path: str) -> PurePosixPath:
    """Rung 2: every link resolved as the kernel would; the real path must lie inside ``root``. Opens nothing."""
    try:
        real = PurePosixPath(os.path.realpath(os.path.join(root, path)))
    except (OSError, ValueError, RuntimeError):
        raise PathRefused(2, "unresolvable", path, "it cannot be resolved", _INSIDE) from None
    base = PurePosixPath(root)
    if not real.is_relative_to(base):      # components again: a link to /ws_evil is outside /ws
        raise PathRefused(2, "outside", path, "it resolves to a place outside the workspace",
                          _INSIDE)
    return real.relative_to(base)


# ------------------------------------------------------------------ rung 3
def open_confined(root: Path, relative: PurePosixPath | str, max_bytes: int = MAX_FILE_BYTES) -> FileRead:
    """Rung 3: open ``relative`` under ``root`` without following any link, check it, read at most the cap."""
    rel, refuse = plain_relative(relative, f"a regular file of at most {max_bytes} bytes inside the workspace")
    with folder(root, rel.parts[:-1], refuse) as dir_fd:      # every folder O_DIRECTORY | O_NOFOLLOW
        data = read_nofollow(dir_fd, rel.name, max_bytes, refuse)
    return FileRead.of(str(rel), data)


def write_confined(root: Path, relative: PurePosixPath | str, data: bytes) -> None:
    """Rung 3 for a write: the same no-follow walk, then a new file beside the old one renamed over it."""
    rel, refuse = plain_relative(relative, "a regular file inside the workspace")
    with folder(root, rel.parts[:-1], refuse) as dir_fd:
        write_nofollow(dir_fd, rel.name, data, refuse)


# --------------------------------------------------------------- the ladder
def confine(root: Path, path: object) -> PurePosixPath:
    """Rungs 1 and 2: the real path relative to ``root`` (the workspace's real path), or ``PathRefused``."""
    check_lexical(root, path)
    return check_realpath(root, path)


def read_confined(root: Path, path: object, max_bytes: int = MAX_FILE_BYTES) -> FileRead:
    """All three rungs. Rung 3 always runs, on the real path rung 2 found."""
    return open_confined(root, confine(root, path), max_bytes)


# ------------------------------------------------------------- the contract
#: The layers a read_file contract can carry, by switch name, each the layer (and legality test) it stands for.
READ_FILE_LAYERS: dict[str, Layer] = {"schema": LAYER_OF["schema_ok"], "path": LAYER_OF["auth_ok"],
                                      "business": LAYER_OF["Pre"]}


READ_FILE_SCHEMA = {"type": "object", "properties": {
    "path": {"type": "string", "description": "A path relative to the workspace."},
    "mode": {"type": "string", "enum": ["text", "lines"],
             "description": "text (default): the content as one string; lines: also split into lines."}},
    "required": ["path"], "additionalProperties": False}

#: read_file as declared to a model; ``make_read_file`` binds it to a workspace.
READ_FILE = Contract(
    name="read_file",
    description=("Read one text file inside the workspace and return its content, size and sha256. "
                 'Read-only: repeating the call reads the same bytes. path is relative to the workspace, '
                 'e.g. "src/config.ts".'),
    schema=READ_FILE_SCHEMA, cost=0.1, risk=0.0, reversible=True, retry=Retry.SAFE,
    risk_category="read-only, inside the workspace", evidence=("size", "sha256"), reads=("file:{path}",),
)


def _path_of(arguments: Any) -> Any:
    return arguments.get("path") if isinstance(arguments, dict) else None


def path_guard(workspace: Workspace) -> Condition:
    """The path layer: rungs 1 and 2 (``workspace.check``). Opens nothing."""
    def inside(arguments: dict, world: Any) -> bool | ToolError:
        try:
            workspace.check(_path_of(arguments))
        except PathRefused as refusal:
            return refusal.error
        return True
    return Condition("path_inside_workspace", "path stays inside the workspace, as text and after resolving links",
                     inside)


def make_read_file(workspace: Path | str | Workspace, *, max_bytes: int = MAX_FILE_BYTES, must_exist: bool = True,
                   preconditions: Iterable[Condition] = (),
                   layers: Iterable[str] = tuple(READ_FILE_LAYERS)) -> Tool:
    """The read_file tool for one workspace: ``{"path", "resolved", "content", "lossless", "evidence"}``.

    ``layers`` (switch names of ``READ_FILE_LAYERS``) are the layers the contract carries; cut
    them all and a hostile path is still refused, by rung 3, as a ``toolkit._paths.ReadRefused``.
    A ``Workspace`` brings its ``max_bytes``.
    """
    layers = frozenset(layers)
    unknown = layers.difference(READ_FILE_LAYERS)
    if unknown:
        raise ValueError(f"unknown layers {sorted(unknown)}; choose from {sorted(READ_FILE_LAYERS)}")
    ws = workspace if isinstance(workspace, Workspace) else Workspace(Path(workspace), max_bytes)
    exists, evidence_matches = file_conditions(ws)
    business = ((exists,) if must_exist else ()) + tuple(preconditions)
    contract = replace(READ_FILE, schema=READ_FILE_SCHEMA if "schema" in layers else {"type": "object"},
                       guards=(path_guard(ws),) if "path" in layers else (),
                       preconditions=business if "business" in layers else (),
                       postconditions=(evidence_matches,))

    def run(arguments: dict, world: Any) -> dict[str, Any]:
        path = _path_of(arguments)
        try:
            got = read_confined(ws.root, path, ws.max_bytes)          # all three rungs, every time
        except PathRefused as refusal:
            raise refusal.failure() from None
        output = {"path": path, "resolved": got.path, "content": got.text, "lossless": got.lossless,
                  "evidence": got.evidence()}
        if arguments.get("mode") == "lines":
            output["lines"] = got.text.splitlines()
        return output

    return Tool(contract, run)
