"""The ledger rule: retries are unavoidable; duplicate side effects are optional.

    invoke(f, x, k, L) = (L, L[k])               if k in dom(L)
                         (L ∪ {k ↦ y}, y)         if k not in dom(L), y = f_k(x)

``invoke`` is the rule as a pure function over a dict. ``MemoryLedger`` is the
same rule as an object with state, for the first explanation; a durable
ledger keeps the same interface on a real database.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, TypeVar

Y = TypeVar("Y")


def invoke(f: Callable[[Any], Y], x: Any, k: str, L: Mapping[str, Y]) -> tuple[dict[str, Y], Y]:
    """The seed's two branches, literally: replay a known key, or run once and record."""
    if k in L:
        return dict(L), L[k]
    y = f(x)
    return {**L, k: y}, y


class MemoryLedger:
    """The ledger rule with state. Not durable: a crash forgets every key."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def invoke(self, key: str, effect: Callable[[Any], Y], arguments: Any) -> Y:
        self.entries, result = invoke(effect, arguments, key, self.entries)
        return result
