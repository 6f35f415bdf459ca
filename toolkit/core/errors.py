"""Chapter 01: structured feedback for a model: one error shape, whatever failed.

A refused call should tell the model *which* field or test stopped it, what was
expected, what was received (secrets redacted), and whether trying again can
help. ``ToolError.line()`` is the one-line form used in transcripts, e.g.
``$.file_path: required property missing``.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from toolkit.core.limits import MAX_ECHO_CHARS

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
    "not_found": "execution",
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
    """Render a path of keys and indexes as a JSON path: ``("lines", 0, "qty")`` -> ``$.lines[0].qty``.

    A key longer than ``MAX_ECHO_CHARS`` is shown cut, so a hostile key cannot make the pointer huge.
    """
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{echo_text(part)}"
    return out


# ------------------------------------------------------------ hardening: what an error may echo back
#: A lone surrogate: a half of a UTF-16 pair that JSON text may spell (``"\\ud83d"``) but no UTF-8 text can hold.
SURROGATE = re.compile("[\ud800-\udfff]")


def echo_text(value: Any, limit: int = MAX_ECHO_CHARS) -> str:
    """``value`` as short, encodable text for a message: cut to ``limit``; lone surrogates become U+FFFD.

    Text that is not a ``str`` (bytes, ``None``, a number a model put where a name goes) is shown by its
    type only, so nothing it holds is copied.
    """
    if not isinstance(value, str):
        return f"<{type(value).__name__}>"
    return SURROGATE.sub("\ufffd", shorten(value, limit))


def echo_value(value: Any, limit: int = MAX_ECHO_CHARS) -> Any:
    """``value`` as an error's ``received`` may hold it: small JSON values as they are, anything else cut.

    Text is cut to ``limit`` characters; an array or object whose JSON text is longer becomes that text,
    cut; a value JSON cannot hold (NaN, bytes, an object) becomes a short description. The result always
    passes ``json.dumps(..., allow_nan=False)`` and encodes as UTF-8.
    """
    if value is None or isinstance(value, (bool, str)):
        return echo_text(value, limit) if isinstance(value, str) else value
    if isinstance(value, int):
        return value if value.bit_length() <= 1023 else f"<integer of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return f"<{type(value).__name__}>"
    return value if len(text) <= limit and not SURROGATE.search(text) else echo_text(text, limit)
