"""Chapter 05: a call's arguments as one JSON value: parsed once, fingerprinted, and the key read from it.

    parsed_arguments(x) = the JSON value x names, whether x is a dict or JSON text
    fingerprint(x)      = sha256(canonical JSON of that value)

Every reader of arguments (ledgers, the loop, retries, timeouts) goes through ``parsed_arguments``,
so text and a dict name the same call, and ``{"b": 1, "a": 100.0}`` and ``{"a": 100, "b": 1}`` share
a fingerprint. A key travels beside the call or in the field the contract names (``carried_key``);
both must agree. ``check_call`` is every ledger's input check, answering with a ``ToolError``."""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from toolkit._caps import MAX_DEPTH, MAX_KEY_LENGTH
from toolkit.kernel.call import ToolError
from toolkit._schema import parse_arguments
from toolkit._show import pointer_for


def parsed_arguments(arguments: Any) -> Any:
    """The JSON value the arguments name: a dict as given, JSON text of an object parsed."""
    if isinstance(arguments, (str, bytes, bytearray)):
        parsed, errors = parse_arguments(arguments)
        return arguments if errors else parsed
    return arguments


def carried_key(call: Any, contract: Any = None, arguments: Any = None) -> str | ToolError | None:
    """The key ``call`` carries, ``None``, or a ``ToolError`` when its two keys disagree."""
    field = getattr(contract, "idempotency_field", "") or ""
    if arguments is None:
        arguments = parsed_arguments(getattr(call, "arguments", None))
    inside = arguments.get(field) if field and isinstance(arguments, dict) else None
    inside = inside if isinstance(inside, str) and inside else None
    beside = getattr(call, "idempotency_key", None) or None
    if beside and inside and beside != inside:
        return ToolError("idempotency_conflict", f"$.{field}", "the call's key and its arguments' key disagree",
                         expected=beside, received=inside, hint="send one key, the original one", retryable=False)
    return beside or inside


def check_call(key: Any, arguments: Any, tool: Any, principal: Any) -> tuple[ToolError | None, Any, str]:
    """Every ledger call's input in one pass: ``(error or None, parsed arguments, fingerprint)``."""
    for name, value in (("tool", tool), ("principal", principal)):
        if not isinstance(value, str):
            return ToolError("wrong_type", f"$.{name}", f"{name} must be a string", expected="string",
                             received=type(value).__name__, retryable=False), arguments, ""
    error = check_key(key)
    if error is not None:
        return error, arguments, ""
    value = parsed_arguments(arguments)
    error, digest = checked_fingerprint(value)
    return error, value, digest


def fingerprint(arguments: Any) -> str:
    """sha256 of the canonical JSON of the arguments (hex)."""
    return hashlib.sha256(canonical_json(arguments).encode("utf-8")).hexdigest()


def canonical_json(arguments: Any) -> str:
    """One text per JSON value: sorted keys, no spaces, ``100.0`` as ``100``."""
    try:
        value = _canonical(arguments)
    except _NotJson as exc:
        raise ValueError(f"{pointer_for(exc.path)}: {exc.why}") from None
    return _dumps(value)


def checked_fingerprint(arguments: Any) -> tuple[ToolError | None, str]:
    """One pass over the arguments: ``(None, fingerprint)``, or ``(error, "")`` when they are not JSON."""
    try:
        value = _canonical(arguments)
    except _NotJson as exc:
        return _not_json(exc), ""
    return None, hashlib.sha256(_dumps(value).encode("utf-8")).hexdigest()


def check_key(key: Any) -> ToolError | None:
    """A usable idempotency key is a short, non-empty, printable string."""
    if not isinstance(key, str):
        return ToolError("invalid_key", "$.idempotency_key", "idempotency key must be a string",
                         expected="a non-empty string", received=type(key).__name__,
                         hint="name the logical attempt, e.g. invoice:order-431:v1", retryable=False)
    if not key.strip():
        return ToolError("invalid_key", "$.idempotency_key", "idempotency key is empty",
                         expected="a non-empty string", received="empty string",
                         hint="name the logical attempt, e.g. invoice:order-431:v1", retryable=False)
    if len(key) > MAX_KEY_LENGTH or not key.isprintable():
        return ToolError("invalid_key", "$.idempotency_key",
                         f"idempotency key must be printable and at most {MAX_KEY_LENGTH} characters",
                         expected=f"printable text, at most {MAX_KEY_LENGTH} characters",
                         received=f"{len(key)} characters", retryable=False)
    return None


def same_arguments(a: Any, b: Any) -> bool:
    """True when two calls' arguments are the same JSON value (dict or JSON text)."""
    pa, pb = parsed_arguments(a), parsed_arguments(b)
    (error_a, digest_a), (error_b, digest_b) = checked_fingerprint(pa), checked_fingerprint(pb)
    return pa == pb if error_a or error_b else digest_a == digest_b


class _NotJson(Exception):
    def __init__(self, path: tuple, found: str, why: str):
        super().__init__(why)
        self.path, self.found, self.why = path, found, why


def _canonical(value: Any, path: tuple = ()) -> Any:
    """Equal JSON values get equal Python values (integral floats ints, tuples lists)."""
    if len(path) > MAX_DEPTH:
        raise _NotJson(path, "deeper nesting", f"nests deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(path, repr(value), "NaN and infinities are not JSON")
        return int(value) if value.is_integer() else value
    if isinstance(value, (list, tuple)):
        return [_canonical(v, path + (i,)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _NotJson(path, type(k).__name__, "object keys must be strings")
            out[k] = _canonical(v, path + (k,))
        return out
    raise _NotJson(path, type(value).__name__, f"a {type(value).__name__} is not a JSON value")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _not_json(exc: _NotJson) -> ToolError:
    return ToolError("not_serializable", pointer_for(exc.path), exc.why,
                     expected="JSON values only (object, array, string, finite number, true/false, null)",
                     received=exc.found, hint="send plain JSON values", retryable=False)
