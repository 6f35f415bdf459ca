"""Chapter 01: exercise 01's given parts: the shape check and the two results a read_file executor returns.

The student writes the executor's order (a complete call, then its shape, then
its path, then the read) and the stream's gate; what is plumbing is here:

* ``shape_errors(arguments)``: why ``arguments`` is not ``{"path": <string>}``,
  one ``ToolError`` per problem (empty when the shape is right). It judges shape
  only: ``/etc/passwd`` is a string, so its shape is right;
* ``rejected(failure_class, errors, call_id)``: a refusal under the call's id,
  its reason the first error's code;
* ``succeeded(call, data)``: the success result for the bytes read, with the
  evidence anyone can recompute (their size and SHA-256).
"""
from __future__ import annotations

import hashlib
from typing import Any, Sequence

from toolkit.kernel import FailureClass, Status, ToolCall, ToolError, ToolResult


def shape_errors(arguments: Any) -> list[ToolError]:
    """Why ``arguments`` is not ``{"path": <string>}``; empty when it is."""
    if not isinstance(arguments, dict):
        return [ToolError("not_an_object", "$", "arguments must be a JSON object", expected="object",
                          received=type(arguments).__name__)]
    errors = [ToolError("unexpected_property", f"$.{name}", "unexpected property", expected=["path"], received=name)
              for name in sorted(map(str, arguments)) if name != "path"]
    if "path" not in arguments:
        errors.append(ToolError("missing_required", "$.path", "required property missing", expected="string"))
    elif not isinstance(arguments["path"], str):
        errors.append(ToolError("wrong_type", "$.path", "path must be a string", expected="string",
                                received=type(arguments["path"]).__name__))
    return errors


def rejected(failure_class: FailureClass, errors: Sequence[ToolError], call_id: str) -> ToolResult:
    """A refusal of the call ``call_id``: its class, the first error's code as reason, and every error."""
    return ToolResult(call_id, Status.REJECTED, failure_class=failure_class, reason=errors[0].code,
                      errors=tuple(errors))


def succeeded(call: ToolCall, data: bytes) -> ToolResult:
    """The success of a read of ``call``'s path that gave ``data``: the text, and the size and SHA-256 of the bytes."""
    return ToolResult(call.call_id, Status.SUCCEEDED,
                      output={"path": call.arguments["path"], "content": data.decode("utf-8", errors="replace")},
                      evidence={"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
