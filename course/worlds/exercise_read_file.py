"""Chapter 01: exercise 01's given results, and the one-line verdict of every exercise's checks.

The student writes the executor's order (a complete call, then its shape, then
its path, then the read) and the stream's gate; what is plumbing is here:

* ``rejected(failure_class, errors, call_id)``: a refusal under the call's id,
  its reason the first error's code;
* ``succeeded(call, data)``: the success result for the bytes read, with the
  evidence anyone can recompute (their size and SHA-256).

Both take what a student plausibly hands them (one error instead of a list, a
tuple, ``None``, a class named by its text, text instead of bytes, the
``FileRead`` itself) and never raise from inside: a wrong result is the
check's to explain.

Every exercise's check cells run inside ``with checking("part 1: name"):``.
A check that fails, and a part not written yet (the stub's
``NotImplementedError``, a name the student has not defined), end the cell with
a ``CheckFailed``: one line that says what is wrong, never a traceback.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
from typing import Any, Iterator

from toolkit.kernel import FailureClass, Status, ToolError, ToolResult


class CheckFailed(AssertionError):
    """A check's verdict: IPython shows its one line (``_render_traceback_``), not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"Check failed: {self}"]


@contextmanager
def checking(part: str) -> Iterator[None]:
    """Run a check cell's body; whatever stops it becomes one ``CheckFailed`` line on ``part``."""
    try:
        yield
    except CheckFailed:
        raise
    except AssertionError as exc:
        raise CheckFailed(f"{part}: {exc}") from None
    except NotImplementedError:
        raise CheckFailed(f"{part} is not done yet: write the cell that still says `raise "
                          "NotImplementedError()`, run it, then run this check again") from None
    except NameError as exc:
        missing = getattr(exc, "name", None) or exc
        raise CheckFailed(f"{part} is not done yet: {missing} is not defined; run the cells above "
                          "this one (and finish the ones you were asked to write)") from None
    except Exception as exc:
        raise CheckFailed(f"{part}: your code raised {type(exc).__name__}: {exc}") from None


def _failure_class(value: Any) -> Any:
    """A ``FailureClass`` from itself, its value or name (``"schema"``, ``"SCHEMA"``) or as is."""
    if isinstance(value, FailureClass) or not isinstance(value, str):
        return value
    for klass in FailureClass:
        if value.strip().lower() in (klass.value, klass.name.lower()):
            return klass
    return value


def _errors(errors: Any) -> tuple[ToolError, ...]:
    """One error, several (any iterable), none (``None``); a text becomes an error that says it."""
    if errors is None:
        return ()
    if isinstance(errors, (ToolError, str)):
        errors = (errors,)
    try:
        items = tuple(errors)
    except TypeError:
        items = (errors,)
    return tuple(e if isinstance(e, ToolError) else ToolError("rejected", "$", str(e))
                 for e in items)


def rejected(failure_class: Any, errors: Any, call_id: str) -> ToolResult:
    """A refusal of the call ``call_id``: its class, the first error's code as reason, and every error."""
    errors = _errors(errors)
    return ToolResult(call_id, Status.REJECTED, failure_class=_failure_class(failure_class),
                      reason=errors[0].code if errors else "rejected", errors=errors)


def _bytes(data: Any) -> bytes:
    """``data`` as bytes: text as UTF-8, a ``FileRead`` its ``.data``, None as b""."""
    data = getattr(data, "data", data)
    if data is None:
        return b""
    if isinstance(data, (str, int, float)):
        return str(data).encode("utf-8")
    try:
        return bytes(data)
    except (TypeError, ValueError):
        return str(data).encode("utf-8")


def succeeded(call: Any, data: Any) -> ToolResult:
    """The success of a read of ``call``'s path that gave ``data``: the text, and the size and SHA-256 of the bytes."""
    data = _bytes(data)
    arguments = getattr(call, "arguments", None)
    path = arguments.get("path") if isinstance(arguments, dict) else None
    return ToolResult(getattr(call, "call_id", None), Status.SUCCEEDED,
                      output={"path": path, "content": data.decode("utf-8", errors="replace")},
                      evidence={"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
