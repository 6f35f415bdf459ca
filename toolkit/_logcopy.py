"""Chapters 01 and 07: the copy of an attempt the host's log keeps: nothing in it may show a secret.

The log is read by people and tools that must not see a secret, so it keeps the request with its arguments
redacted (secret fields masked, repeated secrets scrubbed), and the verdict's parsed arguments redacted too.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from toolkit._show import redact_arguments


def log_copy(attempt: Any, secret_fields: Iterable[str]) -> Any:
    """``attempt`` with its call's arguments and its verdict's parsed ones redacted (itself when nothing is)."""
    raw, parsed = attempt.call.arguments, attempt.verdict.arguments
    arguments = redact_arguments(raw, secret_fields)
    safe_parsed = arguments if parsed is raw else None if parsed is None else redact_arguments(parsed, secret_fields)
    if arguments is raw and safe_parsed is parsed:
        return attempt
    call = replace(attempt.call, arguments=arguments)
    return replace(attempt, call=call, verdict=replace(attempt.verdict, call=call, arguments=safe_parsed))
