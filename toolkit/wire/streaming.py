"""Chapter 08: streaming: fragments in, complete calls (or refusals) out.

A streamed call arrives in pieces. Until the completion signal, every piece
is an unfinished fragment: ``{"path": "src/co`` says *some* file under
``src/``, not which one. This module keeps three promises:

1. **Nothing partial runs.** Arguments are parsed (strictly, by
   ``toolkit.core.schema.parse_arguments``) only after the completion signal. A
   stream that was cut, stopped at a token limit, or broke on the way gives a
   ``Refusal`` with a structured error, never a ``ToolCall``.
2. **A preview is not a call.** ``Preview`` shows progress (the raw text so
   far and the keys seen so far, never guessed values) and is a different
   type from ``ToolCall``, so an executor can tell them apart.
3. **Linear time.** One buffer per call index; fragments are appended to a
   list and joined once. Nothing re-reads the whole buffer per fragment.

``Assembler`` is the vendor-neutral core. ``OpenAIStream`` and
``AnthropicStream`` read the raw server-sent-event body of each vendor's
stream (text, bytes, or chunks split anywhere) and feed the assembler;
``openai_stream`` / ``anthropic_stream`` wrap them as generators.
``SKETCH_FRAMES`` are the four pieces the chapter's sketch draws; they arrive in frames t1..t3
(t2 brings the second and third) and t4 is the completion event.
"""
from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from toolkit.core import schema
from toolkit.core import ToolCall
from toolkit.core import ToolError, pointer_for
from toolkit.core.host import not_a_call  # noqa: F401  (re-exported: a preview handed to an executor)
from toolkit.wire.vendors import IdMap, Refusal

#: Stop reasons that mean "the calls are complete" (OpenAI, Anthropic, and the course's own).
COMPLETE = frozenset({"tool_calls", "stop", "function_call", "tool_use", "end_turn", "stop_sequence", "complete"})
#: Stop reasons that mean "cut before the end": every call in the round is refused.
CUT = frozenset({"length", "max_tokens", "content_filter", "refusal", "model_context_window_exceeded"})

#: The chapter's sketch, frame by frame. The drawing elides the glue between its
#: two rows (``, "arguments": `` and the closing brace); here it is written out,
#: so the four pieces join into one call: ``{"name": ..., "arguments": {...}}``.
SKETCH_FRAMES = ('{ "name": "read_', 'file", "arguments": ', '{ "path": "src/co', 'nfig.ts" } }')


# ------------------------------------------------------------------ previews
@dataclass(frozen=True)
class Preview:
    """What a progress display may show while a call is still arriving.

    Deliberately *not* a ``ToolCall``: it has no ``arguments``, only ``text``
    (the raw characters so far) and ``keys`` (JSON paths of the keys whose
    names have fully arrived, e.g. ``$.path``). No value is ever guessed: a
    half-sent ``"amount": 1`` may be the start of ``100``.
    """

    index: int
    call_id: str | None
    name: str | None
    text: str
    keys: tuple[str, ...]
    fragments: int

    def line(self, width: int = 40) -> str:
        """One display line, e.g. ``#0 read_file  18 chars  keys $.path  | { "path": "src/co``."""
        shown = self.text if len(self.text) <= width else "..." + self.text[-(width - 3):]
        keys = ", ".join(self.keys) or "-"
        return f"#{self.index} {self.name or '?'}  {len(self.text)} chars  keys {keys}  | {shown}"


class _KeyScanner:
    """Finds the keys in partial JSON text, incrementally (each character is read once)."""

    _OUTSIDE = re.compile(r'[{}\[\]",:]')
    _INSIDE = re.compile(r'["\\]')

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []   # ["{", current key or None, expecting a key] or ["[", index]
        self.in_string = False
        self.escape = False
        self.is_key = False
        self.key_parts: list[str] = []
        self.keys: list[str] = []

    def feed(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n:
            if self.in_string:
                if self.escape:
                    self.escape = False
                    if self.is_key:
                        self.key_parts.append(text[i])
                    i += 1
                    continue
                m = self._INSIDE.search(text, i)
                end = m.start() if m else n
                if self.is_key:
                    self.key_parts.append(text[i:end])
                if not m:
                    return
                if m.group() == "\\":
                    self.escape = True
                    if self.is_key:
                        self.key_parts.append("\\")
                else:
                    self.in_string = False
                    if self.is_key:
                        self._key_done()
                i = end + 1
                continue
            m = self._OUTSIDE.search(text, i)
            if not m:
                return
            self._punct(m.group())
            i = m.end()

    def _punct(self, ch: str) -> None:
        top = self.stack[-1] if self.stack else None
        if ch == "{":
            self.stack.append(["{", None, True])
        elif ch == "[":
            self.stack.append(["[", 0])
        elif ch in "}]":
            if self.stack:
                self.stack.pop()
        elif ch == '"':
            self.in_string = True
            self.is_key = bool(top and top[0] == "{" and top[2])
            self.key_parts = []
        elif ch == ":" and top and top[0] == "{":
            top[2] = False
        elif ch == "," and top:
            if top[0] == "{":
                top[2] = True
            else:
                top[1] += 1

    def _key_done(self) -> None:
        raw = "".join(self.key_parts)
        try:
            key = json.loads(f'"{raw}"')
        except ValueError:
            key = raw
        self.stack[-1][1] = key
        path = tuple(frame[1] for frame in self.stack)
        pointer = pointer_for(path)
        if pointer not in self.keys:
            self.keys.append(pointer)


# ----------------------------------------------------------------- assembler
class _Buffer:
    __slots__ = ("index", "vendor_id", "call_id", "name", "parts", "size", "errors", "closed", "scanner", "seen")

    def __init__(self, index: int):
        self.index = index
        self.vendor_id: Any = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.size = 0
        self.errors: list[ToolError] = []
        self.closed = False
        self.scanner: _KeyScanner | None = None
        self.seen = 0


def _broken(pointer: str, message: str, received: Any = None, hint: str = "") -> ToolError:
    return ToolError("stream_invalid", pointer, message, expected="a well-formed stream", received=received,
                     hint=hint or "nothing was run; ask for the calls again")


def _incomplete(message: str, received: Any = None, hint: str = "") -> ToolError:
    return ToolError("stream_incomplete", "$", message, expected="a completion signal", received=received,
                     hint=hint or "nothing was run; ask for the calls again")


class Assembler:
    """Collects streamed fragments into calls, one buffer per call index.

    ``add(index, call_id=..., name=..., arguments=...)`` takes whatever a
    chunk carried. The id and name are set once: a server that repeats them
    in every chunk changes nothing, one that changes them mid-stream breaks the
    call. ``finish(stop_reason)`` is the completion signal: only then is each
    buffer joined and parsed. With ``needs_close=True`` (Anthropic) a call is
    complete only if its block was also closed with ``close(index)``.
    With ``envelope=True`` (the chapter's sketch) the text of index 0 is a whole
    ``{"name": ..., "arguments": {...}}`` object.

    ``max_chars`` caps each call's argument text (default: the schema's cap);
    a call that passes it is refused at once and its text is dropped.
    """

    def __init__(self, ids: IdMap | None = None, vendor: str = "stream", *, max_chars: int | None = None,
                 needs_close: bool = False, envelope: bool = False):
        self.ids = ids if ids is not None else IdMap()
        self.vendor = vendor
        self.max_chars = max_chars if max_chars is not None else schema.MAX_ARGUMENT_BYTES
        self.needs_close = needs_close
        self.envelope = envelope
        self.buffers: dict[int, _Buffer] = {}
        self.finished = False

    def add(self, index: int, *, call_id: Any = None, name: Any = None, arguments: Any = None) -> None:
        """Take one chunk's worth of a call. Never raises on bad data: problems are kept for ``finish``."""
        if self.finished:
            raise RuntimeError("the round is finished; start a new Assembler")
        buf = self.buffers.get(index)
        if buf is None:
            buf = self.buffers[index] = _Buffer(index)
        if buf.closed:
            buf.errors.append(_broken(f"$[{index}]", "data arrived after the call's block was closed"))
        if (call_id is not None and call_id != buf.vendor_id) or (name is not None and name != buf.name):
            self._identify(buf, call_id, name)    # new (or changed) id or name; plain repeats skip this
        if arguments is None:
            return
        if type(arguments) is str and buf.size <= self.max_chars:   # the common case, kept short
            buf.parts.append(arguments)
            buf.size += len(arguments)
            if buf.size > self.max_chars:
                self._overflow(buf)
        elif not isinstance(arguments, str):
            buf.errors.append(_broken(f"$[{index}].arguments", "argument fragment is not text",
                                      type(arguments).__name__))

    def _identify(self, buf: _Buffer, call_id: Any, name: Any) -> None:
        """Set the id and name once; repeats are ignored, changes break the call."""
        where = f"$[{buf.index}]"
        if call_id is not None and call_id != "" and call_id != buf.vendor_id:
            if buf.vendor_id is not None:
                buf.errors.append(_broken(f"{where}.id", "call id changed mid-stream", [buf.vendor_id, call_id]))
            elif isinstance(call_id, (str, int)) and not isinstance(call_id, bool):
                buf.vendor_id, buf.call_id = call_id, self.ids.internal(self.vendor, call_id)
            else:
                buf.vendor_id = call_id
                buf.errors.append(_broken(f"{where}.id", "call id is not a string", type(call_id).__name__))
        if name is not None and name != "" and name != buf.name:
            if not isinstance(name, str):
                buf.errors.append(_broken(f"{where}.name", "tool name is not a string", type(name).__name__))
            elif buf.name is None:
                buf.name = name
            else:
                buf.errors.append(_broken(f"{where}.name", "tool name changed mid-stream", [buf.name, name]))

    def _overflow(self, buf: _Buffer) -> None:
        buf.parts = []  # drop the text: an endless stream must not fill memory
        buf.errors.append(ToolError(
            "too_large", f"$[{buf.index}].arguments", f"arguments passed the {self.max_chars} character cap",
            expected=f"at most {self.max_chars} characters", received=f"more than {self.max_chars}",
            hint="send a reference (a path or id) instead of the content"))

    def close(self, index: int) -> None:
        """The block for ``index`` is complete (Anthropic's ``content_block_stop``)."""
        buf = self.buffers.get(index)
        if buf is not None:
            buf.closed = True

    def preview(self, index: int) -> Preview | None:
        """Progress for one call: the raw text so far and the keys seen so far.

        Keys are found incrementally (only characters not yet scanned are read);
        the text is one join, so ask for a preview when the display redraws,
        not for every fragment of a huge argument.
        """
        buf = self.buffers.get(index)
        if buf is None:
            return None
        if buf.scanner is None:
            buf.scanner = _KeyScanner()
        for part in buf.parts[buf.seen:]:
            buf.scanner.feed(part)
        buf.seen = len(buf.parts)
        return Preview(index, buf.call_id, buf.name, "".join(buf.parts), tuple(buf.scanner.keys), len(buf.parts))

    def previews(self) -> list[Preview]:
        """A preview of every call still arriving, in index order."""
        return [p for i in sorted(self.buffers) if (p := self.preview(i)) is not None]

    def finish(self, stop_reason: str | None) -> list[ToolCall | Refusal]:
        """The completion signal (or its absence): every call becomes a ``ToolCall`` or a ``Refusal``.

        ``stop_reason`` None means the stream ended with no completion signal.
        A cut reason (``length``, ``max_tokens``, ...) or an unknown one refuses
        every call in the round, finished-looking or not.
        """
        if self.finished:
            return []
        self.finished = True
        problem: ToolError | None = None
        if stop_reason is None:
            problem = _incomplete("the stream ended without a completion signal", "no stop reason")
        elif stop_reason in CUT:
            problem = _incomplete(f"the stream stopped at {stop_reason!r} before the calls were complete",
                                  stop_reason, "nothing was run; ask again with a larger token limit "
                                               "or smaller arguments")
        elif stop_reason not in COMPLETE:
            problem = _incomplete(f"unrecognised stop reason {stop_reason!r}; treated as incomplete", stop_reason)
        return [self._final(self.buffers[i], problem) for i in sorted(self.buffers)]

    def fail(self, error: ToolError) -> list[Refusal]:
        """The stream broke: refuse every call (or, if none began, report the stream itself)."""
        if self.finished:
            return []
        self.finished = True
        refusals = [self._refuse(self.buffers[i], [error]) for i in sorted(self.buffers)]
        return refusals or [Refusal(None, None, (error,))]

    # -- internals
    def _refuse(self, buf: _Buffer, errors: list[ToolError]) -> Refusal:
        call_id = buf.call_id or self.ids.mint()
        return Refusal(call_id, buf.name, tuple(errors), buf.index, buf.size)

    def _final(self, buf: _Buffer, problem: ToolError | None) -> ToolCall | Refusal:
        if problem is not None or buf.errors:
            return self._refuse(buf, ([problem] if problem else []) + buf.errors)
        if self.needs_close and not buf.closed:
            return self._refuse(buf, [_incomplete(f"call #{buf.index} never closed its block", "open block")])
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
            return self._refuse(buf, [_broken(f"$[{buf.index}].name", "no tool name arrived for this call")])
        call_id = buf.call_id or self.ids.mint()
        return ToolCall(name, arguments, call_id)


def _open_envelope(envelope: Any) -> tuple[str | None, Any, list[ToolError]]:
    """Split ``{"name": ..., "arguments": {...}}`` into a name and arguments, strictly."""
    extra = sorted(set(envelope) - {"name", "arguments"})
    if extra:
        return None, None, [ToolError("unexpected_property", f"$.{extra[0]}", "unexpected property",
                                      expected="name and arguments", received=extra[0])]
    name = envelope.get("name")
    if not isinstance(name, str) or not name:
        return None, None, [ToolError("missing_required", "$.name", "a call needs a tool name",
                                      expected="a non-empty string", received=schema.json_type(name))]
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


# ----------------------------------------------------- server-sent events
@dataclass(frozen=True)
class SSEEvent:
    """One dispatched server-sent event: its ``event`` name ('' if none), its data, its number (from 1)."""

    event: str
    data: str
    number: int


class StreamBroken(Exception):
    """Raised inside a stream reader when the body cannot be trusted; carries the ``ToolError``."""

    def __init__(self, error: ToolError):
        super().__init__(error.line())
        self.error = error


_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEDecoder:
    """Splits a server-sent-event body into events, however the chunks were cut.

    Follows the SSE rules (lines end in CR, LF or CRLF; ``data`` lines join
    with newlines; a blank line dispatches; ``:`` starts a comment) with one
    deliberate strictness: a field other than ``data``, ``event``, ``id`` or
    ``retry`` (an HTML error page, say) breaks the stream instead of being
    ignored. Bytes are decoded as UTF-8 incrementally, so a character split
    across chunks is fine and invalid UTF-8 breaks the stream.
    """

    def __init__(self, max_line_chars: int = 16 * 1024 * 1024):
        self.max_line_chars = max_line_chars
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._partial: list[str] = []
        self._partial_size = 0
        self._after_cr = False
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self.dispatched = 0
        self.lines = 0

    def feed(self, chunk: str | bytes) -> list[SSEEvent]:
        if isinstance(chunk, (bytes, bytearray)):
            try:
                chunk = self._decoder.decode(bytes(chunk))
            except UnicodeDecodeError:
                raise StreamBroken(_broken(f"line {self.lines + 1}", "the body is not UTF-8 text")) from None
        elif not isinstance(chunk, str):
            raise StreamBroken(_broken("$", "a chunk must be text or bytes", type(chunk).__name__))
        if not chunk:
            return []
        if not self._started:
            self._started = True
            if chunk.startswith("\ufeff"):
                chunk = chunk[1:]
        if self._after_cr:  # a CRLF split across two chunks ends one line, not two
            self._after_cr = False
            if chunk.startswith("\n"):
                chunk = chunk[1:]
        self._after_cr = chunk.endswith("\r")
        pieces = _LINE_END.split(chunk)
        events: list[SSEEvent] = []
        for piece in pieces[:-1]:
            self._partial.append(piece)
            line = "".join(self._partial)
            self._partial, self._partial_size = [], 0
            self._line(line, events)
        if pieces[-1]:
            self._partial.append(pieces[-1])
            self._partial_size += len(pieces[-1])
            if self._partial_size > self.max_line_chars:
                raise StreamBroken(_broken(f"line {self.lines + 1}",
                                           f"a line passed {self.max_line_chars} characters"))
        return events

    def pending(self) -> bool:
        """True when the body so far ends in the middle of a line or an event (it was cut)."""
        return bool(self._partial or self._data or self._event)

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        self.lines += 1
        if line == "":
            if self._data:
                self.dispatched += 1
                events.append(SSEEvent(self._event, "\n".join(self._data), self.dispatched))
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name in ("id", "retry"):
            return
        else:
            raise StreamBroken(_broken(f"line {self.lines}", f"not a server-sent-event field: {name[:30]!r}",
                                       line[:60]))


def _chunks(body: Any) -> Iterator[Any]:
    if isinstance(body, (str, bytes, bytearray)):
        yield body
        return
    try:
        iterator = iter(body)
    except TypeError:
        yield body  # SSEDecoder.feed refuses it with a structured error
        return
    yield from iterator


# ------------------------------------------------------------ vendor streams
class _VendorStream:
    """Shared plumbing: SSE decoding, the assembler, assistant text, and never raising."""

    vendor = ""
    needs_close = False

    def __init__(self, ids: IdMap | None = None, *, max_chars: int | None = None):
        self.ids = ids if ids is not None else IdMap()
        self.sse = SSEDecoder()
        self.assembler = Assembler(self.ids, self.vendor, max_chars=max_chars, needs_close=self.needs_close)
        self.stop_reason: str | None = None
        self.done = False
        self._text: list[str] = []

    @property
    def text(self) -> str:
        """The assistant's plain text streamed alongside the calls."""
        return "".join(self._text)

    def previews(self) -> list[Preview]:
        return [] if self.done else self.assembler.previews()

    def feed(self, chunk: str | bytes) -> list[ToolCall | Refusal]:
        """Read one chunk; returns calls and refusals that became final with it (usually none)."""
        if self.done:
            return []
        out: list[ToolCall | Refusal] = []
        try:
            for event in self.sse.feed(chunk):
                out += self._event(event)
                if self.done:
                    break
        except StreamBroken as broken:
            out += self._break(broken.error)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:  # odd shapes
            out += self._break(_broken("$", f"unexpected event shape ({type(exc).__name__})"))
        return out

    def end(self) -> list[ToolCall | Refusal]:
        """The body is over. Without a completion signal, every call is refused."""
        if self.done:
            return []
        self.done = True
        cut = " in the middle of an event" if self.sse.pending() else ""
        return self.assembler.fail(_incomplete(f"the stream ended{cut} without a completion signal",
                                               "end of body"))

    def _finish(self, reason: str | None) -> list[ToolCall | Refusal]:
        self.stop_reason, self.done = reason, True
        return self.assembler.finish(reason)

    def _break(self, error: ToolError) -> list[ToolCall | Refusal]:
        self.done = True
        return list(self.assembler.fail(error))

    def _json(self, event: SSEEvent) -> dict:
        try:
            data = json.loads(event.data)
        except ValueError:
            raise StreamBroken(_broken(f"event {event.number}", "the event's data is not JSON",
                                       event.data[:60])) from None
        if not isinstance(data, dict):
            raise StreamBroken(_broken(f"event {event.number}", "the event's data is not a JSON object",
                                       schema.json_type(data)))
        return data

    def _event(self, event: SSEEvent) -> list[ToolCall | Refusal]:  # pragma: no cover - overridden
        raise NotImplementedError


def _index(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StreamBroken(_broken(where, "index must be a non-negative integer", value))
    return value


def _text_or_none(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise StreamBroken(_broken(where, "expected text", schema.json_type(value)))
    return value


class OpenAIStream(_VendorStream):
    """Reads an OpenAI Chat Completions stream: ``data: {chunk}`` lines, then ``data: [DONE]``.

    Each chunk's ``choices[0].delta.tool_calls[]`` carries ``index``; the
    first piece for an index brings ``id`` and ``function.name``, later ones
    ``function.arguments`` fragments. ``finish_reason`` is the completion
    signal: ``tool_calls`` (or ``stop``) completes the calls, ``length``
    refuses them all.
    """

    vendor = "openai"

    def _event(self, event: SSEEvent) -> list[ToolCall | Refusal]:
        if event.data.strip() == "[DONE]":
            self.done = True
            return self.assembler.fail(_incomplete("[DONE] arrived without a finish_reason", "[DONE]"))
        chunk = self._json(event)
        if "error" in chunk:
            error = chunk["error"] if isinstance(chunk["error"], dict) else {}
            kind = str(error.get("type") or error.get("code") or "error")[:40]
            raise StreamBroken(_incomplete(f"the server reported an error: {kind}", "error event",
                                           "nothing was run; try the request again"))
        choices = chunk.get("choices", [])
        if not isinstance(choices, list):
            raise StreamBroken(_broken(f"event {event.number}.choices", "expected a list", schema.json_type(choices)))
        out: list[ToolCall | Refusal] = []
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                raise StreamBroken(_broken(f"event {event.number}.choices", "only one choice (index 0) is supported"))
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise StreamBroken(_broken(f"event {event.number}.delta", "expected an object"))
            content = _text_or_none(delta.get("content"), f"event {event.number}.delta.content")
            if content:
                self._text.append(content)
            for n, piece in enumerate(delta.get("tool_calls") or []):
                where = f"event {event.number}.delta.tool_calls[{n}]"
                if not isinstance(piece, dict):
                    raise StreamBroken(_broken(where, "expected an object"))
                function = piece.get("function") or {}
                if not isinstance(function, dict):
                    raise StreamBroken(_broken(f"{where}.function", "expected an object"))
                self.assembler.add(_index(piece.get("index"), f"{where}.index"), call_id=piece.get("id"),
                                   name=function.get("name"), arguments=function.get("arguments"))
            reason = choice.get("finish_reason")
            if reason is not None:
                out += self._finish(_text_or_none(reason, f"event {event.number}.finish_reason"))
        return out


class AnthropicStream(_VendorStream):
    """Reads an Anthropic Messages stream of named events.

    ``content_block_start`` (a ``tool_use`` block with id, name and empty
    input) -> ``content_block_delta`` events whose ``input_json_delta``
    carries ``partial_json`` -> ``content_block_stop``; then ``message_delta``
    with ``stop_reason``, the completion signal: ``tool_use`` completes the
    closed blocks, ``max_tokens`` refuses them all.
    """

    vendor = "anthropic"
    needs_close = True
    _IGNORED_DELTAS = frozenset({"thinking_delta", "signature_delta", "citations_delta"})

    def __init__(self, ids: IdMap | None = None, *, max_chars: int | None = None):
        super().__init__(ids, max_chars=max_chars)
        self.blocks: dict[int, str] = {}   # index -> block type

    def _event(self, event: SSEEvent) -> list[ToolCall | Refusal]:
        data = self._json(event)
        kind = data.get("type")
        where = f"event {event.number}"
        if event.event and kind != event.event:
            raise StreamBroken(_broken(where, f"event name {event.event!r} does not match data type {kind!r}"))
        if kind == "error":
            error = data.get("error") if isinstance(data.get("error"), dict) else {}
            raise StreamBroken(_incomplete(f"the server reported an error: {str(error.get('type', 'error'))[:40]}",
                                           "error event", "nothing was run; try the request again"))
        if kind == "content_block_start":
            index, block = _index(data.get("index"), f"{where}.index"), data.get("content_block")
            if index in self.blocks or not isinstance(block, dict):
                raise StreamBroken(_broken(f"{where}.index", "block started twice or has no content_block", index))
            self.blocks[index] = str(block.get("type"))
            if block.get("type") == "tool_use":
                if block.get("input") not in (None, {}):
                    raise StreamBroken(_broken(f"{where}.content_block.input",
                                               "a streamed tool_use block must start with empty input"))
                self.assembler.add(index, call_id=block.get("id"), name=block.get("name"))
        elif kind == "content_block_delta":
            index, delta = _index(data.get("index"), f"{where}.index"), data.get("delta")
            if index not in self.blocks or not isinstance(delta, dict):
                raise StreamBroken(_broken(f"{where}.index", "delta for a block that never started", index))
            dtype = delta.get("type")
            if self.blocks[index] == "tool_use":
                if dtype != "input_json_delta":
                    raise StreamBroken(_broken(f"{where}.delta.type", "a tool_use block takes input_json_delta",
                                               dtype))
                self.assembler.add(index, arguments=_text_or_none(delta.get("partial_json"), f"{where}.partial_json"))
            elif dtype == "text_delta":
                self._text.append(_text_or_none(delta.get("text"), f"{where}.text") or "")
            elif dtype not in self._IGNORED_DELTAS:
                raise StreamBroken(_broken(f"{where}.delta.type",
                                           f"unexpected delta for a {self.blocks[index]} block", dtype))
        elif kind == "content_block_stop":
            index = _index(data.get("index"), f"{where}.index")
            if index not in self.blocks:
                raise StreamBroken(_broken(f"{where}.index", "stop for a block that never started", index))
            self.assembler.close(index)
        elif kind == "message_delta":
            delta = data.get("delta") if isinstance(data.get("delta"), dict) else {}
            reason = _text_or_none(delta.get("stop_reason"), f"{where}.delta.stop_reason")
            if reason is not None:
                return self._finish(reason)
        elif kind == "message_stop":
            return self._finish(None)
        return []   # message_start, ping, and event types added later are not about calls


def _read(reader: _VendorStream, body: Any) -> Iterator[ToolCall | Refusal]:
    for chunk in _chunks(body):
        yield from reader.feed(chunk)
        if reader.done:
            return
    yield from reader.end()


def openai_stream(body: Any, ids: IdMap | None = None, *, max_chars: int | None = None
                  ) -> Iterator[ToolCall | Refusal]:
    """Completed calls and refusals from an OpenAI stream body (text, bytes, or an iterable of chunks)."""
    return _read(OpenAIStream(ids, max_chars=max_chars), body)


def anthropic_stream(body: Any, ids: IdMap | None = None, *, max_chars: int | None = None
                     ) -> Iterator[ToolCall | Refusal]:
    """Completed calls and refusals from an Anthropic stream body (text, bytes, or an iterable of chunks)."""
    return _read(AnthropicStream(ids, max_chars=max_chars), body)
