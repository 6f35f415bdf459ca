"""Chapter 01: a witness for "no unauthorized file was read": every file the interpreter opens, recorded.

``recording_opens()`` records every path opened in its block through a ``sys.addaudithook`` hook
on the ``open`` event, raised *before* the system call (the import system's opens are not
recorded). A full path to nothing can only fail (``found=False``) and is left out of
``files_opened``; a bare name relative to a ``dir_fd`` is always counted.
``opened_outside(events, root)`` lists every full path tried outside ``root``, found or not."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from toolkit._paths import PathRefused
from toolkit.kernel.read_file import check_realpath


@dataclass(frozen=True)
class Open:
    """One open the interpreter attempted: the path as given, whether it opened a folder, whether anything was there."""

    path: str
    directory: bool
    found: bool = True

    @property
    def name(self) -> str:
        """The last component: what a folder-relative open (``dir_fd``) names anyway."""
        return os.path.basename(self.path.rstrip("/")) or self.path


_ACTIVE: list[list[Open]] = []
_INSTALLED = False
_DIRECTORY_FLAG = getattr(os, "O_DIRECTORY", 0)
_CREATE_FLAG = getattr(os, "O_CREAT", 0)


def _from_import_system() -> bool:
    """True when the open comes from loading code or package data (importlib on the stack)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib") or f"{os.sep}importlib{os.sep}" in name:
            return True
        frame = frame.f_back
    return False


def _hook(event: str, args: tuple) -> None:
    if not _ACTIVE or event != "open":
        return
    path, _mode, flags = args
    if isinstance(path, int) or path is None:     # re-opening a descriptor opens no path
        return
    if _from_import_system():
        return
    flags = flags if isinstance(flags, int) else 0
    text = os.fsdecode(os.fspath(path))
    found = not os.path.isabs(text) or bool(flags & _CREATE_FLAG) or os.path.lexists(text)
    _ACTIVE[-1].append(Open(text, bool(flags & _DIRECTORY_FLAG), found))


@contextmanager
def recording_opens() -> Iterator[list[Open]]:
    """Yield a list that fills with an ``Open`` for every path opened inside the block."""
    global _INSTALLED
    if not _INSTALLED:
        sys.addaudithook(_hook)
        _INSTALLED = True
    events: list[Open] = []
    _ACTIVE.append(events)
    try:
        yield events
    finally:
        _forget(events)


def _forget(events: list[Open]) -> None:
    """Take this block's list off the stack by identity: two empty lists are equal, but only one is this block's."""
    for i in range(len(_ACTIVE) - 1, -1, -1):
        if _ACTIVE[i] is events:
            del _ACTIVE[i]
            return


def files_opened(events: list[Open]) -> list[str]:
    """The names of the files (not folders) opened that were there: what could have been read."""
    return [e.name for e in events if not e.directory and e.found]


def opened_outside(events: list[Open], root: str | os.PathLike) -> list[str]:
    """Every full path tried outside ``root``, found or not, by rung 2 (``check_realpath``)."""
    base = Path(os.path.realpath(root))
    outside = []
    for e in events:
        if os.path.isabs(e.path):
            try:
                check_realpath(base, e.path)
            except PathRefused:
                outside.append(e.path)
    return outside
