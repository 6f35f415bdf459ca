"""Chapter 01: how the path ladder says no: ``PathRefused``, its kinds, their hints and failure classes.

Every rung raises ``PathRefused(rung, kind, path, why, expected)``: ``rung`` and ``kind`` for a
program, ``error`` for a model (never an absolute path). The kernel reaches this module through
``PathRefused`` alone (``of_text``: rung 1's first question; ``failure``: the executor's
``ReadRefused``). The business layer's refusals live here too."""
from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import PurePosixPath

from toolkit.kernel.call import FailureClass, Status, ToolError, ToolFailure
from toolkit._caps import MAX_NAME_BYTES, MAX_PATH_BYTES
from toolkit._schema import json_type
from toolkit._show import shorten

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

    def __init__(self, rung: int, kind: str, path: object, why: str, expected: str):
        self.rung, self.kind, self.why = rung, kind, why
        message = f"rung {rung} ({RUNG_NAMES[rung]}) refused {shown(path)}: {why}"
        self.error = ToolError("path_refused", "$.path", message, expected=expected,
                               received=shown(path), hint=HINTS[kind][1],
                               retryable=kind == "changed")
        super().__init__(message)

    @classmethod
    def of_text(cls, path: object, expected: str) -> "PathRefused | None":
        """Rung 1's first question: the refusal when ``path`` is not plain path text, or None."""
        problem = text_problem(path)
        return cls(1, problem[0], path, problem[1], expected) if problem else None

    def failure(self) -> "ReadRefused":
        """This refusal as the executor raises it: a ``ToolFailure`` (``ReadRefused``)."""
        return ReadRefused(self)

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


class ReadRefused(ToolFailure):
    """The executor's refusal (nothing read, so *rejected*), still knowing its rung (``refusal``, ``rung``)."""

    def __init__(self, refusal: PathRefused):
        super().__init__(Status.REJECTED, "path_refused", refusal.error.message, refusal.failure_class,
                         error=refusal.error)
        self.refusal, self.rung = refusal, refusal.rung


def shown(path: object) -> str:
    """A requested path as messages show it: shortened, quoted, escaped; never an absolute path."""
    if not isinstance(path, str):
        return f"a non-string ({json_type(path)})"
    if path.startswith("/"):
        return "an absolute path"
    return repr(shorten(path))


def text_problem(path: object) -> tuple[str, str] | None:
    """Why ``path`` is not plain path text, as ``(kind, why)`` for rung 1, or None when it is."""
    if not isinstance(path, str):
        return "not_text", f"the path must be a string, got {json_type(path)}"
    if path == "":
        return "empty", "the path is empty"
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        return "not_text", "the path is not valid Unicode text"
    if "\x00" in path:
        return "nul", "it contains a NUL byte"
    if "\\" in path:
        return "backslash", "it contains a backslash, which is not a folder separator here"
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in path):
        return "control", "it contains a control or invisible formatting character"
    if len(encoded) > MAX_PATH_BYTES or any(len(p.encode()) > MAX_NAME_BYTES for p in PurePosixPath(path).parts):
        return "too_long", "it is longer than the host accepts"
    return None


def describe_entry(mode: int) -> str:
    """A file type in words: 'a directory', 'a FIFO (named pipe)', ..."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


# ------------------------------------------------------- the business layer's refusals
def no_readable_file(path: object, entry: os.stat_result | None, max_bytes: int) -> ToolError | None:
    """None when ``entry`` (an ``lstat``) is a small regular file; otherwise the error and hint a model is shown."""
    if entry is not None and stat.S_ISREG(entry.st_mode) and entry.st_size <= max_bytes:
        return None
    if entry is None:
        why, hint = "there is no such file in the workspace", (
            "read_file reads existing files only: check the name against a directory listing, "
            "or switch tools (e.g. create the file, or ask the user where it is)")
    elif stat.S_ISDIR(entry.st_mode):
        why, hint = "it is a directory", "list the directory with a listing tool instead of read_file"
    elif stat.S_ISREG(entry.st_mode):
        why, hint = (f"it is {entry.st_size} bytes, over the read cap of {max_bytes}",
                     "ask the user for the part you need, or use a tool that reads a range")
    else:
        why, hint = f"it is {describe_entry(entry.st_mode)}", "read_file reads regular files only"
    return ToolError("precondition_failed", "$.path", f"{shown(path)}: {why}",
                     expected="an existing regular file in the workspace", received=why, hint=hint, retryable=False)
