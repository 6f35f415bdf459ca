"""Chapter 08: server-sent events: a streamed body cut into events, however its chunks were split.

``SSEDecoder`` turns a body (text, bytes, or chunks cut anywhere) into ``SSEEvent``s; anything it
cannot trust raises ``StreamBroken`` with a ``stream_invalid`` error, so the reader refuses every
call instead of guessing. An event or line over ``MAX_EVENT_BYTES`` is refused as soon as it
passes; errors never echo the body."""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from toolkit._caps import MAX_EVENT_BYTES
from toolkit.kernel import ToolError
from toolkit._show import scrub, shorten
from toolkit._stream_guards import stream_invalid


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
#: How much longer than an event's data one line may be: room for its field name and colon.
_FIELD_ROOM = 64


def _size(text: str) -> int:
    """The UTF-8 size of ``text`` in bytes (lone surrogates count as three, as they would be sent)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class SSEDecoder:
    """Splits a server-sent-event body into events by the SSE rules, with one strictness: a field
    other than ``data``, ``event``, ``id`` or ``retry`` (an HTML error page) breaks the stream,
    as invalid UTF-8 does."""

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES):
        self.max_event_bytes = max_event_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._partial: list[str] = []
        self._partial_size = 0
        self._after_cr = False
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0
        self.dispatched = 0
        self.lines = 0

    def feed(self, chunk: str | bytes) -> list[SSEEvent]:
        if isinstance(chunk, (bytes, bytearray)):
            try:
                chunk = self._decoder.decode(bytes(chunk))
            except UnicodeDecodeError:
                raise StreamBroken(stream_invalid(f"line {self.lines + 1}", "the body is not UTF-8 text")) from None
        elif not isinstance(chunk, str):
            raise StreamBroken(stream_invalid("$", "a chunk must be text or bytes", type(chunk).__name__))
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
        events: list[SSEEvent] = []
        pieces = _LINE_END.split(chunk)
        room = self.max_event_bytes + _FIELD_ROOM
        for piece in pieces[:-1]:
            if self._partial or len(piece) * 4 > room:  # only a long line needs its size in bytes
                self._grow_line(piece)
                piece = "".join(self._partial)
                self._partial, self._partial_size = [], 0
            self._line(piece, events)
        self._grow_line(pieces[-1])
        return events

    def pending(self) -> bool:
        """True when the body so far ends in the middle of a line or an event (it was cut)."""
        return bool(self._partial or self._data or self._event)

    def _grow_line(self, piece: str) -> None:
        if not piece:
            return
        self._partial_size += _size(piece)
        if self._partial_size > self.max_event_bytes + _FIELD_ROOM:
            raise StreamBroken(self._too_large(f"line {self.lines + 1}", "one line"))
        self._partial.append(piece)

    def _too_large(self, where: str, what: str) -> ToolError:
        cap = self.max_event_bytes
        return ToolError("too_large", where, f"{what} passed the cap of {cap} bytes for one event (MAX_EVENT_BYTES)",
                         expected=f"at most {cap} bytes of data in one event", received=f"more than {cap}",
                         hint="nothing was run; ask for smaller calls")

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        self.lines += 1
        if line == "":
            if self._data:
                self.dispatched += 1
                events.append(SSEEvent(self._event, "\n".join(self._data), self.dispatched))
            self._event, self._data, self._data_size = "", [], 0
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_size += (len(value) if value.isascii() else _size(value)) + bool(self._data)  # + the newline
            if self._data_size > self.max_event_bytes:
                raise StreamBroken(self._too_large(f"event {self.dispatched + 1}", "the event's data"))
            self._data.append(value)
        elif name == "event":
            self._event = shorten(value)
        elif name in ("id", "retry"):
            return
        else:
            shown = shorten(scrub(name, ()))
            raise StreamBroken(stream_invalid(f"line {self.lines}", f"not a server-sent-event field: {shown!r}",
                                              f"a line of {len(line)} characters"))
