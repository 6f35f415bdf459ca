"""Chapter 05: what a ledger does after an effect ran: record it, release the key, or keep it pending.

    run_effect(f, x) = ("done", y)      f returned y (or a result that says it happened)
                       ("release", ·)   f says nothing happened: the key is free again
                       ("pending", ·)   nobody knows whether it happened: keep the claim

A raised ``ToolFailure`` is the tool's own word; any other exception leaves the outcome unknown.
Failure text is scrubbed of the call's secret values before a ledger stores it."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable

from toolkit.kernel.call import Status, ToolError, ToolFailure, ToolResult
from toolkit._show import scrub, secret_values


def run_effect(effect: Callable[[Any], Any], arguments: Any,
               secret_fields: Iterable[str] = ()) -> tuple[str, Any, ToolError | None]:
    """Run an external effect once on parsed ``arguments``: ``(verdict, value, error)``, never raising."""
    try:
        value = effect(arguments)
    except ToolFailure as failure:
        error = _mask_error(ToolError(failure.reason, "$.idempotency_key", failure.message,
                                      retryable=failure.status is Status.RECOVERABLE_FAILURE),
                            secret_values(arguments, secret_fields))
        return ("pending" if failure.status is Status.TIMEOUT else "release"), None, error
    except Exception as exc:  # the effect may or may not have happened
        return "pending", None, ToolError("outcome_unknown", "$.idempotency_key",
                                          f"the effect raised {type(exc).__name__}; its outcome is unknown",
                                          retryable=False)
    if isinstance(value, ToolResult):
        if value.errors or value.reason:
            secrets = secret_values(arguments, secret_fields)
            reason = scrub(value.reason, secrets) if isinstance(value.reason, str) else value.reason
            errors = tuple(_mask_error(e, secrets) if isinstance(e, ToolError) else e for e in value.errors)
            value = replace(value, reason=reason, errors=errors)
        if value.status is Status.TIMEOUT:
            return "pending", value, None
        if value.status in (Status.REJECTED, Status.RECOVERABLE_FAILURE, Status.CANCELLED):
            return "release", value, None
    return "done", value, None


def _mask_error(error: ToolError, secrets: Iterable[str]) -> ToolError:
    """``error`` with every secret value (and credential-shaped text) masked in its free-text fields."""
    values = tuple(secrets)
    cleaned = {name: scrub(getattr(error, name), values)
               for name in ("code", "message", "expected", "received", "hint") if isinstance(getattr(error, name), str)}
    return replace(error, **cleaned)
