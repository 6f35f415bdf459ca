"""Chapter 01: the workspace: a folder a file tool is confined to, with the path ladder bound to it.

``Workspace(root)`` resolves its folder once: ``check`` runs rungs 1 and 2, ``read`` all three
(``course.worlds.ladder`` reports each rung's verdict). ``locate`` runs rungs 1 and 2 against any
folder (the file tools use it). Nothing a workspace prints shows a machine path."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import toolkit.kernel.read_file as ladder     # a module import: the kernel's read_file builds a Workspace too
from toolkit._caps import MAX_FILE_BYTES
from toolkit._nofollow import FileRead
from toolkit._paths import PathRefused


@dataclass(frozen=True)
class Workspace:
    """A folder a file tool is confined to (``root`` resolved once), the three rungs bound to it."""

    root: Path
    max_bytes: int = MAX_FILE_BYTES

    def __post_init__(self) -> None:
        root = Path(self.root).resolve(strict=True)
        if not root.is_dir():
            raise NotADirectoryError("a workspace must be a directory")
        object.__setattr__(self, "root", root)

    def __repr__(self) -> str:   # the folder's name only: notebooks print no machine paths
        return f"Workspace({self.root.name!r}, max_bytes={self.max_bytes})"

    def check(self, path: object) -> PurePosixPath:
        """Rungs 1 and 2: the real path, relative to the root, or ``PathRefused``. Opens nothing."""
        return ladder.confine(self.root, path)

    def read(self, path: object) -> FileRead:
        """All three rungs. Rung 3 always runs, on the real path rung 2 found."""
        return ladder.read_confined(self.root, path, self.max_bytes)

    def entry(self, path: object) -> os.stat_result | None:
        """``lstat`` of what a confined path names, or None: advice only, for preconditions."""
        relative = self.check(path)
        try:
            return os.lstat(self.root / relative)
        except OSError:
            return None


def locate(root: Path | str, path: object) -> tuple[Path, PurePosixPath]:
    """Rungs 1 and 2 for a folder given as any path: ``(real absolute path, real path relative to the root)``."""
    try:
        base = Path(root).resolve()
    except (OSError, RuntimeError, ValueError):      # a workspace behind a link loop
        raise PathRefused(2, "unresolvable", path, "the workspace cannot be resolved",
                          "a relative path inside the workspace") from None
    relative = ladder.confine(base, path)
    return base / relative, relative
