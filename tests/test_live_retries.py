"""Chapter 09: a busy endpoint, through the official openai SDK: the host waits what chapter 06's controller decides.

A scripted HTTP server on 127.0.0.1 answers 429 (once with ``Retry-After``) before a valid chat completion, or
429 for ever. The SDK never retries on its own; the host's controller draws each wait (full jitter, seeded),
waits at least what ``Retry-After`` asks, and escalates with one line when its budget is spent. ``sleep`` is
``list.append``, so the test records the waits instead of sleeping them.
"""
from __future__ import annotations

import contextlib
import json
import socket
from http.server import BaseHTTPRequestHandler

import pytest
from processes import reply, serving

import toolkit as tk
from toolkit.kernel import Jitter, RetryPolicy
from course.worlds.waits import plan
from toolkit.live import LiveRunError, chat_for, endpoint_from, make_client, run_task
from toolkit._caps import MAX_RETRY_AFTER

pytest.importorskip("openai")

COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "local-model",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "Nothing to do: the list is empty."}}],
              "usage": {"prompt_tokens": 9, "completion_tokens": 8, "total_tokens": 17}}
BUSY = (429, {}, {"error": {"type": "rate_limit_exceeded", "message": "slow down"}})


@contextlib.contextmanager
def scripted_server(script, then=None):
    """A chat-completions endpoint on a free port answering ``script`` in order, then ``then`` for ever.

    Each entry is ``(status, headers, body)``. Yields ``(base_url, paths of the requests received)``.
    """
    received: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            self.rfile.read(int(self.headers.get("content-length", 0)))
            received.append(self.path)
            status, headers, body = script[len(received) - 1] if len(received) <= len(script) else then
            reply(self, status, json.dumps(body).encode(), **headers)

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        yield url, received


def ask(base_url, retries, slept):
    """One run through the openai SDK (as toolkit.live drives it), its waits recorded in ``slept``."""
    client = make_client(endpoint_from("openai", "local-model", base_url, environ={}), timeout=10)
    chat = chat_for("openai", client, "local-model", [], "anything on my list?")
    return run_task(chat, tk.Host.of([]), retries=retries, sleep=slept.append)


def controller_waits(retries, seed=1):
    """The waits chapter 06's controller draws for the first request of a run (seed 0 + round 1)."""
    return plan(RetryPolicy(d0=1.0, beta=2.0, n_max=retries, jitter=Jitter.FULL), seed=seed)


def test_two_429s_wait_what_the_controller_decides_and_honour_retry_after():
    script = [BUSY, (429, {"retry-after": "3"}, BUSY[2]), (200, {}, COMPLETION)]
    slept: list[float] = []
    with scripted_server(script) as (base_url, received):
        run = ask(base_url, 2, slept)
    drawn = controller_waits(2)
    assert run.finished and run.answer == "Nothing to do: the list is empty." and run.retries_spent == 2
    assert received == ["/v1/chat/completions"] * 3                 # the SDK itself retried nothing
    assert slept[0] == drawn[0] and 0 <= drawn[0] <= 1               # full jitter under d = 1 s
    assert drawn[1] <= 2 < 3 == slept[1]                             # Retry-After: 3 is the least it waits


def test_429_for_ever_spends_the_budget_and_escalates():
    slept: list[float] = []
    with scripted_server([], then=BUSY) as (base_url, received):
        with pytest.raises(LiveRunError) as stopped:
            ask(base_url, 3, slept)
    line = str(stopped.value)
    assert len(received) == 4 and slept == controller_waits(3)       # 1 request + 3 retries, then no more
    assert "\n" not in line and "429" in line and "escalating after 3 retries" in line
    assert "retry budget (3) is spent" in line


def test_a_retry_after_longer_than_the_host_waits_escalates_at_once():
    slept: list[float] = []
    with scripted_server([], then=(429, {"retry-after": "3600"}, BUSY[2])) as (base_url, received):
        with pytest.raises(LiveRunError) as stopped:
            ask(base_url, 3, slept)
    assert len(received) == 1 and slept == []
    assert f"more than the host's {MAX_RETRY_AFTER:g}s" in str(stopped.value)


def test_a_dropped_connection_backs_off_too():
    with socket.socket() as free:                 # a port nothing listens on: every request is refused
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    slept: list[float] = []
    with pytest.raises(LiveRunError) as stopped:
        ask(f"http://127.0.0.1:{port}/v1", 2, slept)
    assert slept == controller_waits(2) and "cannot reach" in str(stopped.value)
