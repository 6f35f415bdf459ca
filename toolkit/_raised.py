"""Chapter 01: what the host answers when a tool raises: a failed call, never a crashed host.

A ``ToolFailure`` keeps its status, class, reason and error, scrubbed of the call's secrets; any
other exception is ``failed`` (``execution``): the effect may be partial, so it is not the
model's to retry."""
from __future__ import annotations

from typing import Any

from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolError, ToolFailure, ToolResult
from toolkit._show import scrub, scrub_error, secret_values


def raised_result(call: ToolCall, contract: Any, arguments: Any, exc: Exception) -> ToolResult:
    """The result for ``call`` whose implementation raised ``exc``."""
    if not isinstance(exc, ToolFailure):
        error = ToolError("execution_failed", f"tool {call.name}", f"the tool raised {type(exc).__name__}",
                          hint="the effect may be partial: check the execution record", retryable=False)
        return ToolResult(call.call_id, Status.FAILED, failure_class=FailureClass.EXECUTION,
                          reason="execution_failed", errors=(error,))
    secrets = secret_values(arguments, contract.secret_fields)
    reason, message = scrub(str(exc.reason), secrets), scrub(str(exc.message), secrets)
    if isinstance(exc.error, ToolError):   # the tool built the error itself: keep its shape, scrub it all
        error = scrub_error(exc.error, secrets)
    else:
        error = ToolError(reason, f"tool {call.name}", message, retryable=exc.status is Status.RECOVERABLE_FAILURE)
    return ToolResult(call.call_id, exc.status, failure_class=exc.failure_class, reason=reason, errors=(error,))
