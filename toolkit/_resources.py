"""Chapter 08: a call's footprint: its contract's resource templates filled from its arguments, one spelling each.

``footprint`` (the scheduler's one entry) is None when a template cannot be filled;
``file:./src//a.txt`` and ``file:src/a.txt`` are one resource (tidied as text; links are not
followed)."""
from __future__ import annotations

import posixpath
import string
from typing import Any

from toolkit.kernel.contract import Contract


def canonical(resource: str) -> str:
    """One spelling per resource: ``file:./src//a.txt`` -> ``file:src/a.txt`` (lexically; links are not followed)."""
    scheme, colon, rest = resource.partition(":")
    if colon and scheme == "file" and rest:
        rest = posixpath.normpath(rest.replace("\\", "/"))
    return f"{scheme}{colon}{rest}"


def footprint(contract: Contract, arguments: Any) -> tuple[frozenset[str], frozenset[str]] | None:
    """The resources ``contract``'s templates name for ``arguments`` (parsed), or None when they cannot be known."""
    for template in contract.reads + contract.writes:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
        if any(f not in arguments for f in fields):
            return None
    try:
        reads, writes = contract.resources(arguments)
    except (ValueError, KeyError, IndexError, AttributeError):
        return None
    return frozenset(map(canonical, reads)), frozenset(map(canonical, writes))
