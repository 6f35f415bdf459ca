"""Chapters 01 and 08: call ids that never cross: the toolkit's own ids, and the vendor ids they answer to.

A result goes back under the vendor's own id (``toolkit._ids.IdMap``); ``id_problem`` says why a
value cannot be a call id for one of the ``VENDORS``."""
from __future__ import annotations

from typing import Any

from toolkit._ids import SAFE_ID


#: The vendors the toolkit speaks to, by the names every vendor function takes.
VENDORS = ("openai", "anthropic", "mcp")


def id_problem(vendor: str, value: Any) -> str | None:
    """Why ``value`` cannot be a call id for ``vendor``, or None."""
    if vendor == "mcp":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return "a JSON-RPC id must be a string or an integer"
        return None
    if not isinstance(value, str) or not value:
        return "a call id must be a non-empty string"
    if vendor == "anthropic" and not SAFE_ID.fullmatch(value):
        return "Anthropic ids may contain only letters, digits, '_' and '-'"
    return None
