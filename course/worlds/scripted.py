"""Chapter 03: a stand-in for a model: a policy that proposes from a script, then stops.

Each entry is a ``ToolCall`` or a function ``state -> ToolCall | None``; then None."""
from __future__ import annotations

from typing import Any, Callable, Iterable


class ScriptedPolicy:
    """A scripted stand-in for a model: the next entry of the script per step, then None."""

    def __init__(self, script: Iterable[Any | Callable[[Any], Any]]):
        self.script = list(script)
        self.position = 0

    def __call__(self, state: Any) -> Any:
        if self.position >= len(self.script):
            return None
        step = self.script[self.position]
        self.position += 1
        return step(state) if callable(step) else step
