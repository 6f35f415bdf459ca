"""Chapter 05: keys and fingerprints: which logical attempt a call names, and with which arguments.

A ledger claims an idempotency key together with a *fingerprint* of the
arguments: the sha256 of their canonical JSON. Two calls whose arguments are
the same JSON value get the same fingerprint however they were written
(``{"b": 1, "a": 100.0}`` and ``{"a": 100, "b": 1}``), so the same key with
other arguments is caught as a conflict, never replayed as someone else's
result.

``check_key`` and ``check_arguments`` answer with a structured ``ToolError``
instead of raising: a model sent these, and a model is told what to fix.
``same_arguments`` is the one comparison of two calls' arguments (a dict or
JSON text, parsed by ``toolkit._keys.call_arguments``) that the retry controller
and the timeout rules share.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from toolkit._caps import MAX_DEPTH, MAX_KEY_LENGTH
from toolkit.kernel.call import ToolError
from toolkit._schema import parse_arguments
from toolkit._show import pointer_for


def fingerprint(arguments: Any) -> str:
    """sha256 of the canonical JSON of the arguments (hex)."""
    return hashlib.sha256(canonical_json(arguments).encode("utf-8")).hexdigest()


def canonical_json(arguments: Any) -> str:
    """One text per JSON value: sorted keys, no spaces, ``100.0`` written as ``100``.

    Raises ``ValueError`` for anything JSON cannot hold (``check_arguments``
    turns that into a structured error).
    """
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


def check_arguments(arguments: Any) -> ToolError | None:
    """Arguments must be JSON values, or they cannot be fingerprinted (or stored)."""
    error, _ = checked_fingerprint(arguments)
    return error


def same_arguments(a: Any, b: Any) -> bool:
    """True when two calls' arguments are the same JSON value, each given as a dict or as JSON text.

    Arguments that do not parse are the same only when they are the same text.
    """
    (pa, ea), (pb, eb) = parse_arguments(a), parse_arguments(b)
    if ea or eb:
        return a == b
    (error_a, digest_a), (error_b, digest_b) = checked_fingerprint(pa), checked_fingerprint(pb)
    return pa == pb if error_a or error_b else digest_a == digest_b


# --------------------------------------------------------------------------- canonical values

class _NotJson(Exception):
    def __init__(self, path: tuple, found: str, why: str):
        super().__init__(why)
        self.path, self.found, self.why = path, found, why


def _canonical(value: Any, path: tuple = ()) -> Any:
    """Equal JSON values get equal Python values: integral floats become ints, tuples lists.

    Nesting is capped by ``toolkit._caps.MAX_DEPTH``, the same cap the schema
    layer puts on arguments.
    """
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


__all__ = ["canonical_json", "check_arguments", "check_key", "checked_fingerprint", "fingerprint", "same_arguments"]
