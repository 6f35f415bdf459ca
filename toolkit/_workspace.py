"""Chapter 01: the workspace: a folder a file tool is confined to, with the path ladder bound to it.

``Workspace(root)`` resolves its folder once: ``check`` runs rungs 1 and 2, ``read`` all three,
``ladder`` / ``explain`` report each rung's verdict. ``locate`` runs rungs 1 and 2 against any
folder (the file tools use it). Nothing a workspace prints shows a machine path."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import toolkit.kernel.read_file as ladder     # a module import: the kernel's read_file builds a Workspace too
from toolkit._caps import MAX_FILE_BYTES
from toolkit._nofollow import FileRead
from toolkit._paths import RUNG_NAMES, PathRefused


@dataclass(frozen=True)
class RungStep:
    """One rung's verdict on one path, as a notebook prints it."""

    rung: int
    outcome: str          # "pass", "refused" or "not reached"
    detail: str = ""

    def __str__(self) -> str:
        return f"rung {self.rung} {RUNG_NAMES[self.rung]:<8} {self.outcome:<11} {self.detail}".rstrip()


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

    def ladder(self, path: object) -> list[RungStep]:
        """Run the rungs in order and say what each decided (a refused rung stops the climb)."""
        steps: list[RungStep] = []
        try:
            steps.append(RungStep(1, "pass", repr(str(ladder.check_lexical(self.root, path)))))
            real = ladder.check_realpath(self.root, path)
            steps.append(RungStep(2, "pass", repr(str(real))))
            got = ladder.open_confined(self.root, real, self.max_bytes)
            steps.append(RungStep(3, "pass", f"{got.size} bytes, sha256 {got.sha256[:12]}"))
        except PathRefused as refusal:
            steps.append(RungStep(refusal.rung, "refused", refusal.why))
        return steps + [RungStep(n, "not reached") for n in range(len(steps) + 1, 4)]

    def explain(self, path: object) -> str:
        """The ladder as printable lines."""
        return "\n".join(str(step) for step in self.ladder(path))


def locate(root: Path | str, path: object) -> tuple[Path, PurePosixPath]:
    """Rungs 1 and 2 for a folder given as any path: ``(real absolute path, real path relative to the root)``."""
    try:
        base = Path(root).resolve()
    except (OSError, RuntimeError, ValueError):      # a workspace behind a link loop
        raise PathRefused(2, "unresolvable", path, "the workspace cannot be resolved",
                          "a relative path inside the workspace") from None
    relative = ladder.confine(base, path)
    return base / relative, relative
