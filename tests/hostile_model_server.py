"""Chapter 09's tests: a model server that lies, on 127.0.0.1, started and stopped by the test.

``hostile_model(answer)`` serves both vendors' endpoints (``/v1/chat/completions``,
``/v1/messages``) from a thread; ``answer(handler, n)`` answers the n-th request (from 0) however it
likes. The answers below are what a hostile or broken server sends, written piece by piece so the
server itself holds no more than one piece (a test measures the host's memory, not the server's):

    body(data)                 a whole JSON body, as a real endpoint sends it
    huge(head, piece, tail)    head, then ``piece`` over and over (64 MB), then tail
    dribble(data, every)       the body one byte at a time, one every ``every`` seconds
    silent()                   the headers, then nothing until the test ends
    busy(retry_after)          429, "slow down", with a ``Retry-After`` header
    flood(event)               an endless stream of server-sent events

Every answer ends when the client hangs up or the test's block ends; ``sent`` counts the bytes
each request was sent.
"""
from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Callable, Iterator

from processes import reply, serving

OFFERED = 64 * 1024 * 1024      # what ``huge`` sends when nothing stops it


@contextlib.contextmanager
def hostile_model(answer: Callable[[BaseHTTPRequestHandler, int], None]
                  ) -> Iterator[tuple[str, list[int], threading.Event]]:
    """(base URL ending in /v1, bytes sent per request, the event that ends every answer)."""
    over, sent, lock = threading.Event(), [], threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            self.rfile.read(int(self.headers.get("content-length", 0)))
            with lock:
                number = len(sent)
                sent.append(0)
            self.over, self.number, self.sent = over, number, sent
            try:
                answer(self, number)
            except OSError:          # the client hung up
                pass

        def write(self, data: bytes) -> None:
            self.wfile.write(data)
            self.sent[self.number] += len(data)

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        try:
            yield url, sent, over
        finally:
            over.set()


def _head(handler, length: int | None = None, content_type: str = "application/json") -> None:
    handler.send_response(200)
    handler.send_header("content-type", content_type)
    if length is not None:
        handler.send_header("content-length", str(length))
    handler.end_headers()


def body(data: dict) -> Callable:
    text = json.dumps(data).encode()

    def answer(handler, n):
        _head(handler, len(text))
        handler.write(text)
    return answer


def huge(head: str, piece: str, tail: str, offered: int = OFFERED) -> Callable:
    head_bytes, piece_bytes, tail_bytes = head.encode(), piece.encode(), tail.encode()
    count = offered // len(piece_bytes)

    def answer(handler, n):
        _head(handler, len(head_bytes) + count * len(piece_bytes) + len(tail_bytes))
        handler.write(head_bytes)
        for _ in range(count):
            if handler.over.is_set():
                return
            handler.write(piece_bytes)
        handler.write(tail_bytes)
    return answer


def dribble(data: dict, every: float) -> Callable:
    text = json.dumps(data).encode()

    def answer(handler, n):
        _head(handler, len(text))
        for i in range(len(text)):
            if handler.over.wait(every):
                return
            handler.write(text[i:i + 1])
            handler.wfile.flush()
    return answer


def silent() -> Callable:
    def answer(handler, n):
        _head(handler, 1000)
        handler.wfile.flush()
        handler.over.wait(600)
    return answer


def busy(retry_after: str) -> Callable:
    said = json.dumps({"type": "error", "error": {"type": "rate_limit_error",
                                                   "message": "slow down"}}).encode()

    def answer(handler, n):
        reply(handler, 429, said, **{"retry-after": retry_after})
    return answer


def flood(event: Callable[[int], str]) -> Callable:
    def answer(handler, n):
        _head(handler, None, "text/event-stream")
        i = 0
        while not handler.over.is_set():
            handler.write(event(i).encode())
            i += 1
    return answer


def completion(content: str = "", calls: list[tuple[str, str]] = (), finish: str = "stop") -> dict:
    """An OpenAI chat completion: ``content`` and calls of (name, arguments as JSON text)."""
    message = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                                  "function": {"name": name, "arguments": arguments}}
                                 for i, (name, arguments) in enumerate(calls)]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else finish,
                         "message": message}]}


def message(content: str = "", calls: list[tuple[str, str]] = (), stop: str = "end_turn") -> dict:
    """An Anthropic message: ``content`` as one text block, calls of (name, input as JSON text)."""
    blocks = [{"type": "text", "text": content}] if content else []
    blocks += [{"type": "tool_use", "id": f"toolu_{i}", "name": name,
                "input": json.loads(arguments)} for i, (name, arguments) in enumerate(calls)]
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": blocks,
            "stop_reason": "tool_use" if calls else stop, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def reply_body(vendor: str, content: str = "", calls: list[tuple[str, str]] = ()) -> dict:
    """A whole reply in ``vendor``'s wire format."""
    return completion(content, calls) if vendor == "openai" else message(content, calls)


def text_head(vendor: str) -> tuple[str, str]:
    """The JSON before and after a reply's text, so ``huge`` can send text of any length."""
    marker = "\u0000"
    whole = json.dumps(reply_body(vendor, marker))
    head, tail = whole.split(json.dumps(marker)[1:-1])
    return head, tail
