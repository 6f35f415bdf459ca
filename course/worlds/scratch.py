"""Chapters 01-09: the scratch folder a scene owns, removed when the scene is closed.

``ScratchFolder`` is how a world holds a temporary folder: a
``tempfile.TemporaryDirectory`` underneath (removed on ``close()``, at the end
of a ``with`` block, or when the scene is collected or the interpreter exits;
closing twice is harmless), and the context manager every scene built on it
shares. ``base`` is the folder.
"""
from __future__ import annotations

import tempfile
from pathlib import Path


class ScratchFolder:
    """A temporary folder owned by the object; ``close()`` (or leaving a ``with`` block) removes it."""

    def __init__(self, prefix: str) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix=prefix)
        self.base = Path(self._folder.name)

    def close(self) -> None:
        """Remove the folder and everything in it (once; later calls do nothing)."""
        self._folder.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ScratchFolder"]
