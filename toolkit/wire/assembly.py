"""Chapters 01 and 08: streamed fragments in, complete calls (or refusals) out.

A streamed call arrives in pieces. Until the completion signal, every piece
is an unfinished fragment: ``{"path": "src/co`` says *some* file under
``src/``, not which one. ``Assembler`` keeps three promises:

1. **Nothing partial runs.** Arguments are parsed (strictly, by
   ``toolkit._schema.parse_arguments``) only in ``finish``, and only when
   the stop reason completes the round (``toolkit.kernel.stream``). A
   stream that was cut, stopped at a token limit, or broke on the way gives a
   ``Refusal`` with a structured error, never a ``ToolCall``.
2. **A preview is not a call.** ``preview`` hands out a ``Preview``
   (``toolkit.wire.preview``), a different type from ``ToolCall``.
3. **Linear time.** One buffer per call index; fragments are appended to a
   list and joined once. Nothing re-reads the whole buffer per fragment.

The assembler is vendor-neutral; ``toolkit.wire.vendor_streams`` reads each
vendor's event stream and feeds it. ``SKETCH_FRAMES`` are the four pieces the
chapter's sketch draws; they arrive in frames t1..t3 (t2 brings the second and
third) and t4 is the completion event. ``frames`` replays them.
"""
from __future__ import annotations

from typing import Any, Iterable

from toolkit import _schema as schema
from toolkit._caps import MAX_CALL_ID_CHARS, MAX_ERRORS_PER_CALL, MAX_NAME_CHARS, MAX_OPEN_CALLS
from toolkit.kernel import ToolCall
from toolkit.kernel import ToolError
from toolkit.kernel import Refusal, completion_problem
from toolkit.kernel.stream import stream_incomplete
from toolkit.wire import IdMap
from toolkit.wire.ids import id_key
from toolkit.wire import KeyScanner, Preview
from toolkit.wire.sse import stream_invalid
from toolkit._ids import duplicate_call_id_error
from toolkit._stream_guards import (answered_once, assemble_field, capped_errors, field_too_long, over_cap,
                                    shown_value)

#: The chapter's sketch, frame by frame. The drawing elides the glue between its
#: two rows (``, "arguments": `` and the closing brace); here it is written out,
#: so the four pieces join into one call: ``{"name": ..., "arguments": {...}}``.
SKETCH_FRAMES = ('{ "name": "read_', 'file", "arguments": ', '{ "path": "src/co', 'nfig.ts" } }')


class _Buffer:
    __slots__ = ("index", "vendor_id", "call_id", "minted_for", "name", "parts", "size", "errors", "closed",
                 "scanner", "seen", "keys")

    def __init__(self, index: int):
        self.index = index
        self.vendor_id: Any = None          # the vendor's id as assembled so far (text or an integer)
        self.call_id: str | None = None     # the toolkit's id, minted when first needed
        self.minted_for: Any = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.size = 0
        self.errors: list[ToolError] = []
        self.closed = False
        self.scanner: KeyScanner | None = None
        self.seen = 0
        self.keys: tuple[str, ...] = ()


class Assembler:
    """Collects streamed fragments into calls, one buffer per call index.

    ``add(index, call_id=..., name=..., arguments=...)`` takes whatever a
    chunk carried. The id and the name are assembled by one rule
    (``toolkit._stream_guards.assemble_field``): a server that repeats them in every
    chunk changes nothing, one that sends them in pieces is joined, one that
    changes them once the arguments have begun breaks the call.
    ``finish(stop_reason)`` is the completion signal: only then is each
    buffer joined and parsed. With ``needs_close=True`` (Anthropic) a call is
    complete only if its block was also closed with ``close(index)``.
    With ``envelope=True`` (the chapter's sketch) the text of index 0 is a whole
    ``{"name": ..., "arguments": {...}}`` object.

    ``max_chars`` caps each call's argument text (default: the schema's cap);
    a call that passes it is refused at once and its text is dropped. A stream
    that opens more than ``MAX_OPEN_CALLS`` calls, sends a name or an id past
    ``MAX_NAME_CHARS`` / ``MAX_CALL_ID_CHARS``, gives one call more than
    ``MAX_ERRORS_PER_CALL`` problems, or sends an index that is not a
    non-negative integer is *broken* (``broken`` says why): everything it
    sends after that is ignored and every call in it is refused. Two calls
    sending the same id are both refused (``duplicate_call_id``); the first
    refusal answers the id.
    """

    def __init__(self, ids: IdMap | None = None, vendor: str = "stream", *, max_chars: int | None = None,
                 needs_close: bool = False, envelope: bool = False):
        self.ids = ids if ids is not None else IdMap()
        self.vendor = vendor
        self.max_chars = max_chars if max_chars is not None else schema.MAX_ARGUMENT_BYTES
        self.needs_close = needs_close
        self.envelope = envelope
        self.buffers: dict[int, _Buffer] = {}
        self.broken: ToolError | None = None
        self.finished = False

    # -- the rule: nothing is parsed, let alone run, before the completion signal
    def finish(self, stop_reason: str | None) -> list[ToolCall | Refusal]:
        """The completion signal (or its absence): every call becomes a ``ToolCall`` or a ``Refusal``.

        ``stop_reason`` None means the stream ended with no completion signal.
        A cut reason (``length``, ``max_tokens``, ...) or an unknown one refuses
        every call in the round, finished-looking or not.
        """
        if self.finished:
            return []
        if self.broken is not None:
            return self.fail(self.broken)
        self.finished = True
        problem = completion_problem(stop_reason)
        shared = self._shared_ids()
        out: list[ToolCall | Refusal] = []
        for i in sorted(self.buffers):
            buf = self.buffers[i]
            if buf.vendor_id is not None and id_key(buf.vendor_id) in shared:
                error = duplicate_call_id_error(buf.vendor_id, f"$[{i}].id")
                out.append(self._refuse(buf, ([problem] if problem else []) + [error] + buf.errors))
            else:
                out.append(self._final(buf, problem))
        return answered_once(out)

    def fail(self, error: ToolError) -> list[Refusal]:
        """The stream broke: refuse every call (or, if none began, report the stream itself)."""
        if self.finished:
            return []
        self.finished = True
        errors = [error] + ([self.broken] if self.broken is not None and self.broken is not error else [])
        refusals = [self._refuse(self.buffers[i], errors) for i in sorted(self.buffers)]
        return answered_once(refusals) or [Refusal(None, None, tuple(errors))]

    def _shared_ids(self) -> set[Any]:
        counts: dict[Any, int] = {}
        for buf in self.buffers.values():
            if buf.vendor_id is not None:
                counts[id_key(buf.vendor_id)] = counts.get(id_key(buf.vendor_id), 0) + 1
        return {key for key, n in counts.items() if n > 1}

    def _final(self, buf: _Buffer, problem: ToolError | None) -> ToolCall | Refusal:
        if problem is not None or buf.errors:
            return self._refuse(buf, ([problem] if problem else []) + buf.errors)
        if self.needs_close and not buf.closed:
            return self._refuse(buf, [stream_incomplete(f"call #{buf.index} never closed its block", "open block")])
        arguments, errors = schema.parse_arguments("".join(buf.parts))
        if errors:
            return self._refuse(buf, errors)
        name = buf.name
        if self.envelope:
            name, arguments, errors = _open_envelope(arguments)
            if errors:
                return self._refuse(buf, errors)
            buf.name = name
        if not name:
            return self._refuse(buf, [stream_invalid(f"$[{buf.index}].name", "no tool name arrived for this call")])
        return ToolCall(name, arguments, self._call_id(buf) or self.ids.mint())

    def _refuse(self, buf: _Buffer, errors: list[ToolError]) -> Refusal:
        call_id = self._call_id(buf) or self.ids.mint()
        return Refusal(call_id, buf.name, capped_errors(errors, f"$[{buf.index}]"), buf.index, buf.size,
                       arguments="".join(buf.parts))

    def _call_id(self, buf: _Buffer) -> str | None:
        """The toolkit's id for the vendor id assembled so far (minted once it is known, again if it grew)."""
        if buf.vendor_id is not None and buf.minted_for != buf.vendor_id:
            buf.call_id, buf.minted_for = self.ids.internal(self.vendor, buf.vendor_id), buf.vendor_id
        return buf.call_id

    # -- fragments in
    def add(self, index: int, *, call_id: Any = None, name: Any = None, arguments: Any = None) -> None:
        """Take one chunk's worth of a call. Never raises on bad data: problems are kept for ``finish``."""
        if self.finished:
            raise RuntimeError("the round is finished; start a new Assembler")
        if self.broken is not None:
            return
        buf = self.buffers.get(index) if type(index) is int else None
        if buf is None:
            if type(index) is not int or index < 0:
                self.broken = stream_invalid("$.index", "a call index must be a non-negative integer",
                                             shown_value(index))
                return
            if len(self.buffers) >= MAX_OPEN_CALLS:
                self.broken = over_cap(f"$[{index}]", "the calls in this stream", "MAX_OPEN_CALLS", MAX_OPEN_CALLS,
                                       "calls")
                return
            buf = self.buffers[index] = _Buffer(index)
        if buf.closed:
            self._problem(buf, stream_invalid(f"$[{index}]", "data arrived after the call's block was closed"))
        if (call_id is not None and call_id != buf.vendor_id) or (name is not None and name != buf.name):
            self._identify(buf, call_id, name)    # new, growing or changed id or name; plain repeats skip this
        if arguments is None:
            return
        if type(arguments) is str and buf.size <= self.max_chars:   # the common case, kept short
            buf.parts.append(arguments)
            buf.size += len(arguments)
            if buf.size > self.max_chars:
                self._overflow(buf)
        elif not isinstance(arguments, str):
            self._problem(buf, stream_invalid(f"$[{index}].arguments", "argument fragment is not text",
                                              type(arguments).__name__))

    def _problem(self, buf: _Buffer, error: ToolError) -> None:
        """Keep one problem of a call; one problem more than ``MAX_ERRORS_PER_CALL`` breaks the stream."""
        if len(buf.errors) < MAX_ERRORS_PER_CALL:
            buf.errors.append(error)
        elif self.broken is None:
            self.broken = over_cap(f"$[{buf.index}]", "the problems with this call", "MAX_ERRORS_PER_CALL",
                                   MAX_ERRORS_PER_CALL, "problems", "nothing was run; the stream is broken")

    def _identify(self, buf: _Buffer, call_id: Any, name: Any) -> None:
        """Assemble the id and the name by ``assemble_field``: repeats are ignored, pieces joined, changes refused."""
        where = f"$[{buf.index}]"
        for field, value, cap, cap_name in (("id", call_id, MAX_CALL_ID_CHARS, "MAX_CALL_ID_CHARS"),
                                            ("name", name, MAX_NAME_CHARS, "MAX_NAME_CHARS")):
            if value is None:
                continue
            current = buf.vendor_id if field == "id" else buf.name
            label = "call id" if field == "id" else "tool name"
            grown, why = assemble_field(current, value, buf.size > 0) if field == "id" or isinstance(value, str) else (
                current, "not text")            # an id may be a JSON-RPC integer; a name is always text
            if why == "changed":
                self._problem(buf, stream_invalid(f"{where}.{field}", f"{label} changed mid-stream",
                                                  [shown_value(current), shown_value(value)]))
            elif why:
                self._problem(buf, stream_invalid(f"{where}.{field}", f"{label} is not a string",
                                                  type(value).__name__))
            elif field_too_long(grown, cap):        # no real tool or id is that long: the stream is broken
                self.broken = self.broken or over_cap(f"{where}.{field}", f"the {label}", cap_name, cap,
                                                      "characters")
                return
            elif field == "id":
                buf.vendor_id = grown
            else:
                buf.name = grown

    def _overflow(self, buf: _Buffer) -> None:
        buf.parts = []  # drop the text: an endless stream must not fill memory
        self._problem(buf, ToolError(
            "too_large", f"$[{buf.index}].arguments", f"arguments passed the {self.max_chars} character cap",
            expected=f"at most {self.max_chars} characters", received=f"more than {self.max_chars}",
            hint="send a reference (a path or id) instead of the content"))

    def close(self, index: int) -> None:
        """The block for ``index`` is complete (Anthropic's ``content_block_stop``)."""
        buf = self.buffers.get(index) if type(index) is int else None
        if buf is not None:
            buf.closed = True

    # -- progress out (never a call)
    def preview(self, index: int) -> Preview | None:
        """Progress for one call: the text so far (secret-named values masked) and the keys seen so far.

        Keys are found incrementally (only characters not yet scanned are read);
        the text is one join, so ask for a preview when the display redraws,
        not for every fragment of a huge argument.
        """
        buf = self.buffers.get(index) if type(index) is int else None
        if buf is None:
            return None
        if buf.scanner is None:
            buf.scanner = KeyScanner()
        for part in buf.parts[buf.seen:]:
            buf.scanner.feed(part)
        buf.seen = len(buf.parts)
        if len(buf.keys) != len(buf.scanner.keys):
            buf.keys = tuple(buf.scanner.keys)
        return Preview(index, self._call_id(buf), buf.name, buf.scanner.text(), buf.keys, len(buf.parts))

    def previews(self) -> list[Preview]:
        """A preview of every call still arriving, in index order."""
        return [p for i in sorted(self.buffers) if (p := self.preview(i)) is not None]


def _open_envelope(envelope: Any) -> tuple[str | None, Any, list[ToolError]]:
    """Split ``{"name": ..., "arguments": {...}}`` into a name and arguments, strictly."""
    extra = sorted(set(envelope) - {"name", "arguments"})
    if extra:
        return None, None, [ToolError("unexpected_property", f"$.{extra[0]}", "unexpected property",
                                      expected="name and arguments", received=shown_value(extra[0]))]
    name = envelope.get("name")
    if not isinstance(name, str) or not name:
        return None, None, [ToolError("missing_required", "$.name", "a call needs a tool name",
                                      expected="a non-empty string", received=schema.json_type(name))]
    if field_too_long(name, MAX_NAME_CHARS):
        return None, None, [over_cap("$.name", "the tool name", "MAX_NAME_CHARS", MAX_NAME_CHARS, "characters")]
    arguments, errors = schema.parse_arguments(envelope.get("arguments", {}))
    return name, arguments, errors


def frames(texts: Iterable[str], complete: bool = True, ids: IdMap | None = None) -> list[dict[str, Any]]:
    """Replay a whole-call stream frame by frame, as plain rows for a notebook to print.

    Each row says what a host holds after that frame: the preview, and whether
    anything may run (``call`` is set only on the final row, and only when the
    completion signal arrived).
    """
    assembler = Assembler(ids, "course", envelope=True)
    rows = []
    for t, text in enumerate(texts, 1):
        assembler.add(0, arguments=text)
        preview = assembler.preview(0)
        rows.append({"frame": f"t{t}", "received": text, "keys": list(preview.keys) if preview else [],
                     "runnable": False, "call": None})
    outcome = assembler.finish("complete" if complete else None)
    final = outcome[0] if outcome else None
    rows.append({"frame": "completion event" if complete else "(stream ends)", "received": "",
                 "keys": rows[-1]["keys"] if rows else [], "runnable": isinstance(final, ToolCall),
                 "call": final.summary() if isinstance(final, ToolCall) else final.line() if final else None})
    return rows
