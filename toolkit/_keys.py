"""Chapter 05: which idempotency key a call carries, read from the arguments as the host validated them.

    key(u) = the key beside the call, or the field its contract names inside the arguments

A key may travel beside the call (``ToolCall.idempotency_key``) or inside its
arguments, in the field the contract names (``create_invoice`` names
``idempotency_key``). Arguments may arrive as a dict or as JSON text (the form
vendors deliver); ``call_arguments`` is the one place that turns either into
the parsed value, so the key and the ledger's fingerprint are read from the
same JSON value whatever its spelling. If both places carry a key they must
agree. The loop, the retry controller and the timeout rules all ask here.
"""
from __future__ import annotations

from typing import Any

from toolkit.kernel.call import ToolError
from toolkit._schema import parse_arguments


def call_arguments(call: Any, verdict: Any = None) -> Any:
    """The arguments ``call`` carries as a parsed JSON value, or None when they do not parse.

    A ``verdict`` that answers for this very call gives its validated
    arguments; otherwise the call's own arguments (a dict or JSON text) are
    parsed here, with the same caps the schema layer applies.
    """
    if verdict is not None and getattr(verdict, "call", None) == call and verdict.arguments is not None:
        return verdict.arguments
    arguments, _errors = parse_arguments(getattr(call, "arguments", None))
    return arguments


def carried_key(call: Any, contract: Any = None, arguments: Any = None) -> str | ToolError | None:
    """The key ``call`` carries, ``None`` when it carries none, or a ``ToolError`` when its two keys disagree.

    ``arguments`` (optional) are the already-validated arguments; without them the
    call's own arguments are parsed here (``call_arguments``).
    """
    field = getattr(contract, "idempotency_field", "") or ""
    if arguments is None:
        arguments = call_arguments(call)
    inside = arguments.get(field) if field and isinstance(arguments, dict) else None
    inside = inside if isinstance(inside, str) and inside else None
    beside = getattr(call, "idempotency_key", None) or None
    if beside and inside and beside != inside:
        return ToolError("idempotency_conflict", f"$.{field}", "the call's key and its arguments' key disagree",
                         expected=beside, received=inside, hint="send one key, the original one", retryable=False)
    return beside or inside


__all__ = ["call_arguments", "carried_key"]
