"""Chapter 07: redaction: secrets never reach a log, a database, or a model's feedback.

Two rules, applied field by field: a field the contract marks secret is
redacted, and so is any field whose *name* looks secret (token, api_key,
password, ...). Values are replaced by ``REDACTED``; structure is kept so the
rest of the record stays useful for troubleshooting.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from toolkit.core.limits import MAX_DEPTH

REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"token|api[_-]?key|password|passwd|secret|authorization|credential|private[_-]?key|cookie",
                         re.IGNORECASE)


def is_secret_name(name: str, secret_fields: Iterable[str] = ()) -> bool:
    """True when a field called ``name`` must never be shown."""
    return name in set(secret_fields) or bool(SECRET_NAME.search(name))


def redact(value: Any, secret_fields: Iterable[str] = (), _depth: int = 0) -> Any:
    """Return a copy of ``value`` with every secret field's value replaced by ``REDACTED``.

    Mappings are walked recursively (lists too); anything nested deeper than
    32 levels is replaced whole, so hostile input cannot exhaust the stack.
    """
    fields = frozenset(secret_fields)
    if _depth > MAX_DEPTH:
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

    redacted = redact(value, secret_fields)
    try:
        text = json.dumps(redacted, sort_keys=True, default=repr)
    except TypeError:  # keys of mixed types cannot be sorted
        text = json.dumps(redacted, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Shapes of credentials worth masking even where no field name gave them away.
TOKEN_SHAPES = re.compile(r"\bsk-[A-Za-z0-9_-]{6,}|\bBearer\s+[A-Za-z0-9._~+/=-]{6,}|\bgh[pousr]_[A-Za-z0-9]{10,}"
                          r"|\bAKIA[0-9A-Z]{12,}|\bxox[abpr]-[A-Za-z0-9-]{6,}")


def secret_values(arguments: Any, secret_fields: Iterable[str] = ()) -> set[str]:
    """Every text value held by a secret field (at any depth) in ``arguments``."""
    fields = frozenset(secret_fields)
    found: set[str] = set()

    def everything(value: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(value, Mapping):
            for v in value.values():
                everything(v, depth + 1)
        elif isinstance(value, (list, tuple)):
            for v in value:
                everything(v, depth + 1)
        elif value is not None and not isinstance(value, bool):
            found.add(str(value))

    def walk(value: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(value, Mapping):
            for k, v in value.items():
                (everything if isinstance(k, str) and is_secret_name(k, fields) else walk)(v, depth + 1)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, depth + 1)

    walk(arguments, 0)
    return {s for s in found if len(s) >= 4}


def scrub(text: str, values: Iterable[str]) -> str:
    """Mask every known secret value, and anything shaped like a credential, inside free text."""
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return TOKEN_SHAPES.sub(REDACTED, text)
