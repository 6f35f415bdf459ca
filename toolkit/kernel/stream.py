"""Chapters 01 and 08: the completion rule: a call may run only after its completion event.

    runnable(call) = 1{stop_reason ∈ COMPLETE} · 1{its arguments parse}      (a cut or missing reason: 0 for all)

Until a stream (or a response) says it is complete, every call in it is an unfinished fragment. A *complete*
stop reason (``tool_calls``, ``tool_use``, ...) lets each call go on to strict parsing; a *cut* one
(``length``, ``max_tokens``, ...) refuses every call, even one whose JSON looks finished; none at all, or an
unknown one, counts as cut. ``COMPLETE`` and ``CUT`` are the one table of stop reasons. A refused call is a
``Refusal``: it never reaches an executor, yet answers its call id and keeps its raw arguments, so the turn
that carried it can be written back unchanged. ``Assembler.finish`` is the rule's real path: nothing is
parsed, let alone run, before it. What a chunk can do wrong on the way in is ``toolkit._stream_guards``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit._ids import IdMap, duplicate_call_id_error, id_key, shared_ids
from toolkit._preview import Preview
from toolkit._schema import MAX_ARGUMENT_BYTES
from toolkit._stream_guards import (Buffer, answered_once, capped_errors, parsed_call, preview_of,
                                    stream_incomplete, take)
from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolError, ToolResult

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


@dataclass(frozen=True)
class Refusal:
    """A call that will not reach an executor, and every reason why; ``result`` still answers its call id.

    ``call_id`` is None only when there is nothing to answer (a stream broken before any call began, or a
    second call reusing an id the first one answers)."""

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


class Assembler:
    """Collects streamed fragments into calls, one buffer per call index; ``finish`` is the completion signal.

    With ``needs_close=True`` (Anthropic) a call is complete only once ``close(index)`` closed its block; with
    ``envelope=True`` index 0 carries a whole ``{"name", "arguments"}``. ``max_chars`` caps each call's
    argument text; past a cap the stream is *broken* (``broken`` says why) and every call in it refused.
    """

    def __init__(self, ids: IdMap | None = None, vendor: str = "stream", *, max_chars: int | None = None,
                 needs_close: bool = False, envelope: bool = False):
        self.ids = ids if ids is not None else IdMap()
        self.vendor = vendor
        self.max_chars = max_chars if max_chars is not None else MAX_ARGUMENT_BYTES
        self.needs_close, self.envelope = needs_close, envelope
        self.buffers: dict[int, Buffer] = {}
        self.broken: ToolError | None = None
        self.finished = False

    # -- the rule: nothing is parsed, let alone run, before the completion signal
    def finish(self, stop_reason: str | None) -> list[ToolCall | Refusal]:
        """The completion signal (or its absence): every call becomes a ``ToolCall`` or a ``Refusal``."""
        if self.finished:
            return []
        if self.broken is not None:
            return self.fail(self.broken)
        self.finished = True
        problem = completion_problem(stop_reason)          # a cut or unknown reason: every call is refused
        shared = shared_ids(buf.vendor_id for buf in self.buffers.values())
        out: list[ToolCall | Refusal] = []
        for i, buf in sorted(self.buffers.items()):
            errors = [problem] if problem else []
            if id_key(buf.vendor_id) in shared:
                errors.append(duplicate_call_id_error(buf.vendor_id, f"$[{i}].id"))
            errors += buf.errors
            if not errors:                                 # complete: only now is the text parsed
                name, arguments, errors = parsed_call(buf, self.needs_close, self.envelope)
            out.append(self._refuse(buf, errors) if errors
                       else ToolCall(name, arguments, self._call_id(buf) or self.ids.mint()))
        return answered_once(out)

    def fail(self, error: ToolError) -> list[Refusal]:
        """The stream broke: refuse every call (or, if none began, report the stream itself)."""
        if self.finished:
            return []
        self.finished = True
        errors = [error] + ([self.broken] if self.broken is not None and self.broken is not error else [])
        refusals = [self._refuse(self.buffers[i], errors) for i in sorted(self.buffers)]
        return answered_once(refusals) or [Refusal(None, None, tuple(errors))]

    def _refuse(self, buf: Buffer, errors: list[ToolError]) -> Refusal:
        call_id = self._call_id(buf) or self.ids.mint()
        return Refusal(call_id, buf.name, capped_errors(errors, f"$[{buf.index}]"), buf.index, buf.size,
                       arguments="".join(buf.parts))

    def _call_id(self, buf: Buffer) -> str | None:
        """The toolkit's id for the vendor id assembled so far (minted once it is known, again if it grew)."""
        if buf.vendor_id is not None and buf.minted_for != buf.vendor_id:
            buf.call_id, buf.minted_for = self.ids.internal(self.vendor, buf.vendor_id), buf.vendor_id
        return buf.call_id

    # -- fragments in, progress out (a preview is never a call)
    def add(self, index: int, *, call_id: Any = None, name: Any = None, arguments: Any = None) -> None:
        """One chunk's worth of a call (``toolkit._stream_guards.take``: ids and names sent in pieces are joined,
        changed ones refused). Never raises on bad data: problems are kept for ``finish``."""
        if self.finished:
            raise RuntimeError("the round is finished; start a new Assembler")
        if self.broken is None:
            self.broken = take(self.buffers, index, call_id, name, arguments, self.max_chars)

    def close(self, index: int) -> None:
        """The block for ``index`` is complete (Anthropic's ``content_block_stop``)."""
        buf = self.buffers.get(index) if type(index) is int else None
        if buf is not None:
            buf.closed = True

    def preview(self, index: int) -> Preview | None:
        """Progress for one call (``toolkit._preview``): the text so far, secrets masked, and the keys seen."""
        buf = self.buffers.get(index) if type(index) is int else None
        return None if buf is None else preview_of(buf, self._call_id(buf))

    def previews(self) -> list[Preview]:
        """A preview of every call still arriving, in index order."""
        return [self.preview(i) for i in sorted(self.buffers)]
