"""Chapter 08: server-sent events: a streamed body cut into events, however its chunks were split.

Both vendors stream over server-sent events (SSE): ``field: value`` lines, a
blank line ends an event. ``SSEDecoder`` turns a body (text, bytes, or chunks
cut anywhere, even inside a character) into ``SSEEvent`` objects; anything it
cannot trust raises ``StreamBroken``, which carries a structured
``stream_invalid`` error so the reader can refuse every call instead of
guessing. What the events *mean* is each vendor reader's business
(``toolkit.wire.vendor_streams``).
"""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

from toolkit.core import ToolError

__all__ = ["SSEDecoder", "SSEEvent", "StreamBroken"]


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched server-sent event: its ``event`` name ('' if none), its data, its number (from 1)."""

    event: str
    data: str
    number: int


def stream_invalid(pointer: str, message: str, received: Any = None, hint: str = "") -> ToolError:
    """The error for a stream that cannot be trusted (bad framing, bad shapes, ids that change)."""
    return ToolError("stream_invalid", pointer, message, expected="a well-formed stream", received=received,
                     hint=hint or "nothing was run; ask for the calls again")


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
                raise StreamBroken(stream_invalid(f"line {self.lines + 1}",
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
            raise StreamBroken(stream_invalid(f"line {self.lines}", f"not a server-sent-event field: {name[:30]!r}",
                                              line[:60]))
