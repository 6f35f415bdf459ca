"""Chapters 01 and 08: the completion rule: a call may run only after its completion event.

Until a stream (or a response) says it is complete, every call in it is an
unfinished fragment. The stop reason decides, for the whole round at once:

* a *complete* reason (``tool_calls``, ``tool_use``, ...) lets each call go on
  to strict parsing and, if it parses, to the host;
* a *cut* reason (``length``, ``max_tokens``, ...) refuses every call, even
  one whose JSON happens to look finished;
* no reason at all, or one nobody knows, is treated as cut.

``COMPLETE`` and ``CUT`` are the one table of stop reasons; the stream
assembler and the whole-response readers both read it. A refused call becomes
a ``Refusal``: it never reaches an executor, yet still answers its call id,
and keeps the raw arguments it arrived with, so the assistant turn that
carried it can be written back unchanged beside its result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit.kernel.call import ToolError
from toolkit.kernel.call import FailureClass, Status, ToolResult

__all__ = ["COMPLETE", "CUT", "completion_problem", "is_cut", "Refusal"]

#: Stop reasons that mean "the calls are complete" (OpenAI, Anthropic, and the course's own).
COMPLETE = frozenset({"tool_calls", "stop", "function_call", "tool_use", "end_turn", "stop_sequence", "complete"})
#: Stop reasons that mean "cut before the end": every call in the round is refused.
CUT = frozenset({"length", "max_tokens", "content_filter", "refusal", "model_context_window_exceeded"})


def completion_problem(stop_reason: Any) -> ToolError | None:
    """None when ``stop_reason`` completes the round; otherwise why every call in it is refused."""
    if isinstance(stop_reason, str) and stop_reason in COMPLETE:
        return None
    if stop_reason is None:
        return stream_incomplete("the stream ended without a completion signal", "no stop reason")
    if is_cut(stop_reason):
        return stream_incomplete(f"the stream stopped at {stop_reason!r} before the calls were complete",
                                 stop_reason, "nothing was run; ask again with a larger token limit "
                                              "or smaller arguments")
    return stream_incomplete(f"unrecognised stop reason {stop_reason!r}; treated as incomplete", stop_reason)


def is_cut(stop_reason: Any) -> bool:
    """True when the reason says the output was cut before the end (``length``, ``max_tokens``, ...)."""
    return isinstance(stop_reason, str) and stop_reason in CUT


def stream_incomplete(message: str, received: Any = None, hint: str = "") -> ToolError:
    """The error for a stream that never said it was complete."""
    return ToolError("stream_incomplete", "$", message, expected="a completion signal", received=received,
                     hint=hint or "nothing was run; ask for the calls again")


@dataclass(frozen=True)
class Refusal:
    """A call that will not reach an executor, and every reason why.

    It still answers its call id: ``result`` is the rejected ``ToolResult`` to
    send back, so the conversation stays complete. ``call_id`` is None only
    when there is no call to answer (a broken stream before any call began, or
    a second call reusing an id that the first one already answers).
    """

    call_id: str | None
    name: str | None
    errors: tuple[ToolError, ...]
    index: int | None = None
    received_chars: int = 0
    arguments: Any = field(default=None, repr=False)   # as received, to echo the call back; never printed

    @property
    def code(self) -> str:
        return self.errors[0].code if self.errors else "rejected"

    @property
    def result(self) -> ToolResult | None:
        if self.call_id is None:
            return None
        return ToolResult(self.call_id, Status.REJECTED, failure_class=FailureClass.SCHEMA, reason=self.code,
                          errors=self.errors)

    def line(self) -> str:
        """e.g. ``refused read_file #call_2: $: the response stopped at length ...``."""
        who = f"{self.name or '?'} #{self.call_id or '-'}"
        return f"refused {who}: " + "; ".join(e.line() for e in self.errors)
