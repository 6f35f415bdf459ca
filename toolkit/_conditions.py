"""Chapter 02: running a contract's conditions so that a broken one refuses and never lets a call through.

Every answer but ``True`` (an exception, ``None``, a ``ToolError``) becomes a structured error."""
from __future__ import annotations

from typing import Any, Iterable

from toolkit.kernel.call import ToolError


def condition_errors(conditions: Iterable[Any], code: str, *inputs: Any) -> list[ToolError]:
    """One ``ToolError`` (with ``code``) for each condition that does not answer ``True`` for these inputs."""
    errors: list[ToolError] = []
    for condition in conditions:
        try:
            verdict = condition.predicate(*inputs)
        except Exception as exc:  # a buggy condition refuses; it never lets a call through
            verdict = ToolError(code, "$", f"{condition.name} could not be checked ({type(exc).__name__})",
                                expected=condition.description, received="error", retryable=False)
        if isinstance(verdict, ToolError):
            errors.append(verdict)
        elif verdict is not True:   # False, None, anything else: the condition's own text says what it needed
            pointer = f"$.{condition.field}" if condition.field else "$"
            errors.append(ToolError(code, pointer, f"{condition.name} not met (requires: {condition.description})",
                                    expected=condition.description, received="not satisfied"))
    return errors
