"""Chapter 05: which idempotency key a call carries.

    key(u) = the key beside the call, or the field its contract names inside the arguments

A key may travel beside the call (``ToolCall.idempotency_key``) or inside its
arguments, in the field the contract names (``create_invoice`` names
``idempotency_key``). Arguments may arrive as a dict or as JSON text; the key is
read from the parsed value either way. If both places carry a key they must
agree. The loop, the retry controller and the timeout rules all ask this one
function.
"""
from __future__ import annotations

from typing import Any

from toolkit.core.errors import ToolError
from toolkit.core.schema import parse_arguments


def carried_key(call: Any, contract: Any = None, arguments: Any = None) -> str | ToolError | None:
    """The key ``call`` carries, ``None`` when it carries none, or a ``ToolError`` when its two keys disagree.

    ``arguments`` (optional) are the already-validated arguments; without them the
    call's own arguments are parsed here.
    """
    field = getattr(contract, "idempotency_field", "") or ""
    if arguments is None:
        arguments, _errors = parse_arguments(getattr(call, "arguments", None))
    inside = arguments.get(field) if field and isinstance(arguments, dict) else None
    inside = inside if isinstance(inside, str) and inside else None
    beside = getattr(call, "idempotency_key", None) or None
    if beside and inside and beside != inside:
        return ToolError("idempotency_conflict", f"$.{field}", "the call's key and its arguments' key disagree",
                         expected=beside, received=inside, hint="send one key, the original one", retryable=False)
    return beside or inside


__all__ = ["carried_key"]
