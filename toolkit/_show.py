"""Chapters 01 and 07: what the host may show of a value: short, encodable echoes, and secrets redacted.

Every echo of what a model sent is cut to its cap (``toolkit._caps``), ending in ``CUT_MARK``. A
field is redacted when the contract marks it secret or its *name* looks secret; free text is
scrubbed of the call's secret values and of credential shapes. Mask first, cut second."""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import replace
from typing import Any, Iterable, Mapping

from toolkit._caps import (CUT_MARK, MAX_ARGUMENT_BYTES, MAX_CALL_LINE_CHARS, MAX_DEPTH, MAX_ECHO_CHARS,
                           MAX_SUMMARY_CHARS)
from toolkit.kernel.call import ToolError


def shorten(text: str, limit: int = MAX_ECHO_CHARS, keep_end: bool = False) -> str:
    """``text`` cut to ``limit`` characters, ending (``keep_end``: starting) in ``CUT_MARK``."""
    if len(text) <= limit:
        return text
    kept = limit - len(CUT_MARK)
    return CUT_MARK + text[len(text) - kept:] if keep_end else text[:kept] + CUT_MARK


def call_line(name: Any, arguments: Any, call_id: Any = None, secret_fields: Iterable[str] = (),
              limit: int = MAX_CALL_LINE_CHARS) -> str:
    """The one way a call is printed: ``read_file({"path": "a.txt"}) #call_1``, masked, then cut."""
    from toolkit._ids import shown_call_id, shown_name

    shown = redact_arguments(arguments, secret_fields)
    try:
        text = json.dumps(shown, default=repr)   # keys in the order the model sent them
    except (TypeError, ValueError, RecursionError):  # an integer too long to print, a cycle
        text = f"<{type(shown).__name__}>"
    line = f"{shown_name(name)}({shorten(text, limit)})"
    return line if call_id is None else f"{line} #{shown_call_id(call_id)}"


def pointer_for(path: tuple | list) -> str:
    """A path of keys and indexes as a JSON path: ``$.lines[0].qty`` (keys cut)."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{echo_text(part)}"
    return out


#: A lone surrogate: a half of a UTF-16 pair that JSON text may spell (``"\\ud83d"``) but no UTF-8 text can hold.
SURROGATE = re.compile("[\ud800-\udfff]")


def echo_text(value: Any, limit: int = MAX_ECHO_CHARS) -> str:
    """``value`` as short, encodable text (a non-``str`` shown by its type only)."""
    if not isinstance(value, str):
        return f"<{type(value).__name__}>"
    return SURROGATE.sub("\ufffd", shorten(value, limit))


def echo_value(value: Any, limit: int = MAX_ECHO_CHARS) -> Any:
    """``value`` as an error's ``received`` may hold it: small JSON values as they are, else cut."""
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


REDACTED = "[redacted]"
#: Names that give a secret away wherever they appear inside a field name (``api_token``, ``clientSecret``).
SECRET_NAME = re.compile(r"token|api[_-]?key|password|passwd|secret|authorization|credential|private[_-]?key|cookie",
                         re.IGNORECASE)
#: Words that name a secret only as a whole part of a field name: ``pin`` and ``pin_code``, never ``pinned``.
SECRET_WORDS = frozenset({"pwd", "pass", "passphrase", "passcode", "auth", "bearer", "jwt", "otp", "totp", "pin",
                          "ssn", "signature", "cvv", "cvc", "accesskey", "sessionid", "sshkey", "cardnumber"})
#: Two parts in a row that name a secret together: ``access_key``, ``sessionId``, ``SSHKey``, ``card-number``.
SECRET_PAIRS = frozenset({("access", "key"), ("session", "id"), ("ssh", "key"), ("card", "number")})
#: How a field name splits into parts: at ``_``, ``-``, ``.`` (any non-alphanumeric) and at camelCase humps.
_NAME_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_parts(name: str) -> list[str]:
    """``"sessionId"`` -> ``["session", "id"]``; ``"SSH_key"`` -> ``["ssh", "key"]``."""
    return [part.lower() for part in _NAME_PARTS.findall(name)]


def is_secret_name(name: str, secret_fields: Iterable[str] = ()) -> bool:
    """True when a field called ``name`` must never be shown; a name over 200 characters is, unread
    (a hostile key costs no more, and what it names stays hidden)."""
    return name in secret_fields or len(name) > 200 or _looks_secret(name)


@functools.lru_cache(maxsize=16_384)   # an answer repeats its field names: each is judged once
def _looks_secret(name: str) -> bool:
    if SECRET_NAME.search(name):
        return True
    parts = name_parts(name)
    return any(p in SECRET_WORDS for p in parts) or any(pair in SECRET_PAIRS for pair in zip(parts, parts[1:]))


def redact(value: Any, secret_fields: Iterable[str] = (), _depth: int = 0) -> Any:
    """A copy of ``value`` with every secret field's value ``REDACTED``."""
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


def summarize(arguments: Any, secret_fields: Iterable[str] = (), limit: int = MAX_SUMMARY_CHARS) -> str:
    """A redacted one-line summary of arguments (text that is not JSON: only its length)."""
    from toolkit._schema import parse_arguments

    if isinstance(arguments, (str, bytes, bytearray)):
        parsed, _errors = parse_arguments(arguments)
        if parsed is None:
            return f"<unparsed arguments, {len(arguments)} chars>"
        arguments = parsed
    if not isinstance(arguments, dict):
        return f"<{type(arguments).__name__} arguments>"
    redacted = redact(arguments, secret_fields)
    try:
        try:
            text = json.dumps(redacted, sort_keys=True, default=repr)
        except TypeError:  # keys of mixed types cannot be sorted
            text = json.dumps(redacted, default=repr)
    except (TypeError, ValueError, RecursionError):   # not JSON at all: not summarised
        return f"<arguments that are not JSON, {len(arguments)} fields>"
    return shorten(scrub(text, secret_values(arguments, secret_fields)), limit)


#: Shapes of credentials worth masking even where no field name gave them away.
TOKEN_SHAPES = re.compile(r"\bsk-[A-Za-z0-9_-]{6,}|\bBearer\s+[A-Za-z0-9._~+/=-]{6,}|\bgh[pousr]_[A-Za-z0-9]{10,}"
                          r"|\bAKIA[0-9A-Z]{12,}|\bxox[abpr]-[A-Za-z0-9-]{6,}")


def secret_values(arguments: Any, secret_fields: Iterable[str] = ()) -> set[str]:
    """Every text value held by a secret field (at any depth) in ``arguments``."""
    fields = frozenset(secret_fields)
    found: set[str] = set()

    def walk(value: Any, depth: int, secret: bool) -> None:   # secret: under a secret-named field
        if depth > MAX_DEPTH:
            return
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, depth + 1, secret or (isinstance(k, str) and is_secret_name(k, fields)))
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, depth + 1, secret)
        elif secret and value is not None and not isinstance(value, bool):
            found.add(value if isinstance(value, str) else _text_of(value))

    walk(arguments, 0, False)
    return {s for s in found if len(s) >= 4}


def _text_of(value: Any) -> str:
    try:
        return str(value)
    except ValueError:   # an integer too long to print: nothing of it can be found in text either
        return ""


def spellings(secrets: Iterable[str]) -> list[str]:
    """Every way text may spell any of ``secrets`` (as is, JSON-escaped, ASCII or not, and as
    Python's ``repr``/``ascii``), longest first: worked out once, then masked in every text."""
    forms = {form for secret in secrets for form in (
        secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1], ascii(secret)[1:-1])}
    return sorted((form for form in forms if form), key=len, reverse=True)


def scrub(text: str, values: Iterable[str], forms: list[str] | None = None) -> str:
    """Mask every known secret value (``forms``: their ``spellings``) and credential shape."""
    if not isinstance(text, str):
        return text
    for form in spellings(values) if forms is None else forms:
        text = text.replace(form, REDACTED)
    text = TOKEN_SHAPES.sub(REDACTED, text)
    return text if text.isascii() else SURROGATE.sub("\ufffd", text)


def scrub_value(value: Any, values: Iterable[str]) -> Any:
    """``value`` with every text inside it scrubbed (keys too), and any number equal to a secret masked."""
    values = values if isinstance(values, (set, frozenset)) else set(values)
    forms = spellings(values)

    def clean(value: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            return "[too deep]"
        if isinstance(value, str):
            return scrub(value, values, forms)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            text = _text_of(value)
            if not text:   # an integer too long to print: even repr() of what holds it would raise
                return f"<integer of {value.bit_length()} bits>"
            return REDACTED if text in values else value
        if isinstance(value, Mapping):
            return {clean(k, depth + 1): clean(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            return [clean(v, depth + 1) for v in value]
        return value
    return clean(value, 0)


def scrub_error(error: ToolError, secrets: Iterable[str]) -> ToolError:
    """``error`` with every text it holds (pointer, message, expected, received, hint, nested ones too) scrubbed."""
    texts = [error.pointer, error.message, error.expected, error.received, error.hint]
    return ToolError(error.code, *scrub_value(texts, secrets), error.retryable)


def scrubbed_errors(errors: tuple[ToolError, ...], arguments: Any, secret_fields: Iterable[str]) -> tuple[ToolError, ...]:
    """``errors`` with every secret ``arguments`` carry scrubbed out (the same tuple if none)."""
    if not errors:
        return errors
    secrets = secret_values(arguments, secret_fields) if arguments is not None else set()
    return tuple(scrub_error(e, secrets) for e in errors)


def redact_arguments(arguments: Any, secret_fields: Iterable[str] = ()) -> Any:
    """A copy of arguments *as received*, safe to keep, same shape (itself if nothing is masked)."""
    if isinstance(arguments, (bytes, bytearray)):
        try:
            arguments = bytes(arguments).decode("utf-8")
        except UnicodeDecodeError:
            return f"<{len(arguments)} bytes that are not UTF-8>"
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_BYTES:
            return f"<{len(arguments)} characters of arguments, over the cap>"
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):
            masked = TOKEN_SHAPES.sub(REDACTED, _QUOTED_FIELD.sub(_mask_field, arguments))
            return arguments if masked == arguments else masked
        safe = redact_arguments(parsed, secret_fields)
        return arguments if safe is parsed else json.dumps(safe, ensure_ascii=False)
    try:
        if not isinstance(arguments, (dict, list, tuple)):
            return scrub_value(arguments, ())
        secrets = secret_values(arguments, secret_fields)
        safe = scrub_value(redact(arguments, secret_fields), secrets)
        return arguments if safe == arguments else safe
    except Exception:     # a mapping whose items() raise (no model sends one): none of it is shown
        return f"<{type(arguments).__name__} that cannot be read>"


#: ``"name": value`` inside JSON-like text, for text that does not parse (a cut stream, a typo).
_QUOTED_FIELD = re.compile(r'"([^"\\]{1,64})"(\s*:\s*)("(?:[^"\\]|\\.)*"?|[^\s,}\]]+)')   # linear: keys hold no escapes


def _mask_field(match: re.Match) -> str:
    name, colon, _value = match.groups()
    return f'"{name}"{colon}"{REDACTED}"' if is_secret_name(name) else match.group(0)


def log_copy(attempt: Any, secret_fields: Iterable[str]) -> Any:
    """``attempt`` with its call's and its verdict's arguments redacted (itself when nothing is)."""
    raw, parsed = attempt.call.arguments, attempt.verdict.arguments
    arguments = redact_arguments(raw, secret_fields)
    safe_parsed = arguments if parsed is raw else None if parsed is None else redact_arguments(parsed, secret_fields)
    if arguments is raw and safe_parsed is parsed:
        return attempt
    call = replace(attempt.call, arguments=arguments)
    return replace(attempt, call=call, verdict=replace(attempt.verdict, call=call, arguments=safe_parsed))
