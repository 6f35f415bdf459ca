"""Chapter 08: replay a recorded stream chunk by chunk: what a host holds at each moment, and whether it may run anything.

A slider picks a position in a recorded server-sent-event body from
``toolkit/wire/recordings``. At each position the panel shows the chunks
received so far, the ``Preview`` of every call still arriving (raw text and the
keys seen so far, never a guessed value), and the one question that matters:
*may anything execute yet?* Before the completion event the answer is always
"cannot execute: no completion event yet"; only after it does the panel show the
completed ``ToolCall`` objects (or, for a cut stream, the refusals).

Every line comes from the real readers (``toolkit.wire.streaming.OpenAIStream`` /
``AnthropicStream``) fed the same chunks, one at a time. Nothing is re-parsed
here: the panel only describes each chunk and records what the reader said.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolkit.core import ToolCall, shorten
from toolkit.wire import AnthropicStream, OpenAIStream, Preview
from toolkit.wire import Refusal, fixture
from toolkit.present.text_view import pre_html

WAITING = "cannot execute: no completion event yet"


def split_events(body: str) -> list[str]:
    """Cut an SSE body into its events, each keeping its own blank-line ending (a cut tail stays cut)."""
    pieces: list[str] = []
    start = 0
    while start < len(body):
        end = body.find("\n\n", start)
        end = len(body) if end < 0 else end + 2
        piece = body[start:end]
        if piece.strip() or not pieces:
            pieces.append(piece)
        else:
            pieces[-1] += piece   # stray blank lines belong to the event before them
        start = end
    return pieces


def _data(chunk: str) -> tuple[str, str]:
    """The ``event:`` name and the joined ``data:`` lines of one SSE event."""
    event, data = "", []
    for line in chunk.splitlines():
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    return event, "\n".join(data)


def _quoted(text: Any, limit: int = 40) -> str:
    shown = repr(text)
    return shorten(shown, limit, "..." + shown[0])   # keep the quote it opened


def describe_chunk(vendor: str, chunk: str, seen: dict[int, tuple[Any, Any]]) -> str:
    """One line saying what a chunk carried, e.g. ``call #0 arguments += '{"pa'``.

    ``seen`` maps call index -> (id, name) already received; it is updated, so a
    server that repeats the id and name in every chunk is described as repeating.
    Never raises: an unreadable chunk is described as such.
    """
    event, data = _data(chunk)
    try:
        if data.strip() == "[DONE]":
            return "[DONE]"
        payload = json.loads(data) if data else {}
        if vendor == "openai":
            return _describe_openai(payload, seen)
        return _describe_anthropic(event, payload, seen)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError):
        return f"unreadable chunk {_quoted(chunk.strip(), 30)}"


def _describe_openai(payload: dict, seen: dict[int, tuple[Any, Any]]) -> str:
    parts: list[str] = []
    for choice in payload.get("choices", []):
        delta = choice.get("delta") or {}
        if delta.get("content"):
            parts.append(f"text += {_quoted(delta['content'])}")
        for piece in delta.get("tool_calls") or []:
            index = piece.get("index")
            function = piece.get("function") or {}
            ident = (piece.get("id"), function.get("name"))
            if ident != (None, None):
                if seen.get(index) == ident:
                    parts.append(f"call #{index} repeats its id and name")
                else:
                    seen[index] = ident
                    parts.append(f"call #{index} starts: {ident[1]} (id {ident[0]})")
            if function.get("arguments"):
                parts.append(f"call #{index} arguments += {_quoted(function['arguments'])}")
        if choice.get("finish_reason") is not None:
            parts.append(f"finish_reason {choice['finish_reason']!r}")
    if "error" in payload:
        parts.append("error event")
    return "; ".join(parts) or "(nothing about calls)"


def _describe_anthropic(event: str, payload: dict, seen: dict[int, tuple[Any, Any]]) -> str:
    kind = payload.get("type", event)
    index = payload.get("index")
    if kind == "content_block_start":
        block = payload.get("content_block") or {}
        if block.get("type") == "tool_use":
            seen[index] = (block.get("id"), block.get("name"))
            return f"block #{index} starts: tool_use {block.get('name')} (id {block.get('id')})"
        return f"block #{index} starts: {block.get('type')}"
    if kind == "content_block_delta":
        delta = payload.get("delta") or {}
        if delta.get("type") == "input_json_delta":
            return f"block #{index} arguments += {_quoted(delta.get('partial_json'))}"
        if delta.get("type") == "text_delta":
            return f"block #{index} text += {_quoted(delta.get('text'))}"
        return f"block #{index} {delta.get('type')}"
    if kind == "content_block_stop":
        return f"block #{index} closed"
    if kind == "message_delta":
        return f"stop_reason {(payload.get('delta') or {}).get('stop_reason')!r}"
    return str(kind)


@dataclass(frozen=True)
class Moment:
    """What the host holds after ``position`` chunks: previews, and any calls or refusals made final."""

    position: int
    chunk: str                                   # the description of the latest chunk ('' at position 0)
    previews: tuple[Preview, ...]
    final: tuple[ToolCall | Refusal, ...]        # everything made final up to here
    done: bool
    stop_reason: str | None
    text: str                                    # assistant text streamed alongside

    @property
    def calls(self) -> list[ToolCall]:
        """The complete calls: the only things that may go on to validation and execution."""
        return [item for item in self.final if isinstance(item, ToolCall)]

    @property
    def refusals(self) -> list[Refusal]:
        return [item for item in self.final if isinstance(item, Refusal)]

    @property
    def executable(self) -> bool:
        return bool(self.calls)


def replay(name: str, body: str | None = None) -> tuple[str, list[str], list[Moment]]:
    """Feed a recorded stream to the real reader one chunk at a time; return (vendor, chunks, moments).

    ``moments[p]`` is what the host holds after ``p`` chunks (``moments[0]``:
    nothing received yet). At the last position the body is over, so a reader
    still waiting for its completion signal is told so (``end()``) and refuses.
    """
    vendor = "anthropic" if name.startswith("anthropic") else "openai"
    text = fixture(name) if body is None else body
    chunks = split_events(text)
    reader = AnthropicStream() if vendor == "anthropic" else OpenAIStream()
    seen: dict[int, tuple[Any, Any]] = {}
    final: list[ToolCall | Refusal] = []
    moments = [Moment(0, "", (), (), False, None, "")]
    for position, chunk in enumerate(chunks, 1):
        final += reader.feed(chunk)
        if position == len(chunks):
            final += reader.end()        # the body is over: no completion signal now means none at all
        moments.append(Moment(position, describe_chunk(vendor, chunk, seen), tuple(reader.previews()),
                              tuple(final), reader.done, reader.stop_reason, reader.text))
    return vendor, chunks, moments


def moment_text(name: str, moment: Moment, descriptions: list[str], window: int = 8) -> str:
    """What the panel shows at one moment, as plain text."""
    total = len(descriptions)
    lines = [f"{name}: {moment.position} of {total} chunks received"]
    received = descriptions[: moment.position]
    if received:
        lines.append("chunks so far:")
        hidden = max(0, len(received) - window)
        if hidden:
            lines.append(f"  ... {hidden} earlier chunk{'s' if hidden > 1 else ''}")
        lines += [f"  {n:>2}  {text}" for n, text in enumerate(received, 1) if n > hidden]
    else:
        lines.append("chunks so far: none")
    if moment.text:
        lines.append(f"assistant text: {moment.text!r}")
    if moment.previews:
        lines.append("preview (progress only, not a call):")
        lines += [f"  {p.line()}" for p in moment.previews]
    if moment.executable or moment.refusals:
        signal = f" ({moment.stop_reason!r})" if moment.stop_reason else ""
        if moment.executable:
            lines.append(f"completion event{signal}: {len(moment.calls)} complete call"
                         f"{'s' if len(moment.calls) > 1 else ''}, ready for validation and execution")
            lines += [f"  {call.summary()}" for call in moment.calls]
        if moment.refusals:
            lines.append(f"refused, never executed{signal}:")
            lines += [f"  {refusal.line()}" for refusal in moment.refusals]
    else:
        lines.append(WAITING)
    return "\n".join(lines)


class StreamPanel:
    """A slider over a recorded stream; drive it from Python with ``.set(position=...)`` and read ``.text()``."""

    def __init__(self, name: str = "openai_stream.txt", position: int = 0, body: str | None = None,
                 window: int = 8):
        import ipywidgets as w

        self.name, self.window = name, window
        self.vendor, self.chunks, self.moments = replay(name, body)
        self.descriptions = [m.chunk for m in self.moments[1:]]
        self.slider = w.IntSlider(value=min(max(position, 0), len(self.chunks)), min=0, max=len(self.chunks),
                                  step=1, description="chunks", continuous_update=True)
        self.view = w.HTML()
        self.slider.observe(self._update, names="value")
        self.widget = w.VBox([self.slider, self.view])
        self._update()

    @property
    def moment(self) -> Moment:
        return self.moments[self.slider.value]

    def set(self, position: int) -> str:
        """Move the slider to ``position`` chunks received (clamped to the stream), and return what is shown."""
        self.slider.value = min(max(int(position), 0), self.slider.max)
        return self.text()

    def text(self) -> str:
        return self._text

    def _update(self, _change: object = None) -> None:
        self._text = moment_text(self.name, self.moment, self.descriptions, self.window)
        colour = "#1a7f37" if self.moment.executable else "#cf222e"
        self.view.value = pre_html(self._text, colour)

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)
