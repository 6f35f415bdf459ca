"""Redaction: secrets never reach a log, a database, or a model's feedback.

Two rules, applied field by field: a field the contract marks secret is
redacted, and so is any field whose *name* looks secret (token, api_key,
password, ...). Values are replaced by ``REDACTED``; structure is kept so the
rest of the record stays useful for troubleshooting.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"token|api[_-]?key|password|passwd|secret|authorization|credential|private[_-]?key|cookie",
                         re.IGNORECASE)
_MAX_DEPTH = 32


def is_secret_name(name: str, secret_fields: Iterable[str] = ()) -> bool:
    """True when a field called ``name`` must never be shown."""
    return name in set(secret_fields) or bool(SECRET_NAME.search(name))


def redact(value: Any, secret_fields: Iterable[str] = (), _depth: int = 0) -> Any:
    """Return a copy of ``value`` with every secret field's value replaced by ``REDACTED``.

    Mappings are walked recursively (lists too); anything nested deeper than
    32 levels is replaced whole, so hostile input cannot exhaust the stack.
    """
    fields = frozenset(secret_fields)
    if _depth > _MAX_DEPTH:
        return "[too deep]"
    if isinstance(value, dict):
        return {k: (REDACTED if isinstance(k, str) and is_secret_name(k, fields)
                    else redact(v, fields, _depth + 1))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, fields, _depth + 1) for v in value]
    return value


def summarize(value: Any, secret_fields: Iterable[str] = (), limit: int = 120) -> str:
    """A short, redacted, one-line summary of arguments for a log line."""
    import json

    text = json.dumps(redact(value, secret_fields), sort_keys=True, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."
