"""Chapter 09: one conversation with a model, through the vendor's official SDK.

One class per SDK, with the same two methods: ``ask()`` sends the history and returns a
``ModelReply`` whose calls the course's own readers parsed (``toolkit.wire.openai_calls`` /
``anthropic_calls``; a reply cut at its token limit refuses them), and ``answer(items, results)``
echoes the assistant turn and one result per call id. With ``stream=True`` the SDK's events go into
the course's stream readers (nothing reaches the host before the completion event); without, the
host reads the body itself. Either way a reply past a cap of ``toolkit._caps`` or its
``deadline`` (a timer, even when nothing arrives) is closed, nothing in it runs, and
``ModelReply.stop`` says why."""
from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from toolkit.kernel import Contract, Refusal, ToolCall, ToolError, ToolResult, completion_problem
from toolkit import _caps
from toolkit._stream_guards import over_cap
from toolkit.wire import (AnthropicStream, OpenAIStream, anthropic_assistant_message,
                          anthropic_calls, anthropic_tool_results, openai_assistant_message,
                          openai_calls, openai_tool_messages, tools_for)
from toolkit._ids import IdMap


@dataclass(frozen=True)
class ModelReply:
    """What one request brought back: calls and refusals in the model's order, its text, its stop reason."""

    items: tuple[ToolCall | Refusal, ...]
    text: str
    stop_reason: str | None
    stop: ToolError | None = None      # why the host stopped reading it (a cap or the deadline)

    @property
    def finished(self) -> bool:
        """The model asked for nothing more and said it was done (a complete stop reason, no calls)."""
        return not self.items and self.stop is None and completion_problem(self.stop_reason) is None


@dataclass
class _Chat:
    client: Any
    model: str
    contracts: Sequence[Contract]
    task: str
    stream: bool = False
    max_tokens: int = 1024
    system: str = ""
    deadline: float = _caps.REPLY_DEADLINE
    ids: IdMap = field(default_factory=IdMap)
    messages: list[dict[str, Any]] = field(default_factory=list)

    vendor = ""

    def __post_init__(self) -> None:
        self.messages.append({"role": "user", "content": self.task})

    def tools(self) -> list[dict[str, Any]]:
        return tools_for(self.vendor, self.contracts)

    def _read(self, pieces: Iterable[Any], close: Callable[[], Any], http: Any,
              take: Callable[[Any], tuple[bool, tuple[int, ...]]]) -> ToolError | None:
        """``take`` each piece (done?, the reply's measures) until done or the end; why the host
        stopped early: a cap of ``_REPLY_CAPS``, or the deadline, whose timer closes the reply even
        when nothing arrives (shutting the socket of ``http``, the SDK's response, wakes a read)."""
        late = threading.Event()

        def fire() -> None:
            late.set()
            with contextlib.suppress(Exception):
                stream = http.extensions["network_stream"]
                stream.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
            close()
        timer = threading.Timer(self.deadline, fire)     # cancelled and joined below, always
        timer.start()
        try:
            for piece in pieces:
                done, measures = take(piece)
                stop = None if done else _past_a_cap(measures, late.is_set(), self.deadline)
                if done or stop is not None:
                    return stop
        except Exception:        # the timer closed the reply under the SDK's feet
            if not late.is_set():
                raise
        finally:
            timer.cancel()
            timer.join()
            close()
        return _past_a_cap((), late.is_set(), self.deadline)

    def _read_stream(self, reader: OpenAIStream | AnthropicStream, events: Any, frame: Any,
                     text_of: Any) -> ModelReply:
        items: list[ToolCall | Refusal] = []
        chars = 0

        def take(event: Any) -> tuple[bool, tuple[int, ...]]:
            nonlocal chars
            items.extend(reader.feed(frame(event)))
            chars += text_of(event)
            return reader.done, (chars, sum(b.size for b in reader.assembler.buffers.values()))
        stop = self._read(events, getattr(events, "close", None) or (lambda: None),
                          getattr(events, "response", None), take)
        items += reader.end()
        return ModelReply(tuple(items), reader.text, reader.stop_reason, stop)

    def _read_whole(self, create: Callable[..., Any], request: dict[str, Any], parts: Callable,
                    read: Callable[[Any, IdMap], list]) -> ModelReply:
        """A reply the host reads whole from the SDK's unread response: under its body's cap and
        the deadline, then the caps a streamed reply meets (``parts``: text, arguments, calls)."""
        response, body = create(**request, extra_headers=_UNREAD), bytearray()

        def take(chunk: bytes) -> tuple[bool, tuple[int, ...]]:
            body.extend(chunk)
            return False, (0, 0, 0, len(body))
        stop = self._read(response.iter_bytes(), response.close, response.http_response, take)
        try:
            data = None if stop else json.loads(body)
        except (ValueError, RecursionError):
            data = None                           # not JSON: the vendor's reader refuses it
        text, sent, calls, reason = parts(data)
        measures = (len(text), sum(map(_argument_chars, sent)), calls)
        stop = stop or _past_a_cap(measures, False, self.deadline)
        if stop is not None:
            return ModelReply((), "", None, stop)
        return ModelReply(tuple(read(data, self.ids)), text, reason)


class OpenAIChat(_Chat):
    """A conversation through ``openai.OpenAI().chat.completions`` (OpenAI and OpenAI-compatible servers)."""

    vendor = "openai"

    def __post_init__(self) -> None:
        if self.system:
            self.messages.append({"role": "system", "content": self.system})
        super().__post_init__()

    def ask(self) -> ModelReply:
        request: dict[str, Any] = {"model": self.model, "messages": self.messages}
        if self.contracts:                      # an empty tools list is refused by the API
            request["tools"] = self.tools()
        if not self.stream:
            return self._read_whole(self.client.chat.completions.create, request, _completion_parts,
                                    openai_calls)
        events = self.client.chat.completions.create(stream=True, **request)
        return self._read_stream(OpenAIStream(self.ids), events,
                                 lambda chunk: f"data: {chunk.to_json(indent=None)}\n\n",
                                 _chunk_text)

    def answer(self, items: Iterable[ToolCall | Refusal], results: Iterable[ToolResult], text: str = "") -> None:
        self.messages.append(openai_assistant_message(list(items), self.ids, content=text or None))
        self.messages.extend(openai_tool_messages(results, self.ids))


class AnthropicChat(_Chat):
    """A conversation through ``anthropic.Anthropic().messages``."""

    vendor = "anthropic"

    def ask(self) -> ModelReply:
        request: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": self.messages}
        if self.contracts:
            request["tools"] = self.tools()
        if self.system:
            request["system"] = self.system
        if not self.stream:
            return self._read_whole(self.client.messages.create, request, _message_parts,
                                    anthropic_calls)
        events = self.client.messages.create(stream=True, **request)
        return self._read_stream(AnthropicStream(self.ids), events, _event_frame, _delta_text)

    def answer(self, items: Iterable[ToolCall | Refusal], results: Iterable[ToolResult], text: str = "") -> None:
        turn, answers = anthropic_assistant_message(list(items), self.ids, content=text or None), list(results)
        if turn["content"]:
            self.messages.append(turn)
        if answers:                                   # Anthropic refuses a turn with no content blocks
            self.messages.append(anthropic_tool_results(answers, self.ids))


_STOPPED = "the host stopped reading; nothing in this reply was run"
#: The SDKs' own switch behind ``with_streaming_response``: ``create`` returns the response unread.
_UNREAD = {"X-Stainless-Raw-Response": "stream"}
#: What one reply may send, in the order ``_past_a_cap`` takes its measures, each cap by its name.
_REPLY_CAPS = (("$.text", "the reply's text", "MAX_REPLY_TEXT_CHARS", "characters"),
               ("$.tool_calls", "the reply's call arguments", "MAX_REPLY_ARGUMENT_BYTES", "bytes"),
               ("$.tool_calls", "the calls in the reply", "MAX_OPEN_CALLS", "calls"),
               ("$", "the reply's body", "MAX_REPLY_BODY_BYTES", "bytes"))


def _chunk_text(chunk: Any) -> int:
    """Characters of text in one OpenAI stream chunk."""
    return sum(len(getattr(c.delta, "content", None) or "") for c in chunk.choices or ())


def _event_frame(event: Any) -> str:
    """One Anthropic stream event as the SSE text the course's reader takes."""
    return f"event: {event.type}\ndata: {event.to_json(indent=None)}\n\n"


def _delta_text(event: Any) -> int:
    """Characters of text in one Anthropic stream event."""
    return len(getattr(getattr(event, "delta", None), "text", None) or "")


def _completion_parts(body: Any) -> tuple[str, list[Any], int, Any]:
    """An OpenAI completion's text, its calls' arguments, its number of calls, its finish reason."""
    choices = body.get("choices") if isinstance(body, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else {}
    choice = choice if isinstance(choice, dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    calls = message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []
    return (message.get("content") if isinstance(message.get("content"), str) else "",
            [c["function"].get("arguments") for c in calls
             if isinstance(c, dict) and isinstance(c.get("function"), dict)], len(calls),
            choice.get("finish_reason"))


def _message_parts(body: Any) -> tuple[str, list[Any], int, Any]:
    """An Anthropic message's text, each call's input, its number of calls, its stop reason."""
    content = body.get("content") if isinstance(body, dict) else None
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    sent = [b.get("input") for b in blocks if b.get("type") == "tool_use"]
    texts = (b.get("text") for b in blocks if b.get("type") == "text")
    text = "".join(t for t in texts if isinstance(t, str))
    return text, sent, len(sent), body.get("stop_reason") if isinstance(body, dict) else None


def _argument_chars(arguments: Any) -> int:
    """Characters of one call's arguments: the text as sent, or the object as JSON text."""
    try:
        return len(arguments) if isinstance(arguments, str) else len(json.dumps(arguments))
    except (TypeError, ValueError, RecursionError):
        return 0


def _past_a_cap(measures: Sequence[int], late: bool, deadline: float) -> ToolError | None:
    """Why the host stops reading a reply now (the first of ``_REPLY_CAPS`` its measures pass, or
    the deadline), or None while it is inside every cap."""
    for (pointer, what, name, unit), measure in zip(_REPLY_CAPS, measures):
        if measure > getattr(_caps, name):
            return over_cap(pointer, what, name, getattr(_caps, name), unit, _STOPPED)
    if late:
        return ToolError("timeout", "$", f"the reply was still arriving after {deadline:g} s, the "
                         "host's deadline for one reply (REPLY_DEADLINE)",
                         expected=f"at most {deadline:g} s", hint=_STOPPED, retryable=False)
    return None


def chat_for(vendor: str, client: Any, model: str, contracts: Sequence[Contract], task: str, **options: Any
             ) -> OpenAIChat | AnthropicChat:
    """The conversation class for ``vendor`` ("openai" or "anthropic")."""
    if vendor == "openai":
        return OpenAIChat(client, model, list(contracts), task, **options)
    if vendor == "anthropic":
        return AnthropicChat(client, model, list(contracts), task, **options)
    raise ValueError(f"unknown vendor {vendor!r}: choose openai or anthropic")
