"""Chapter 05: a ledger's answer as a model sees it: the ``ToolResult`` for a call id.

``Answer.to_result`` (``toolkit.kernel.ledger``) is ``answer_result``: the tool's own result
re-addressed, the stored output as succeeded, or the refusal's status and failure class."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from toolkit.kernel.call import FailureClass, Status, ToolResult

#: A refusal's ledger status -> the status and failure class of the result a model is shown.
RESULT_STATUS = {
    "conflict": (Status.REJECTED, FailureClass.PRECONDITION),
    "invalid": (Status.REJECTED, FailureClass.SCHEMA),
    "in_progress": (Status.RECOVERABLE_FAILURE, FailureClass.EXECUTION),
    "pending": (Status.TIMEOUT, FailureClass.TIMEOUT),
    "failed": (Status.FAILED, FailureClass.EXECUTION),
}


def answer_result(answer: Any, call_id: str) -> ToolResult:
    """The ``ToolResult`` a model is shown for ``answer`` (a ``toolkit.kernel.Answer``), paired with ``call_id``."""
    if isinstance(answer.result, ToolResult):  # the tool's own result says it best
        return replace(answer.result, call_id=call_id)
    if answer.ok:
        return ToolResult(call_id, Status.SUCCEEDED, output=answer.result,
                          evidence={"idempotency_key": answer.key, "ledger": answer.status.value})
    error, status_name = answer.error, answer.status.value
    status, failure_class = RESULT_STATUS[status_name]
    if status_name == "failed" and error is not None and error.retryable:
        status = Status.RECOVERABLE_FAILURE
    if status_name == "in_progress" and error is not None and not error.retryable:
        status, failure_class = Status.TIMEOUT, FailureClass.TIMEOUT   # nobody will finish it: unknown
    return ToolResult(call_id, status, failure_class=failure_class, errors=(error,) if error else (),
                      reason=error.code if error else status_name)

