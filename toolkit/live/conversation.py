"""Chapter 09: one conversation with a model, through the vendor's official SDK.

One class per SDK, with the same two methods: ``ask()`` sends the history and returns a
``ModelReply`` whose calls the course's own readers parsed (``toolkit.wire.openai_calls`` /
``anthropic_calls``; a reply cut at its token limit refuses them), and ``answer(items, results)``
echoes the assistant turn and one result per call id. With ``stream=True`` the SDK's events go into
the course's stream readers: nothing reaches the host before the completion event, and a reply past
a cap of ``toolkit._caps`` or its ``deadline`` (a timer, even when the SDK yields nothing) is
closed, its calls refused, the reason in ``ModelReply.stop``."""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from toolkit.kernel import Contract, Refusal, ToolCall, ToolError, ToolResult, completion_problem
from toolkit._caps import MAX_REPLY_ARGUMENT_BYTES, MAX_REPLY_TEXT_CHARS, REPLY_DEADLINE
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


def _as_dict(obj: Any) -> Any:
    """An SDK object as the JSON it came from (fields the server did not send stay out)."""
    return obj.to_dict(mode="json", warnings=False) if hasattr(obj, "to_dict") else obj


@dataclass
class _Chat:
    client: Any
    model: str
    contracts: Sequence[Contract]
    task: str
    stream: bool = False
    max_tokens: int = 1024
    system: str = ""
    deadline: float = REPLY_DEADLINE
    ids: IdMap = field(default_factory=IdMap)
    messages: list[dict[str, Any]] = field(default_factory=list)

    vendor = ""

    def __post_init__(self) -> None:
        self.messages.append({"role": "user", "content": self.task})

    def tools(self) -> list[dict[str, Any]]:
        return tools_for(self.vendor, self.contracts)

    def ask(self) -> ModelReply:  # pragma: no cover - overridden
        raise NotImplementedError

    def answer(self, items: Iterable[ToolCall | Refusal], results: Iterable[ToolResult], text: str = "") -> None:
        raise NotImplementedError  # pragma: no cover - overridden

    def _read_stream(self, reader: OpenAIStream | AnthropicStream, events: Any, frame: Any,
                     text_of: Any) -> ModelReply:
        items: list[ToolCall | Refusal] = []
        stop, chars, close = None, 0, getattr(events, "close", None) or (lambda: None)
        with _watchdog(self.deadline, close) as late:
            try:
                for event in events:
                    items += reader.feed(frame(event))
                    chars += text_of(event)
                    if reader.done:
                        break
                    sent = sum(b.size for b in reader.assembler.buffers.values())
                    stop = _past_a_cap(chars, sent, late.is_set(), self.deadline)
                    if stop is not None:
                        break
            except Exception:        # the watchdog closed the stream under the SDK's feet
                if not late.is_set():
                    raise
                stop = _past_a_cap(0, 0, True, self.deadline)
            finally:
                close()
        items += reader.end()
        return ModelReply(tuple(items), reader.text, reader.stop_reason, stop)


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
            body = _as_dict(self.client.chat.completions.create(**request))
            choices = body.get("choices") if isinstance(body, dict) else None
            choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
            message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            text = message.get("content") if isinstance(message.get("content"), str) else ""
            return ModelReply(tuple(openai_calls(body, self.ids)), text, choice.get("finish_reason"))
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
            body = _as_dict(self.client.messages.create(**request))
            content = body.get("content") if isinstance(body, dict) else None
            text = "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                           and isinstance(b.get("text"), str)) if isinstance(content, list) else ""
            return ModelReply(tuple(anthropic_calls(body, self.ids)), text,
                              body.get("stop_reason") if isinstance(body, dict) else None)
        events = self.client.messages.create(stream=True, **request)
        return self._read_stream(AnthropicStream(self.ids), events, _event_frame, _delta_text)

    def answer(self, items: Iterable[ToolCall | Refusal], results: Iterable[ToolResult], text: str = "") -> None:
        turn, answers = anthropic_assistant_message(list(items), self.ids, content=text or None), list(results)
        if turn["content"]:
            self.messages.append(turn)
        if answers:                                   # Anthropic refuses a turn with no content blocks
            self.messages.append(anthropic_tool_results(answers, self.ids))


@contextlib.contextmanager
def _watchdog(seconds: float, close: Callable[[], Any]) -> Iterator[threading.Event]:
    """Close the stream after ``seconds`` even if the SDK yields nothing (pings, comments); the
    event says it fired. The timer is cancelled (and joined) when the block ends."""
    late = threading.Event()

    def fire() -> None:
        late.set()
        close()
    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield late
    finally:
        timer.cancel()
        timer.join()


_STOPPED = "the host stopped reading; nothing in this reply was run"


def _chunk_text(chunk: Any) -> int:
    """Characters of text in one OpenAI stream chunk."""
    return sum(len(getattr(c.delta, "content", None) or "") for c in chunk.choices or ())


def _event_frame(event: Any) -> str:
    """One Anthropic stream event as the SSE text the course's reader takes."""
    return f"event: {event.type}\ndata: {event.to_json(indent=None)}\n\n"


def _delta_text(event: Any) -> int:
    """Characters of text in one Anthropic stream event."""
    return len(getattr(getattr(event, "delta", None), "text", None) or "")


def _past_a_cap(chars: int, argument_bytes: int, late: bool, deadline: float) -> ToolError | None:
    """Why the host stops reading a streamed reply now, or None while it is inside every cap."""
    if chars > MAX_REPLY_TEXT_CHARS:
        return over_cap("$.text", "the reply's text", "MAX_REPLY_TEXT_CHARS", MAX_REPLY_TEXT_CHARS,
                        "characters", _STOPPED)
    if argument_bytes > MAX_REPLY_ARGUMENT_BYTES:
        return over_cap("$.tool_calls", "the reply's call arguments", "MAX_REPLY_ARGUMENT_BYTES",
                        MAX_REPLY_ARGUMENT_BYTES, "bytes", _STOPPED)
    if late:
        return ToolError("timeout", "$", f"the reply was still streaming after {deadline:g} s, the "
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
