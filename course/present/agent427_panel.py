"""Chapter 03: Agent-427's proposal under the legality panel: three switches, three real inputs.

The switches and what each one changes are ``course.worlds.agent427_switches``:
the call's fields, the caller's write scope, the imported name. Each
combination is validated for real against a copy of the scenario that is only
ever read; ``LegalityPanel`` shows the result.
"""
from __future__ import annotations

from pathlib import Path

from course.worlds import agent427_scenario
from course.present.legality_panel import LegalityPanel

LABELS = ("the call uses the declared fields", "the caller holds fs.write", "the imported symbol is exported")


def agent427_panel(workspace: Path | str | None = None) -> LegalityPanel:
    """The chapter's panel: Agent-427's proposal, with all three switches on (a legal call) to begin with.

    ``workspace`` as for ``course.worlds.agent427_switches.agent427_scenario``; by default each
    verdict gets its own throwaway copy.
    """
    return LegalityPanel(agent427_scenario(workspace), LABELS)


__all__ = ["LABELS", "agent427_panel"]
