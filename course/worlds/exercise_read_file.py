"""Chapter 01: exercise 01's given parts: the two results a read_file executor returns.

The student writes the executor's order (a complete call, then its shape, then
its path, then the read) and the stream's gate; what is plumbing is here:

* ``rejected(failure_class, errors, call_id)``: a refusal under the call's id,
  its reason the first error's code;
* ``succeeded(call, data)``: the success result for the bytes read, with the
  evidence anyone can recompute (their size and SHA-256).
"""
from __future__ import annotations

import hashlib
from typing import Sequence

from toolkit.kernel import FailureClass, Status, ToolCall, ToolError, ToolResult


def rejected(failure_class: FailureClass, errors: Sequence[ToolError], call_id: str) -> ToolResult:
    """A refusal of the call ``call_id``: its class, the first error's code as reason, and every error."""
    errors = tuple(errors)
    return ToolResult(call_id, Status.REJECTED, failure_class=failure_class,
                      reason=errors[0].code if errors else "rejected", errors=errors)


def succeeded(call: ToolCall, data: bytes) -> ToolResult:
    """The success of a read of ``call``'s path that gave ``data``: the text, and the size and SHA-256 of the bytes."""
    return ToolResult(call.call_id, Status.SUCCEEDED,
                      output={"path": call.arguments["path"], "content": data.decode("utf-8", errors="replace")},
                      evidence={"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
