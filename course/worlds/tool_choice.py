"""Chapter 04: which declared tool a model reaches for: it can only go by the declaration.

A model picks a tool by matching the task against the tool list the host
sends: names, descriptions, argument schemas. So the list decides what can be
picked: a tool left out cannot be chosen (the model improvises with another
one or says it cannot help), and a vague description lets the wrong tool win.

``pick_tool`` is a deterministic stand-in for that reading, a word-overlap
scorer and not a model: each declared tool scores the task words its
declaration contains, divided by how many words the declaration uses, and a
tool that shares no word with the task is no match at all. Because it divides
by the word count, any added word lowers a score, useful detail included;
that is a property of the stand-in, not of models (the vendors' tool guides
ask for detailed descriptions), so the chapter draws no advice about length
from it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: Words too common to say anything about a tool.
_STOP = frozenset("a an and any are as at be by for from in into is it its of on one or the this to with you your "
                  "me my please".split())


def declaration_words(declaration: Mapping[str, Any]) -> frozenset[str]:
    """The words a model reads in one declared tool: its name, description, and the schema's field names and texts."""
    schema = declaration.get("input_schema") or declaration.get("parameters") or {}
    parts = [str(declaration.get("name", "")).replace("_", " "), str(declaration.get("description", ""))]
    for field, spec in (schema.get("properties") or {}).items():
        parts += [field.replace("_", " "), str(spec.get("description", "")) if isinstance(spec, Mapping) else ""]
    return _words(" ".join(parts))


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP and len(w) > 2)


@dataclass(frozen=True)
class ToolPick:
    """The tool the stand-in model would call (None: it can only answer in words) and every tool's match."""

    task: str
    best: str | None
    scores: dict[str, float]
    matched: dict[str, tuple[str, ...]]

    def lines(self) -> list[str]:
        """One row per declared tool: its score, the task words it matched, and which one is picked."""
        width = max((len(n) for n in self.scores), default=0)
        rows = [f"{name:<{width}}  {score:5.3f}  {' '.join(self.matched[name]) or '-'}"
                + ("  <- picked" if name == self.best else "") for name, score in self.scores.items()]
        if self.best is None:
            rows.append("no declared tool fits: the model can only say so in text")
        return rows


def pick_tool(task: str, declarations: Iterable[Mapping[str, Any]]) -> ToolPick:
    """Match ``task`` against each declared tool and pick the best (ties go to the earlier tool)."""
    wanted = _words(task)
    scores, matched = {}, {}
    for declaration in declarations:
        words = declaration_words(declaration)
        hits = sorted(wanted & words)
        name = str(declaration.get("name", ""))
        scores[name] = round(len(hits) / len(words), 3) if hits else 0.0
        matched[name] = tuple(hits)
    best = max((n for n in scores if scores[n] > 0), key=lambda n: scores[n], default=None)
    return ToolPick(task, best, scores, matched)
