"""Chapters 01 and 08: call ids that never cross: the toolkit's own ids, and the vendor ids they answer to.

The toolkit mints its own call ids (``call_1``, ``call_2``, ...) and an
``IdMap`` remembers which vendor id each one answers to. A result is written
back under the vendor's own id; a call moved to another vendor gets an id that
vendor accepts (Anthropic allows only ``^[a-zA-Z0-9_-]+$``). ``id_problem``
says why a value cannot be a call id for one of the ``VENDORS``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from toolkit.kernel import CallIds

__all__ = ["id_problem", "IdMap", "VENDORS"]

#: The vendors the toolkit speaks to, by the names every vendor function takes.
VENDORS = ("openai", "anthropic", "mcp")
_SAFE_ID = re.compile(r"[a-zA-Z0-9_-]+")


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
    if vendor == "anthropic" and not _SAFE_ID.fullmatch(value):
        return "Anthropic ids may contain only letters, digits, '_' and '-'"
    return None


@dataclass
class IdMap:
    """Internal call ids and the vendor ids they answer to, in both directions.

    ``internal(vendor, vendor_id)`` gives the toolkit's id for a vendor's id
    (minting ``call_1``, ``call_2``, ... on first sight, the same answer every
    time after). ``external(call_id, vendor)`` gives the id to write back: the
    vendor's own id when the call came from that vendor, else the internal id,
    which every vendor accepts.
    """

    prefix: str = "call"
    _ids: CallIds = field(init=False, repr=False)
    _inbound: dict[tuple[str, Any], str] = field(default_factory=dict, init=False, repr=False)
    _origin: dict[str, tuple[str, Any]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _SAFE_ID.fullmatch(self.prefix):
            raise ValueError("an id prefix may contain only letters, digits, '_' and '-'")
        self._ids = CallIds(self.prefix)

    def mint(self) -> str:
        """A fresh internal id that answers to no vendor id."""
        call_id = self._ids.mint()
        self._origin[call_id] = ("", None)
        return call_id

    def internal(self, vendor: str, vendor_id: Any = None) -> str:
        """The internal id for ``vendor_id`` (a fresh one when the vendor gave none)."""
        if vendor_id is None or vendor_id == "" or isinstance(vendor_id, bool):
            return self.mint()
        key = (vendor, id_key(vendor_id))
        if key not in self._inbound:
            call_id = self._ids.mint()
            self._inbound[key] = call_id
            self._origin[call_id] = (vendor, vendor_id)
        return self._inbound[key]

    def external(self, call_id: str, vendor: str) -> Any:
        """The id ``vendor`` knows this call by. Raises ``KeyError`` for an id this map never minted."""
        if call_id not in self._origin:
            raise KeyError(f"call id {call_id!r} was not minted by this IdMap")
        origin, vendor_id = self._origin[call_id]
        if origin == vendor:
            return vendor_id
        self._inbound.setdefault((vendor, id_key(call_id)), call_id)  # so a reply under this id maps back
        return call_id

    def knows(self, call_id: str) -> bool:
        return call_id in self._origin

    def rows(self) -> list[dict[str, Any]]:
        """The mapping as plain rows: ``{"call_id", "vendor", "vendor_id"}``, in minting order."""
        return [{"call_id": c, "vendor": v or None, "vendor_id": vid} for c, (v, vid) in self._origin.items()]


def id_key(vendor_id: Any) -> Any:
    """How an id is compared: by type and value, so 1 and "1" are different JSON-RPC ids."""
    return (type(vendor_id).__name__, vendor_id)
