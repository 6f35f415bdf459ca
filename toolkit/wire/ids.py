"""Chapters 01 and 08: call ids that never cross: the toolkit's own ids, and the vendor ids they answer to.

The toolkit mints its own call ids (``call_1``, ``call_2``, ...) and an
``IdMap`` (``toolkit._ids``, where the stream assembler finds it too) remembers
which vendor id each one answers to. A result is written
back under the vendor's own id; a call moved to another vendor gets an id that
vendor accepts (Anthropic allows only ``^[a-zA-Z0-9_-]+$``). ``id_problem``
says why a value cannot be a call id for one of the ``VENDORS``.
"""
from __future__ import annotations

from typing import Any

from toolkit._ids import SAFE_ID


#: The vendors the toolkit speaks to, by the names every vendor function takes.
VENDORS = ("openai", "anthropic", "mcp")


def id_problem(vendor: str, value: Any) -> str | None:
    """Why ``value`` cannot be a call id for ``vendor``, or None when it can.

    OpenAI wants a non-empty string; Anthropic a string of letters, digits,
    ``_`` and ``-``; MCP (JSON-RPC) a string or an integer.
    """
    if vendor == "mcp":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return "a JSON-RPC id must be a string or an integer"
        return None
    if not isinstance(value, str) or not value:
        return "a call id must be a non-empty string"
    if vendor == "anthropic" and not SAFE_ID.fullmatch(value):
        return "Anthropic ids may contain only letters, digits, '_' and '-'"
    return None
