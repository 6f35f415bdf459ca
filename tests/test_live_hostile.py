"""Chapter 09: a model server that lies, and a reply read whole: the caps and deadline of a stream.

The scripted server (``tests/hostile_model_server.py``) runs on 127.0.0.1 for each test and stops
with it. Without streaming, the host reads the body itself, so a whole reply meets what a streamed
one meets (``toolkit._caps``): its text, its calls' arguments, its number of calls, its body
(``MAX_REPLY_BODY_BYTES``) and the reply deadline. Past any of them nothing in the reply runs and
the run stops with one ``stopped:`` line (exit 4), its memory bounded by the cap, not the server.
A 429 flood waits what chapter 06's controller decides, at least the ``Retry-After`` (up to
``MAX_RETRY_AFTER``), and escalates when its budget is spent.
"""
from __future__ import annotations

import json
import time
import tracemalloc

import pytest
from hostile_model_server import (busy, dribble, flood, hostile_model, huge, reply_body, silent,
                                  text_head)
from hostile_model_server import body as whole

import toolkit as tk
from course.worlds.waits import plan
from toolkit._caps import (MAX_ARGUMENT_BYTES, MAX_OPEN_CALLS, MAX_REPLY_BODY_BYTES,
                           MAX_REPLY_TEXT_CHARS, MAX_RETRY_AFTER)
from toolkit.kernel import Jitter, RetryPolicy
from toolkit.live import LiveRunError, chat_for, endpoint_from, make_client, run_task

pytest.importorskip("openai")
pytest.importorskip("anthropic")

VENDORS = ("openai", "anthropic")
NOTE = tk.Contract("note", "Keep a note.",
                   {"type": "object", "properties": {"text": {"type": "string"}}})
AIM_BYTES = 50_000_000


def run_against(url, vendor, *, stream=False, retries=0, sleep=time.sleep, **options):
    """(run, the notes the tool kept, seconds, peak traced bytes) of one run_task at ``url``."""
    base = url if vendor == "openai" else url[:-len("/v1")]
    client = make_client(endpoint_from(vendor, "m", base, environ={}), timeout=120)
    kept = []
    host = tk.Host.of([tk.Tool(NOTE, lambda arguments, world: kept.append(arguments) or "kept")])
    chat = chat_for(vendor, client, "m", [NOTE], "t", stream=stream, **options)
    tracemalloc.start()
    began = time.monotonic()
    try:
        run = run_task(chat, host, retries=retries, sleep=sleep, max_rounds=2)
        return run, kept, time.monotonic() - began, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        client.close()


def stopped_at(run, cap_name):
    assert run.stop is not None, run.lines()
    assert cap_name in run.stop.message and run.exit_status == 4
    assert run.outcome() == [f"stopped: {run.stop.line()}"] and run.rounds == []


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_huge_body_is_stopped_at_its_cap_with_memory_bounded(vendor):
    head, tail = text_head(vendor)
    with hostile_model(huge(head, "x" * 65_536, tail)) as (url, sent, _):
        run, kept, seconds, peak = run_against(url, vendor)
    stopped_at(run, "MAX_REPLY_BODY_BYTES")
    assert run.stop.code == "too_large" and run.stop.pointer == "$"
    assert sent[0] > MAX_REPLY_BODY_BYTES                   # the server really sent past the cap
    assert peak < AIM_BYTES, peak                           # bounded by the cap, not the server
    assert kept == [] and seconds < 120


def _calls(n, size):
    return [("note", json.dumps({"text": "a" * size}))] * n


OVER = {   # a whole reply over one cap, each call in it legal on its own
    "text": (lambda vendor: reply_body(vendor, "x" * (MAX_REPLY_TEXT_CHARS + 1)), "$.text",
             "MAX_REPLY_TEXT_CHARS"),
    "arguments": (lambda vendor: reply_body(vendor, "", _calls(5, MAX_ARGUMENT_BYTES - 100)),
                  "$.tool_calls", "MAX_REPLY_ARGUMENT_BYTES"),
    "calls": (lambda vendor: reply_body(vendor, "", _calls(MAX_OPEN_CALLS + 1, 2)), "$.tool_calls",
              "MAX_OPEN_CALLS"),
}


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("over", sorted(OVER))
def test_a_whole_reply_over_a_cap_runs_nothing(vendor, over):
    build, pointer, cap_name = OVER[over]
    data = build(vendor)
    assert len(json.dumps(data)) < MAX_REPLY_BODY_BYTES          # inside the body's cap
    with hostile_model(whole(data)) as (url, sent, _):
        run, kept, _, _ = run_against(url, vendor)
    stopped_at(run, cap_name)
    assert run.stop.pointer == pointer and kept == [] and len(sent) == 1


def test_a_streamed_and_a_whole_reply_meet_one_cap():
    """One table of caps: the text cap stops both ways of reading with the same line."""
    def chunk(n):
        delta = {"choices": [{"index": 0, "delta": {"content": "x" * 4096}, "finish_reason": None}],
                 "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        return f"data: {json.dumps(delta)}\n\n"
    with hostile_model(flood(chunk)) as (url, _, _):
        streamed = run_against(url, "openai", stream=True)[0]
    with hostile_model(whole(OVER["text"][0]("openai"))) as (url, _, _):
        read_whole = run_against(url, "openai")[0]
    assert streamed.stop is not None and read_whole.stop is not None
    assert streamed.stop.line() == read_whole.stop.line()
    assert "(MAX_REPLY_TEXT_CHARS)" in read_whole.stop.line()


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("how, stream", [("dribbles", False), ("is silent", False),
                                         ("is silent", True)])
def test_a_body_that_never_ends_is_stopped_at_the_reply_deadline(vendor, how, stream):
    """A silent body (the headers, then nothing) ends only when the host shuts its socket: closing
    the response alone leaves a read blocked until the SDK's own timeout (120 s here)."""
    data = reply_body(vendor, "y" * 2000)      # a byte every 50 ms: the body would take 100 s
    with hostile_model(dribble(data, 0.05) if how == "dribbles" else silent()) as (url, sent, _):
        run, kept, seconds, _ = run_against(url, vendor, stream=stream, deadline=3.0)
    stopped_at(run, "REPLY_DEADLINE")
    assert run.stop.code == "timeout" and 3.0 <= seconds < 60, seconds
    assert sent[0] < len(json.dumps(data))


def controller_waits(retries):
    """The waits chapter 06's controller draws for a run's first request (seed 0 + round 1)."""
    return plan(RetryPolicy(d0=1.0, beta=2.0, n_max=retries, jitter=Jitter.FULL), seed=1)


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_429_flood_waits_what_the_controller_decides_then_escalates(vendor):
    slept: list[float] = []
    with hostile_model(busy("2")) as (url, sent, _):
        with pytest.raises(LiveRunError) as stopped:
            run_against(url, vendor, retries=3, sleep=slept.append)
    line = str(stopped.value)
    assert len(sent) == 4                                          # 1 request + 3 retries, no more
    assert slept == [max(wait, 2.0) for wait in controller_waits(3)]  # at least the Retry-After
    assert "\n" not in line and "429" in line and "escalating after 3 retries" in line


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_429_asking_for_more_than_the_host_waits_escalates_at_once(vendor):
    slept: list[float] = []
    with hostile_model(busy(f"{MAX_RETRY_AFTER + 1:g}")) as (url, sent, _):
        with pytest.raises(LiveRunError) as stopped:
            run_against(url, vendor, retries=3, sleep=slept.append)
    assert len(sent) == 1 and slept == []
    assert f"more than the host's {MAX_RETRY_AFTER:g}s" in str(stopped.value)
