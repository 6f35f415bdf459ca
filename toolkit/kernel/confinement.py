"""Chapter 01: path confinement: keeping a file tool inside its workspace, one rung at a time.

A schema can say that ``path`` is a string. It cannot say that the string
names a file the tool may read. This module answers that second question with
a ladder of three rungs, and it is the package's one definition of it (the
``Workspace`` of ``toolkit._workspace``, ``read_file``, ``edit_file`` and
the exports reader all climb it). The rule::

    confine(root, path)      = check_realpath(root, path) after check_lexical(root, path)   # rungs 1, 2
    read_confined(root, path) = open_confined(root, confine(root, path))                   # rung 3

Each rung is a small function, and each catches something the one before it misses:

1. ``check_lexical`` reads the path *as text*. It refuses what is not plain
   text (NUL bytes, control characters, backslashes, empty or overlong paths),
   absolute paths outside the workspace and ``..`` that climbs above it.
   Containment is decided with ``PurePosixPath.is_relative_to``, which compares
   whole components, never with ``str.startswith`` (``/ws_evil`` starts with
   ``/ws`` but is not inside it). Rung 1 touches no file.
2. ``check_realpath`` asks the file system what the path *really* names,
   following every symbolic link the way the kernel would, and refuses a real
   path outside the workspace. Rung 2 reads link targets; it opens nothing.
3. ``open_confined`` opens the real path from rung 2 component by component,
   relative to a descriptor of the workspace directory, with ``O_NOFOLLOW`` on
   every step, so a link swapped in after rungs 1 and 2 looked is refused, not
   followed (a check, then a use, is a race; this rung closes it). The last
   component must be the same regular file under ``lstat`` before the open and
   ``fstat`` after, no larger than the cap; FIFOs, devices, sockets and
   directories are refused unopened. At most the cap (plus one byte) is read.

The rules a path must follow, in words:

* Paths are POSIX text, relative to the workspace (``src/config.ts``). An
  absolute path is accepted only if it lies inside the workspace's real root.
* ``..`` may appear as long as the path never climbs above the workspace at any
  step: ``src/../README.md`` is fine, ``../ws/README.md`` is not, even though it
  would come back. Rung 2 then resolves links and ``..`` as ``os.path.realpath``
  does (a link before ``..`` is followed first, like the kernel).
* ``./a``, ``a//b`` and a trailing ``/`` are tidied the way ``PurePosixPath`` tidies them.
* Nothing is decoded or expanded: ``%2e%2e%2f``, ``~`` and ``$HOME`` are
  ordinary characters in a file name. Unicode is not normalised (``．．`` is not ``..``).
* A link whose target stays inside the workspace is read through its target.
  Hard links and mount points are the workspace owner's choice.

Every refusal raises ``toolkit._paths.PathRefused`` (its ``rung`` and
``kind`` are fields; its ``error`` is the ``path_refused`` ``ToolError``).
Rung 3 needs ``dir_fd`` support (Linux, macOS); where it is missing it refuses every path.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from toolkit._schema import json_type
from toolkit._paths import MAX_BYTES, MAX_NAME_BYTES, MAX_PATH_BYTES, PathRefused, shown


# --------------------------------------------------------------- the ladder
def confine(root: Path, path: object) -> PurePosixPath:
    """Rungs 1 and 2: the real path ``path`` names, relative to ``root``, or ``PathRefused``. Opens nothing.

    ``root`` must be the workspace's absolute real path (see ``locate`` for a folder given any way).
    """
    check_lexical(root, path)
    return check_realpath(root, path)


def read_confined(root: Path, path: object, max_bytes: int = MAX_BYTES) -> "FileRead":
    """All three rungs. Rung 3 always runs, on the real path rung 2 found."""
    return open_confined(root, confine(root, path), max_bytes)


def locate(root: Path | str, path: object) -> tuple[Path, PurePosixPath]:
    """Rungs 1 and 2 for a folder given as any path: ``(real absolute path, real path relative to the root)``."""
    try:
        base = Path(root).resolve()
    except (OSError, RuntimeError, ValueError):      # a workspace behind a link loop
        raise PathRefused(2, "unresolvable", shown(path), "the workspace cannot be resolved", _INSIDE) from None
    relative = confine(base, path)
    return base / relative, relative


# ------------------------------------------------------------------ rung 1
_INSIDE = "a relative path inside the workspace"


def check_lexical(root: Path, path: object) -> PurePosixPath:
    """Rung 1: judge the path as text only. Returns it relative to ``root``, normalised.

    ``root`` must be the workspace's absolute real path. No file is touched.
    """
    def refuse(kind: str, why: str) -> PathRefused:
        return PathRefused(1, kind, shown(path), why, _INSIDE)

    if not isinstance(path, str):
        raise refuse("not_text", f"the path must be a string, got {json_type(path)}")
    if path == "":
        raise refuse("empty", "the path is empty")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise refuse("not_text", "the path is not valid Unicode text") from None
    if "\x00" in path:
        raise refuse("nul", "it contains a NUL byte")
    if "\\" in path:
        raise refuse("backslash", "it contains a backslash, which is not a folder separator here")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in path):
        raise refuse("control", "it contains a control or invisible formatting character")
    candidate = PurePosixPath(path)
    if len(encoded) > MAX_PATH_BYTES or any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in candidate.parts):
        raise refuse("too_long", "it is longer than the host accepts")
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
    """Rung 2: resolve every link as the kernel would; the real path must lie inside ``root``.

    Call it on a path that passed rung 1. Returns the real path relative to
    ``root`` (``.`` for the root itself). Opens nothing; reads link targets only.
    """
    try:
        real = PurePosixPath(os.path.realpath(os.path.join(root, path)))
    except (OSError, ValueError, RuntimeError):
        raise PathRefused(2, "unresolvable", shown(path), "it cannot be resolved", _INSIDE) from None
    base = PurePosixPath(root)
    if not real.is_relative_to(base):      # components again: a link to /ws_evil is outside /ws
        raise PathRefused(2, "outside", shown(path), "it resolves to a place outside the workspace", _INSIDE)
    return real.relative_to(base)


# ------------------------------------------------------------------ rung 3
@dataclass(frozen=True)
class FileRead:
    """What rung 3 read: the relative path it opened, the bytes, their size and SHA-256."""

    path: str
    data: bytes = field(repr=False)
    size: int
    sha256: str

    @property
    def text(self) -> str:
        """The content as UTF-8 text; undecodable bytes become U+FFFD."""
        return self.data.decode("utf-8", errors="replace")

    @property
    def lossless(self) -> bool:
        """True when ``text`` is exactly the bytes (valid UTF-8)."""
        try:
            self.data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    def evidence(self) -> dict[str, Any]:
        return {"size": self.size, "sha256": self.sha256}


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
_SUPPORTED = (os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
              and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY"))
_LINK_ERRNOS = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}


def open_confined(root: Path, relative: PurePosixPath | str, max_bytes: int = MAX_BYTES) -> FileRead:
    """Rung 3: open ``relative`` under ``root`` without following any link, check it, read it.

    Each folder is opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to the one
    before it, starting from the workspace's own descriptor. The file is
    ``lstat``-ed first (a FIFO, device, socket, directory, link or oversized
    file is refused unopened), then opened with ``O_NOFOLLOW | O_NOCTTY |
    O_NONBLOCK`` and ``fstat``-ed: it must be the same regular file. Reads at
    most ``max_bytes`` (one more to notice a file that grew).
    """
    rel = PurePosixPath(relative)
    label = shown(str(relative))
    expected = f"a regular file of at most {max_bytes} bytes inside the workspace"

    def refuse(kind: str, why: str) -> PathRefused:
        return PathRefused(3, kind, label, why, expected)

    if rel.is_absolute() or ".." in rel.parts:
        raise refuse("traversal", "rung 3 opens only plain relative paths")
    if not rel.parts:
        raise refuse("not_regular", "it is a directory (the workspace itself)")
    if not _SUPPORTED:
        raise refuse("unsupported", "this platform has no dir_fd or O_NOFOLLOW")
    opened: list[int] = []
    try:
        opened.append(os.open(root, _DIR_FLAGS))
        for part in rel.parts[:-1]:
            opened.append(_open_folder(part, opened[-1], refuse))
        name = rel.parts[-1]
        before = stat_entry(name, opened[-1])
        if before is None:
            raise refuse("not_found", "there is no such file")
        _require_small_regular_file(before, max_bytes, refuse)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=opened[-1])
        except OSError as exc:
            if exc.errno in _LINK_ERRNOS:
                raise refuse("symlink", "it became a symbolic link after the check") from None
            if exc.errno == errno.ENOENT:
                raise refuse("changed", "it disappeared after the check") from None
            raise refuse("unreadable", f"it cannot be opened ({_errno_name(exc)})") from None
        opened.append(fd)
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise refuse("changed", f"it was replaced after the check (now {describe_entry(after.st_mode)})")
        _require_small_regular_file(after, max_bytes, refuse)
        data = _read_at_most(fd, max_bytes + 1)
    except OSError as exc:   # an I/O error on the way (EIO, EACCES, ...): refused, with the errno name only
        raise refuse("unreadable", f"it cannot be read ({_errno_name(exc)})") from None
    finally:
        for fd in reversed(opened):
            os.close(fd)
    if len(data) > max_bytes:
        raise refuse("too_large", f"it grew past the cap of {max_bytes} bytes while being read")
    return FileRead(str(rel), data, len(data), hashlib.sha256(data).hexdigest())


# ------------------------------------------------------ rung 3, hardening
Refuse = Callable[[str, str], PathRefused]


def describe_entry(mode: int) -> str:
    """A file type in words: 'a directory', 'a FIFO (named pipe)', ..."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def stat_entry(name: str, dir_fd: int) -> os.stat_result | None:
    """``lstat`` one name inside an open directory (links are not followed); None if it is absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_folder(part: str, dir_fd: int, refuse: Refuse) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise refuse("not_found", f"there is no folder {part!r}") from None
        if exc.errno in _LINK_ERRNOS:
            entry = stat_entry(part, dir_fd)
            if entry is not None and stat.S_ISLNK(entry.st_mode):
                raise refuse("symlink", f"the folder {part!r} is a symbolic link") from None
            raise refuse("not_found", f"{part!r} is not a folder") from None
        raise refuse("unreadable", f"the folder {part!r} cannot be opened ({_errno_name(exc)})") from None


def _errno_name(exc: OSError) -> str:
    """``ENOENT`` rather than ``str(exc)``, which would show absolute paths."""
    return errno.errorcode.get(exc.errno or 0, "OSError")


def _require_small_regular_file(st: os.stat_result, max_bytes: int, refuse: Refuse) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise refuse("symlink", "it is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise refuse("not_regular", f"it is {describe_entry(st.st_mode)}, not a regular file")
    if st.st_size > max_bytes:
        raise refuse("too_large", f"it is {st.st_size} bytes, over the cap of {max_bytes}")


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(65536, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
