"""Chapter 08: a recorded stream replayed chunk by chunk: what the host holds, and whether it may run anything.

``replay`` cuts a recorded server-sent-event body into its events (one chunk
per event, as a server sends them) and feeds the real reader
(``OpenAIStream`` / ``AnthropicStream``) one chunk at a time. ``Moment`` is
what the host holds after each chunk: the ``Preview`` of every call still
arriving, and the calls or refusals made final so far. Before the completion
event nothing is executable; only after it are there ``ToolCall`` objects
(or, for a cut stream, refusals). ``describe_chunk`` says in one line what a
chunk carried. Both read the body with the same ``SSEDecoder`` the readers use.

What is described is shown, so it is masked as a preview is
(``toolkit._preview``): an argument fragment that belongs to a
secret-named field's value is shown as ``"[redacted]"`` (or not at all), and
credential-shaped text is masked in fragments, assistant text and unreadable chunks.

``SKETCH_FRAMES`` are the four pieces the chapter's sketch draws (t1..t3, then t4's completion
event); ``frames`` replays them through the kernel's ``Assembler`` as rows a notebook prints.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from toolkit.kernel import Assembler, ToolCall
from toolkit._show import echo_text, scrub, shorten
from toolkit.kernel import Refusal
from toolkit._ids import IdMap
from toolkit._preview import KeyScanner, Preview
from course.worlds import fixture
from toolkit.wire import SSEDecoder, SSEEvent, StreamBroken
from toolkit.wire import AnthropicStream, OpenAIStream

#: The most characters of one streamed fragment or token a replay line shows (beside its call).
MAX_FRAGMENT_CHARS = 40

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


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
    scanners: dict[Any, KeyScanner] = {}
    final: list[ToolCall | Refusal] = []
    moments = [Moment(0, "", (), (), False, None, "")]
    for position, chunk in enumerate(chunks, 1):
        final += reader.feed(chunk)
        if position == len(chunks):
            final += reader.end()        # the body is over: no completion signal now means none at all
        moments.append(Moment(position, describe_chunk(vendor, chunk, seen, scanners), tuple(reader.previews()),
                              tuple(final), reader.done, reader.stop_reason, scrub(reader.text, ())))
    return vendor, chunks, moments


def split_events(body: str) -> list[str]:
    """Cut an SSE body after each event the decoder dispatches, keeping every character.

    Blank lines after an event belong to it; a tail that never ends its event
    (a cut body) stays a chunk of its own, and so does the rest of a body the
    decoder cannot read.
    """
    decoder = SSEDecoder()
    pieces: list[str] = []
    current = ""
    for found in _LINE.finditer(body):
        line = found.group()
        if pieces and not current.strip() and not line.strip("\r\n"):
            pieces[-1] += current + line        # a stray blank line joins the event before it
            current = ""
            continue
        current += line
        try:
            dispatched = decoder.feed(line)
        except StreamBroken:
            return pieces + [current + body[found.end():]]
        if dispatched:
            pieces.append(current)
            current = ""
    if current:
        if pieces and not current.strip():
            pieces[-1] += current
        else:
            pieces.append(current)
    return pieces


def _quoted(text: Any) -> str:
    """A fragment as a replay line shows it: masked, shortened (``MAX_FRAGMENT_CHARS``), then quoted."""
    return repr(shorten(scrub(text, ()), MAX_FRAGMENT_CHARS)) if isinstance(text, str) else echo_text(repr(text))


def describe_chunk(vendor: str, chunk: str, seen: dict[int, tuple[Any, Any]],
                   scanners: dict[Any, KeyScanner] | None = None) -> str:
    """One line saying what a chunk carried, e.g. ``call #0 arguments += '{"pa'``.

    ``seen`` maps call index -> (id, name) already received; it is updated, so a
    server that repeats the id and name in every chunk is described as repeating.
    ``scanners`` (call index -> ``KeyScanner``, updated too) carries what earlier
    fragments said, so a fragment of a secret-named field's value is masked even
    when its key came in an earlier chunk. Never raises: an unreadable chunk, or
    one that stops before its event ends (the tail of a cut body), is described as such.
    """
    decoder = SSEDecoder()
    scanners = {} if scanners is None else scanners
    try:
        events = decoder.feed(chunk)
        if decoder.pending():
            return f"event cut short {_quoted(chunk.strip())}"
        return "; ".join(_describe_event(vendor, event, seen, scanners) for event in events) or \
            "(nothing about calls)"
    except (StreamBroken, ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError):
        return f"unreadable chunk {_quoted(chunk.strip())}"


def _describe_event(vendor: str, event: SSEEvent, seen: dict[int, tuple[Any, Any]],
                    scanners: dict[Any, KeyScanner]) -> str:
    if event.data.strip() == "[DONE]":
        return "[DONE]"
    payload = json.loads(event.data) if event.data else {}
    if vendor == "openai":
        return _describe_openai(payload, seen, scanners)
    return _describe_anthropic(event.event, payload, seen, scanners)


def _shown(scanners: dict[Any, KeyScanner], index: Any, fragment: Any) -> str:
    """What of an argument fragment a display may show, read in the context of the call's earlier fragments."""
    if not isinstance(fragment, str):
        return _quoted(fragment)
    if not isinstance(index, int) or isinstance(index, bool):
        index = repr(index)
    scanner = scanners.get(index)
    if scanner is None:
        scanner = scanners[index] = KeyScanner()
    return _quoted(scanner.feed(fragment))


def _describe_openai(payload: dict, seen: dict[int, tuple[Any, Any]], scanners: dict[Any, KeyScanner]) -> str:
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
                parts.append(f"call #{index} arguments += {_shown(scanners, index, function['arguments'])}")
        if choice.get("finish_reason") is not None:
            parts.append(f"finish_reason {choice['finish_reason']!r}")
    if "error" in payload:
        parts.append("error event")
    return "; ".join(parts) or "(nothing about calls)"


def _describe_anthropic(event: str, payload: dict, seen: dict[int, tuple[Any, Any]],
                        scanners: dict[Any, KeyScanner]) -> str:
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
            return f"block #{index} arguments += {_shown(scanners, index, delta.get('partial_json'))}"
        if delta.get("type") == "text_delta":
            return f"block #{index} text += {_quoted(delta.get('text'))}"
        return f"block #{index} {delta.get('type')}"
    if kind == "content_block_stop":
        return f"block #{index} closed"
    if kind == "message_delta":
        return f"stop_reason {(payload.get('delta') or {}).get('stop_reason')!r}"
    return str(kind)


#: The chapter's sketch, frame by frame. The drawing elides the glue between its
#: two rows (``, "arguments": `` and the closing brace); here it is written out,
#: so the four pieces join into one call: ``{"name": ..., "arguments": {...}}``.
SKETCH_FRAMES = ('{ "name": "read_', 'file", "arguments": ', '{ "path": "src/co', 'nfig.ts" } }')


def frames(texts: Iterable[str], complete: bool = True, ids: IdMap | None = None) -> list[dict[str, Any]]:
    """Replay a whole-call stream frame by frame as rows: the preview after each frame, and ``call``
    only on the final row, only when the completion signal arrived."""
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
