"""Chapter 01: rung 3's hardening: opening, reading and writing a file without following a link.

The system calls of rung 3 (``toolkit.kernel.read_file``): ``folder`` opens each folder with
``O_DIRECTORY | O_NOFOLLOW``, ``read_nofollow`` refuses a link, FIFO, device or oversized file
unopened and checks the same inode after opening, ``write_nofollow`` writes a temporary file and
renames it over. Errors name the ``errno`` only, never an absolute path."""
from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Callable, Iterator

from toolkit._paths import PathRefused, describe_entry

Refuse = Callable[[str, str], PathRefused]

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
_NEW_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
              | getattr(os, "O_CLOEXEC", 0))
#: True where rung 3 can work at all (Linux, macOS): ``dir_fd`` support and ``O_NOFOLLOW``.
SUPPORTED = (os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
             and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY"))
_LINK_ERRNOS = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}


@dataclass(frozen=True)
class FileRead:
    """What rung 3 read: the relative path it opened, the bytes, their size and SHA-256."""

    path: str
    data: bytes = field(repr=False)
    size: int
    sha256: str

    @classmethod
    def of(cls, path: str, data: bytes) -> "FileRead":
        return cls(path, data, len(data), hashlib.sha256(data).hexdigest())

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


def stat_entry(name: str, dir_fd: int) -> os.stat_result | None:
    """``lstat`` one name inside an open directory (links are not followed); None if it is absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def errno_name(exc: OSError) -> str:
    """``ENOENT`` rather than ``str(exc)``, which would show absolute paths."""
    return errno.errorcode.get(exc.errno or 0, "OSError")


def plain_relative(relative: PurePosixPath | str, expected: str) -> tuple[PurePosixPath, Refuse]:
    """The plain relative path rung 3 walks (no ``..``, not the workspace itself), and how it refuses."""
    rel = PurePosixPath(relative)

    def refuse(kind: str, why: str) -> PathRefused:
        return PathRefused(3, kind, str(relative), why, expected)

    if rel.is_absolute() or ".." in rel.parts:
        raise refuse("traversal", "rung 3 opens only plain relative paths")
    if not rel.parts:
        raise refuse("not_regular", "it is a directory (the workspace itself)")
    return rel, refuse


@contextmanager
def folder(root: os.PathLike | str, parts: tuple[str, ...], refuse: Refuse) -> Iterator[int]:
    """Open ``root`` and then each of ``parts`` without following a link; yield the last folder's descriptor."""
    if not SUPPORTED:
        raise refuse("unsupported", "this platform has no dir_fd or O_NOFOLLOW")
    opened: list[int] = []
    try:
        try:
            opened.append(os.open(root, _DIR_FLAGS))
        except OSError as exc:
            raise refuse("unreadable", f"the workspace cannot be opened ({errno_name(exc)})") from None
        for part in parts:
            opened.append(_open_folder(part, opened[-1], refuse))
        yield opened[-1]
    finally:
        for fd in reversed(opened):
            os.close(fd)


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
        raise refuse("unreadable", f"the folder {part!r} cannot be opened ({errno_name(exc)})") from None


def _require_small_regular_file(st: os.stat_result, max_bytes: int, refuse: Refuse) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise refuse("symlink", "it is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise refuse("not_regular", f"it is {describe_entry(st.st_mode)}, not a regular file")
    if st.st_size > max_bytes:
        raise refuse("too_large", f"it is {st.st_size} bytes, over the cap of {max_bytes}")


def read_nofollow(dir_fd: int, name: str, max_bytes: int, refuse: Refuse) -> bytes:
    """Rung 3's open and read of ``name`` inside the open folder ``dir_fd``; at most ``max_bytes`` come back."""
    try:
        before = stat_entry(name, dir_fd)
        if before is None:
            raise refuse("not_found", "there is no such file")
        _require_small_regular_file(before, max_bytes, refuse)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in _LINK_ERRNOS:
                raise refuse("symlink", "it became a symbolic link after the check") from None
            if exc.errno == errno.ENOENT:
                raise refuse("changed", "it disappeared after the check") from None
            raise refuse("unreadable", f"it cannot be opened ({errno_name(exc)})") from None
        try:
            after = os.fstat(fd)
            if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
                raise refuse("changed", f"it was replaced after the check (now {describe_entry(after.st_mode)})")
            _require_small_regular_file(after, max_bytes, refuse)
            data = _read_at_most(fd, max_bytes + 1)
        finally:
            os.close(fd)
    except OSError as exc:   # an I/O error on the way (EIO, EACCES, ...): refused, with the errno name only
        raise refuse("unreadable", f"it cannot be read ({errno_name(exc)})") from None
    if len(data) > max_bytes:
        raise refuse("too_large", f"it grew past the cap of {max_bytes} bytes while being read")
    return data


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(65536, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def write_nofollow(dir_fd: int, name: str, data: bytes, refuse: Refuse) -> None:
    """Replace ``name`` in the folder ``dir_fd`` with ``data``: a temporary file, fsync, rename."""
    before = stat_entry(name, dir_fd)
    if before is not None and stat.S_ISLNK(before.st_mode):
        raise refuse("symlink", "it is a symbolic link")
    if before is not None and not stat.S_ISREG(before.st_mode):
        raise refuse("not_regular", f"it is {describe_entry(before.st_mode)}, not a regular file")
    mode = stat.S_IMODE(before.st_mode) if before is not None else 0o644
    temporary = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temporary, _NEW_FLAGS, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise refuse("unreadable", f"its folder cannot be written ({errno_name(exc)})") from None
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError:
            pass
        raise
