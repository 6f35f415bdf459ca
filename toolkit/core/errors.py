"""Chapter 01: structured feedback for a model: one error shape, whatever failed.

A refused call should tell the model *which* field or test stopped it, what was
expected, what was received (secrets redacted), and whether trying again can
help. ``ToolError.line()`` is the one-line form used in transcripts, e.g.
``$.file_path: required property missing``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Error codes and the validation layer each belongs to.
CODES: dict[str, str] = {
    "invalid_json": "schema",
    "not_an_object": "schema",
    "too_large": "schema",
    "missing_required": "schema",
    "unexpected_property": "schema",
    "wrong_type": "schema",
    "enum": "schema",
    "pattern": "schema",
    "range": "schema",
    "length": "schema",
    "schema_violation": "schema",
    "unknown_tool": "schema",
    "not_authorized": "permission",
    "path_refused": "permission",
    "precondition_failed": "business",
    "approval_required": "business",
    "symbol_not_exported": "business",
    "postcondition_failed": "execution",
    "execution_failed": "execution",
    "timeout": "execution",
    "cancelled": "execution",
    "not_evaluable": "schema",
    "stream_incomplete": "schema",
    "stream_invalid": "schema",
    "response_incomplete": "schema",
    "invalid_call": "schema",
    "duplicate_call_id": "schema",
    "not_a_call": "schema",
    "call_id_mismatch": "execution",
    "missing_result": "execution",
    "duplicate_result": "execution",
    "orphan_result": "execution",
    "module_not_found": "business",
    "invalid_key": "schema",
    "not_serializable": "schema",
    "idempotency_conflict": "business",
    "in_progress": "execution",
    "outcome_unknown": "execution",
    "busy": "execution",
    "not_applied": "execution",
}


@dataclass(frozen=True)
class ToolError:
    """One reason a call did not hold.

    ``pointer`` names the offending thing itself: ``$.path`` for a field
    (a missing field names the missing field, not its parent), or a
    description such as ``import publication_manifest.load_manifest``.
    ``retryable`` says whether the *model* can make the call pass by sending it
    again with corrected arguments (a schema error: yes; a missing permission:
    no). Whether the *host* repeats an effect is a different question, decided
    by the retry controller (``toolkit.effects.backoff``).
    """

    code: str
    pointer: str
    message: str
    expected: Any = None
    received: Any = None
    hint: str = ""
    retryable: bool = True

    @property
    def layer(self) -> str:
        """The validation layer that raised this error (schema, permission, business, execution)."""
        return CODES.get(self.code, "execution")

    def line(self) -> str:
        """The transcript line, ``<pointer>: <message>``."""
        return f"{self.pointer}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["layer"] = self.layer
        return data


def shorten(text: str, limit: int = 80, tail: str = "...") -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``tail`` when something was cut."""
    return text if len(text) <= limit else text[: limit - len(tail)] + tail


def pointer_for(path: tuple | list) -> str:
    """Render a path of keys and indexes as a JSON path: ``("lines", 0, "qty")`` -> ``$.lines[0].qty``."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
