"""Chapter 05: stored results: a ledger keeps each key's result as JSON text, and gives it back unchanged."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from toolkit.kernel import FailureClass, Status, ToolError, ToolResult


def encode_result(value: Any, strict: bool = False) -> str:
    """A result as stored JSON (``strict``: ``TypeError`` for what JSON cannot hold, else text)."""
    if isinstance(value, ToolResult):
        data = asdict(value)
        data["status"] = value.status.value
        data["failure_class"] = value.failure_class.value if value.failure_class else None
        value = {"__tool_result__": data}
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=not strict,
                          default=None if strict else str)
    except TypeError:
        if strict:
            raise
        # keys of mixed types ({1: "x", "b": 2}) cannot be sorted: stored as they come
        return json.dumps(value, separators=(",", ":"), default=str)


def decode_result(text: str | None) -> Any:
    """The inverse of ``encode_result``."""
    if text is None:
        return None
    value = json.loads(text)
    if isinstance(value, dict) and set(value) == {"__tool_result__"}:
        data = dict(value["__tool_result__"])
        data["status"] = Status(data["status"])
        data["failure_class"] = FailureClass(data["failure_class"]) if data["failure_class"] else None
        data["errors"] = tuple(ToolError(**e) for e in data["errors"])
        return ToolResult(**data)
    return value
