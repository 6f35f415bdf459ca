"""Chapter 01: the path ladder climbed in the open: each rung's verdict on one path, printed."""
from __future__ import annotations

from dataclasses import dataclass

import toolkit.kernel.read_file as rule
from toolkit._paths import RUNG_NAMES, PathRefused
from toolkit._workspace import Workspace


@dataclass(frozen=True)
class RungStep:
    """One rung's verdict on one path."""

    rung: int
    outcome: str          # "pass", "refused" or "not reached"
    detail: str = ""

    def __str__(self) -> str:
        name = RUNG_NAMES[self.rung]
        return f"rung {self.rung} {name:<8} {self.outcome:<11} {self.detail}".rstrip()


def ladder(ws: Workspace, path: object) -> list[RungStep]:
    """Climb the rungs of ``ws`` in order and say what each decided (a refusal stops the climb)."""
    steps: list[RungStep] = []
    try:
        steps.append(RungStep(1, "pass", repr(str(rule.check_lexical(ws.root, path)))))
        real = rule.check_realpath(ws.root, path)
        steps.append(RungStep(2, "pass", repr(str(real))))
        got = rule.open_confined(ws.root, real, ws.max_bytes)
        steps.append(RungStep(3, "pass", f"{got.size} bytes, sha256 {got.sha256[:12]}"))
    except PathRefused as refusal:
        steps.append(RungStep(refusal.rung, "refused", refusal.why))
    return steps + [RungStep(n, "not reached") for n in range(len(steps) + 1, 4)]


def explain(ws: Workspace, path: object) -> str:
    """The ladder as printable lines."""
    return "\n".join(str(step) for step in ladder(ws, path))
