"""Chapter 08: the vendors' stream readers: raw server-sent-event bodies in, complete calls (or refusals) out.

``OpenAIStream`` and ``AnthropicStream`` read a raw body (text, bytes or chunks split anywhere),
check every event's shape and feed the kernel's ``Assembler``; they never raise on bad data (a body
they cannot trust refuses every call in it), never echo an event's text, and meet the assembler's
and the decoder's caps. ``openai_stream`` / ``anthropic_stream`` wrap them as generators."""
from __future__ import annotations

import json
from typing import Any, Iterator

from toolkit import _schema as schema
from toolkit._caps import MAX_OPEN_CALLS
from toolkit.kernel import ToolCall, ToolError, Refusal
from toolkit.kernel.stream import Assembler
from toolkit._ids import IdMap
from toolkit._preview import Preview
from toolkit.wire import SSEDecoder, SSEEvent, StreamBroken
from toolkit._stream_guards import stream_incomplete, stream_invalid, over_cap
from toolkit._show import echo_text, echo_value


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
                if self.assembler.broken is not None:     # a cap was passed: stop reading at once
                    out += self._break(self.assembler.broken)
                    break
        except StreamBroken as broken:
            out += self._break(broken.error)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:  # odd shapes
            out += self._break(stream_invalid("$", f"unexpected event shape ({type(exc).__name__})"))
        return out

    def end(self) -> list[ToolCall | Refusal]:
        """The body is over. Without a completion signal, every call is refused."""
        if self.done:
            return []
        self.done = True
        cut = " in the middle of an event" if self.sse.pending() else ""
        return self.assembler.fail(stream_incomplete(f"the stream ended{cut} without a completion signal",
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
            raise StreamBroken(stream_invalid(f"event {event.number}", "the event's data is not JSON",
                                              f"{len(event.data)} characters of text")) from None
        if not isinstance(data, dict):
            raise StreamBroken(stream_invalid(f"event {event.number}", "the event's data is not a JSON object",
                                              schema.json_type(data)))
        return data

    def _event(self, event: SSEEvent) -> list[ToolCall | Refusal]:  # pragma: no cover - overridden
        raise NotImplementedError


def _index(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StreamBroken(stream_invalid(where, "index must be a non-negative integer", echo_value(value)))
    return value


def _text_or_none(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise StreamBroken(stream_invalid(where, "expected text", schema.json_type(value)))
    return value


class OpenAIStream(_VendorStream):
    """Reads an OpenAI Chat Completions stream: ``data: {chunk}`` lines, then ``data: [DONE]``; the
    first delta for an index brings ``id`` and name, later ones argument fragments;
    ``finish_reason`` completes (``tool_calls``, ``stop``) or refuses them all (``length``)."""

    vendor = "openai"

    def _event(self, event: SSEEvent) -> list[ToolCall | Refusal]:
        if event.data.strip() == "[DONE]":
            self.done = True
            return self.assembler.fail(stream_incomplete("[DONE] arrived without a finish_reason", "[DONE]"))
        chunk = self._json(event)
        if "error" in chunk:
            error = chunk["error"] if isinstance(chunk["error"], dict) else {}
            kind = echo_text(str(error.get("type") or error.get("code") or "error"))
            raise StreamBroken(stream_incomplete(f"the server reported an error: {kind}", "error event",
                                                 "nothing was run; try the request again"))
        choices = chunk.get("choices", [])
        if not isinstance(choices, list):
            raise StreamBroken(stream_invalid(f"event {event.number}.choices", "expected a list",
                                              schema.json_type(choices)))
        out: list[ToolCall | Refusal] = []
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                raise StreamBroken(stream_invalid(f"event {event.number}.choices",
                                                  "only one choice (index 0) is supported"))
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise StreamBroken(stream_invalid(f"event {event.number}.delta", "expected an object"))
            content = _text_or_none(delta.get("content"), f"event {event.number}.delta.content")
            if content:
                self._text.append(content)
            for n, piece in enumerate(delta.get("tool_calls") or []):
                where = f"event {event.number}.delta.tool_calls[{n}]"
                if not isinstance(piece, dict):
                    raise StreamBroken(stream_invalid(where, "expected an object"))
                function = piece.get("function") or {}
                if not isinstance(function, dict):
                    raise StreamBroken(stream_invalid(f"{where}.function", "expected an object"))
                self.assembler.add(_index(piece.get("index"), f"{where}.index"), call_id=piece.get("id"),
                                   name=function.get("name"), arguments=function.get("arguments"))
            reason = choice.get("finish_reason")
            if reason is not None:
                out += self._finish(_text_or_none(reason, f"event {event.number}.finish_reason"))
                break                        # the round is over: nothing after its completion signal counts
        return out


class AnthropicStream(_VendorStream):
    """Reads an Anthropic Messages stream: ``content_block_start`` (``tool_use``),
    ``input_json_delta`` fragments, ``content_block_stop``; ``message_delta``'s ``stop_reason``
    completes (``tool_use``) or refuses them all (``max_tokens``)."""

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
            raise StreamBroken(stream_invalid(where, f"event name {event.event!r} does not match data type "
                                                     f"{echo_value(kind)!r}"))
        if kind == "error":
            error = data.get("error") if isinstance(data.get("error"), dict) else {}
            kind = echo_text(str(error.get("type", "error")))
            raise StreamBroken(stream_incomplete(f"the server reported an error: {kind}", "error event",
                                                 "nothing was run; try the request again"))
        if kind == "content_block_start":
            index, block = _index(data.get("index"), f"{where}.index"), data.get("content_block")
            if index in self.blocks or not isinstance(block, dict):
                raise StreamBroken(stream_invalid(f"{where}.index", "block started twice or has no content_block",
                                                  index))
            if len(self.blocks) >= MAX_OPEN_CALLS:
                raise StreamBroken(over_cap(f"{where}.index", "the content blocks in this message", "MAX_OPEN_CALLS",
                                            MAX_OPEN_CALLS, "blocks"))
            self.blocks[index] = echo_text(block.get("type"))
            if block.get("type") == "tool_use":
                if block.get("input") not in (None, {}):
                    raise StreamBroken(stream_invalid(f"{where}.content_block.input",
                                                      "a streamed tool_use block must start with empty input"))
                self.assembler.add(index, call_id=block.get("id"), name=block.get("name"))
        elif kind == "content_block_delta":
            index, delta = _index(data.get("index"), f"{where}.index"), data.get("delta")
            if index not in self.blocks or not isinstance(delta, dict):
                raise StreamBroken(stream_invalid(f"{where}.index", "delta for a block that never started", index))
            dtype = delta.get("type")
            if self.blocks[index] == "tool_use":
                if dtype != "input_json_delta":
                    raise StreamBroken(stream_invalid(f"{where}.delta.type",
                                                      "a tool_use block takes input_json_delta", echo_value(dtype)))
                self.assembler.add(index, arguments=_text_or_none(delta.get("partial_json"), f"{where}.partial_json"))
            elif dtype == "text_delta":
                self._text.append(_text_or_none(delta.get("text"), f"{where}.text") or "")
            elif dtype not in self._IGNORED_DELTAS:
                raise StreamBroken(stream_invalid(f"{where}.delta.type", f"unexpected delta for a "
                                                  f"{self.blocks[index]} block", echo_value(dtype)))
        elif kind == "content_block_stop":
            index = _index(data.get("index"), f"{where}.index")
            if index not in self.blocks:
                raise StreamBroken(stream_invalid(f"{where}.index", "stop for a block that never started", index))
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
