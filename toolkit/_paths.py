"""Chapter 01: how the path ladder says no: ``PathRefused``, its kinds, their hints and failure classes.

Every rung of ``toolkit.kernel.confinement`` refuses the same way: it raises
``PathRefused(rung, kind, shown, why, expected)``. The refusal carries, as
fields a program can read, the rung that refused (``rung``, 1-3) and the kind
of refusal (``kind``, a key of ``HINTS``); and, as the structured form a model
is shown, a ``toolkit.kernel.ToolError`` with code ``path_refused``, pointer
``$.path``, the message ``rung N (name) refused <path>: <why>`` and the hint
that goes with the kind. Messages name paths only relative to the workspace:
``shown`` never echoes an absolute path.
"""
from __future__ import annotations

from toolkit.kernel.call import FailureClass, ToolError
from toolkit._schema import json_type

#: Largest file rung 3 will read, in bytes.
MAX_BYTES = 1_000_000
#: Longest path rung 1 accepts (UTF-8 bytes), and longest single component.
MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255

RUNG_NAMES = {1: "lexical", 2: "realpath", 3: "open"}

#: Every kind of refusal: the rung that raises it, and what the caller can do instead.
HINTS: dict[str, tuple[int, str]] = {
    "not_text": (1, 'send the path as a JSON string, e.g. "src/config.ts"'),
    "empty": (1, 'name a file, e.g. "README.md"'),
    "nul": (1, "remove the NUL byte; no file name contains one"),
    "control": (1, "remove control and invisible characters; type the name as a directory listing shows it"),
    "backslash": (1, 'separate folders with "/", e.g. "src/config.ts"'),
    "too_long": (1, f"use a shorter path (at most {MAX_PATH_BYTES} bytes, {MAX_NAME_BYTES} per name)"),
    "absolute": (1, 'use a path relative to the workspace, e.g. "src/config.ts"'),
    "traversal": (1, 'stay inside the workspace: drop the ".." that climbs out of it'),
    "unresolvable": (2, "use a plain path to an existing file"),
    "outside": (2, "read a file inside the workspace; links that lead out of it are not followed"),
    "symlink": (3, "name the file itself, not a link; the link changed or loops"),
    "changed": (3, "the file changed while it was being opened; try once more"),
    "not_found": (3, "check the name against a directory listing, or switch tools"),
    "not_regular": (3, "read_file reads regular files only; use a listing tool for a directory"),
    "too_large": (3, "ask for a smaller file; this one is over the read cap"),
    "unreadable": (3, "the host cannot open this file; ask the user or choose another file"),
    "unsupported": (3, "this platform cannot open files safely (no dir_fd support)"),
}

#: Kinds filed under *authorization*: the path itself is not acceptable. The other kinds mean
#: "the path is acceptable, but there is no readable file there" (a precondition).
AUTHORIZATION_KINDS = frozenset({"not_text", "empty", "nul", "control", "backslash", "too_long", "absolute",
                                 "traversal", "unresolvable", "outside", "symlink", "changed", "unreadable"})


class PathRefused(Exception):
    """A rung refused a path. ``rung`` and ``kind`` say where and why; ``error`` is what a model is shown."""

    def __init__(self, rung: int, kind: str, shown: str, why: str, expected: str):
        self.rung, self.kind, self.why = rung, kind, why
        message = f"rung {rung} ({RUNG_NAMES[rung]}) refused {shown}: {why}"
        self.error = ToolError("path_refused", "$.path", message, expected=expected, received=shown,
                               hint=HINTS[kind][1], retryable=kind == "changed")
        super().__init__(message)

    @property
    def rung_name(self) -> str:
        """``lexical``, ``realpath`` or ``open``."""
        return RUNG_NAMES[self.rung]

    @property
    def failure_class(self) -> FailureClass:
        """Authorization for paths that reach outside; precondition for 'no readable file here'."""
        if self.kind == "unsupported":
            return FailureClass.EXECUTION
        return FailureClass.AUTHORIZATION if self.kind in AUTHORIZATION_KINDS else FailureClass.PRECONDITION


def shown(path: object, limit: int = 60) -> str:
    """How a requested path appears in messages: quoted, escaped, shortened; absolute paths not echoed."""
    if not isinstance(path, str):
        return f"a non-string ({json_type(path)})"
    if path.startswith("/"):
        return "an absolute path"
    text = repr(path)
    return text if len(text) <= limit else repr(path[: limit - 8]) + "..."
