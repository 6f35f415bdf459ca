"""Chapter 09: the live loop holds when a model misbehaves, and keeps chapter 06's retry rule.

* A model that retries a timed-out ``create_invoice`` under a new key is refused while the first
  outcome is unknown, in ``run_task`` (with and without a ledger), in the kernel's ``evaluate`` and
  through ``McpHost``: one invoice. The rule lives in one place, ``toolkit.kernel.Host.execute``.
* A reply that streams for ever, floods text or floods call arguments is stopped at a cap of
  ``toolkit._caps`` (or the reply deadline) with one structured ``stopped:`` line, and memory stays
  bounded. The scripted model server runs on 127.0.0.1; what ends each stream is the host's cap,
  and the test's own bound is generous.
* A model that answers without calling anything is reported as such, by ``LiveRun`` and the command.
"""
from __future__ import annotations

import contextlib
import io
import json
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler

import pytest
from processes import reply, serving

import toolkit as tk
from course.worlds import ScriptedPolicy
from toolkit._caps import MAX_ARGUMENT_BYTES, MAX_REPLY_ARGUMENT_BYTES, MAX_REPLY_TEXT_CHARS
from toolkit.live import (ModelPolicy, chat_for, endpoint_from, live_command, make_client,
                          recording, replay_server, run_task)
from toolkit.live.session import NO_CALL
from course.worlds import CREATE_INVOICE
from test_live import invoice_host

pytest.importorskip("openai")

VENDORS = ("openai", "anthropic")
ORDER = {"order_id": "order-7", "amount": 120, "currency": "EUR"}


def invoice(call_id, key):
    return tk.request("create_invoice", {**ORDER, "idempotency_key": key}, call_id=call_id)


# ------------------------------------------------------------------ the retry rule, in every loop
@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("with_ledger", [False, True])
def test_run_task_refuses_a_retry_under_a_new_key_after_a_timeout(vendor, with_ledger):
    host, books = invoice_host()
    server = replay_server("invoice_fresh_key", vendor)
    task = recording("invoice_fresh_key", vendor)["task"]
    chat = chat_for(vendor, server.client(), "m", [CREATE_INVOICE], task)
    run = run_task(chat, host, tk.MemoryLedger() if with_ledger else None)
    keys = [r.reply.items[0].arguments["idempotency_key"] for r in run.rounds]
    assert keys == ["order-7-invoice-1", "order-7-invoice-2", "order-7-invoice-1"]
    first, fresh, again = (r.results[0] for r in run.rounds)
    assert first.status is tk.Status.TIMEOUT
    assert fresh.status is tk.Status.REJECTED and fresh.errors[0].code == "outcome_unknown"
    assert [fresh.errors[0].expected, fresh.errors[0].received] == keys[:2]
    assert again.ok is (not with_ledger)      # a ledger keeps the unknown claim: not run again
    assert len(books.invoices) == 1 and run.finished
    sent = json.dumps(server.requests[2])     # the refusal went back to the model under its own id
    assert "new_proposal_while_unknown" in sent and "outcome_unknown" in sent


@pytest.mark.parametrize("with_ledger", [False, True])
def test_evaluate_refuses_a_retry_under_a_new_key_after_a_timeout(with_ledger):
    host, books = invoice_host()
    policy = ScriptedPolicy([invoice("c1", "k-1"), invoice("c2", "k-2"), invoice("c3", "k-1")])
    ledger = tk.MemoryLedger() if with_ledger else None
    state = tk.evaluate(tk.State("invoice order-7"), policy, host, ledger)
    statuses = [o.result.status for o in state.observations]
    assert statuses[:2] == [tk.Status.TIMEOUT, tk.Status.REJECTED]
    assert state.observations[1].result.reason == "new_proposal_while_unknown"
    assert len(books.invoices) == 1


def test_the_original_key_settles_the_outcome_and_frees_other_keys():
    host, books = invoice_host()
    results = [host.execute(invoice("c1", "k-1")), host.execute(invoice("c2", "k-1")),
               host.execute(invoice("c3", "k-2"))]
    assert [r.status.value for r in results] == ["timeout", "succeeded", "timeout"]
    assert len(books.invoices) == 2 and host.unknown     # known once asked: k-2 is a deliberate act
    other = tk.request("create_invoice", {**ORDER, "order_id": "order-8", "idempotency_key": "k-9"},
                       call_id="c4")
    assert host.execute(other).reason != "new_proposal_while_unknown"   # another order


def test_the_model_as_a_policy_is_refused_too():
    host, books = invoice_host()
    client = replay_server("invoice_fresh_key", "openai").client()
    chat = chat_for("openai", client, "m", [CREATE_INVOICE], "t")
    state = tk.evaluate(tk.State("t"), ModelPolicy(chat), host)
    assert [o.result.status.value for o in state.observations] == ["timeout", "rejected",
                                                                    "succeeded"]
    assert len(books.invoices) == 1


class _TimingOutServer:
    """An MCP connection stand-in: one tool, ``pay``, whose first answer per key is lost."""

    def __init__(self):
        import mcp.types as types
        self.types, self.paid = types, []

    def tools(self):
        text = {"type": "string"}
        schema = {"type": "object", "properties": {"order": text, "key": text},
                  "required": ["order", "key"]}
        return [self.types.Tool(name="pay", description="pay an order", input_schema=schema)]

    def call(self, name, arguments):
        seen = any(p["key"] == arguments["key"] for p in self.paid)
        if not seen:
            self.paid.append(dict(arguments))
            raise TimeoutError
        return self.types.CallToolResult(content=[self.types.TextContent(type="text", text="paid")])


def test_mcp_host_refuses_a_retry_under_a_new_key_after_a_timeout():
    pytest.importorskip("mcp.types")
    from toolkit.mcp import McpHost, Trust

    server = _TimingOutServer()
    host = McpHost(server, Trust(idempotency_fields={"pay": "key"}))
    first = host.call("pay", {"order": "o-1", "key": "k-1"}, call_id="c1")
    fresh = host.call("pay", {"order": "o-1", "key": "k-2"}, call_id="c2")
    assert first.status is tk.Status.TIMEOUT
    assert fresh.status is tk.Status.REJECTED and fresh.reason == "new_proposal_while_unknown"
    assert len(server.paid) == 1 and host.sent == ["pay"]


# ----------------------------------------------------------- replies that would hold the loop
def _chunk(delta, finish=None):
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [choice]}
    return f"data: {json.dumps(body)}\n\n"


@contextlib.contextmanager
def endless_server(event):
    """A chat-completions endpoint streaming ``event(n)``, n = 0, 1, ..., till the client leaves."""
    stop, sent = threading.Event(), []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            n = 0
            try:
                while not stop.is_set():
                    self.wfile.write(event(n).encode())
                    n += 1
                    sent.append(n)
            except OSError:        # the client closed the stream
                pass

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        try:
            yield url, sent
        finally:
            stop.set()


def run_against(url, stream=True, **options):
    client = make_client(endpoint_from("openai", "m", url, environ={}), timeout=120)
    try:
        contracts = [tk.make_read_file(".").contract]
        chat = chat_for("openai", client, "m", contracts, "t", stream=stream, **options)
        return run_task(chat, tk.Host.of([tk.make_read_file(".")]), retries=0)
    finally:
        client.close()


def bounded(url, **options):
    """(run, seconds, peak traced bytes) for one run against ``url``."""
    tracemalloc.start()
    began = time.monotonic()
    try:
        run = run_against(url, **options)
        return run, time.monotonic() - began, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_flood_of_text_is_stopped_at_its_cap_with_memory_bounded():
    with endless_server(lambda n: _chunk({"content": "x" * 4096})) as (url, sent):
        run, seconds, peak = bounded(url)
    assert run.stop is not None and run.stop.code == "too_large"
    assert "MAX_REPLY_TEXT_CHARS" in run.stop.message
    assert not run.finished and run.exit_status == 4 and run.outcome()[0].startswith("stopped: ")
    assert 4096 * len(sent) >= MAX_REPLY_TEXT_CHARS           # the server really sent past the cap
    assert peak < 40 * MAX_REPLY_TEXT_CHARS, peak             # bounded by the cap, not the server
    assert seconds < 300


def test_a_flood_of_call_arguments_is_stopped_at_its_cap():
    piece = "a" * 4096

    def event(n):            # calls of just under MAX_ARGUMENT_BYTES each, one after another
        index, within = divmod(n, MAX_ARGUMENT_BYTES // 4096 - 1)
        if within == 0:
            opened = {"name": "read_file", "arguments": '{"path": "'}
            call = {"index": index, "id": f"call_{index}", "type": "function", "function": opened}
            return _chunk({"tool_calls": [call]})
        return _chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    with endless_server(event) as (url, sent):
        run, seconds, peak = bounded(url)
    assert run.stop is not None and "MAX_REPLY_ARGUMENT_BYTES" in run.stop.message
    assert run.exit_status == 4
    assert 4096 * len(sent) >= MAX_REPLY_ARGUMENT_BYTES and peak < 40 * MAX_REPLY_ARGUMENT_BYTES
    assert run.rounds == []                                    # nothing in the stopped reply ran


def test_a_stream_that_never_ends_is_stopped_at_the_reply_deadline():
    def event(n):
        time.sleep(0.05)     # an empty delta now and then: never text, never a finish
        return _chunk({})
    with endless_server(event) as (url, sent):
        run, seconds, _ = bounded(url, deadline=3.0)
    assert run.stop is not None and run.stop.code == "timeout"
    assert "REPLY_DEADLINE" in run.stop.message
    assert 3.0 <= seconds < 120 and len(sent) > 1


# ------------------------------------------------------------------ an answer with no call
SAID = "I read src/config.ts: the port is 9999."
CLAIM = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
         "choices": [{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": SAID}}],
         "usage": {"prompt_tokens": 9, "completion_tokens": 8, "total_tokens": 17}}


@contextlib.contextmanager
def claiming_server():
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            self.rfile.read(int(self.headers.get("content-length", 0)))
            reply(self, 200, json.dumps(CLAIM).encode())

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        yield url


def test_an_answer_without_a_call_says_nothing_was_read(tmp_path):
    with claiming_server() as url:
        run = run_against(url, stream=False)
        out, err = io.StringIO(), io.StringIO()
        status = live_command(["--vendor", "openai", "--base-url", url, "--model", "m",
                               "--workspace", str(tmp_path), "--task", "which port?"], out, err)
    assert run.finished and not run.called and run.exit_status == 3
    assert run.outcome() == [NO_CALL, f"answer: {SAID}"]
    assert status == 3 and out.getvalue().splitlines() == run.outcome() and err.getvalue() == ""


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_stream_of_events_the_sdk_skips_is_stopped_at_the_reply_deadline(vendor):
    """Anthropic's SDK skips ``ping`` events and both skip SSE comments: nothing reaches the loop,
    so only the host's watchdog can end the reply."""
    def event(n):
        time.sleep(0.05)
        ping = 'event: ping\ndata: {"type": "ping"}\n\n'
        return ping if vendor == "anthropic" else ": keepalive\n\n"
    with endless_server(event) as (url, sent):
        base = url if vendor == "openai" else url[:-len("/v1")]
        client = make_client(endpoint_from(vendor, "m", base, environ={}), timeout=120)
        began = time.monotonic()
        try:
            chat = chat_for(vendor, client, "m", [], "t", stream=True, deadline=3.0)
            run = run_task(chat, tk.Host.of([]), retries=0)
        finally:
            client.close()
        seconds = time.monotonic() - began
    assert run.stop is not None and run.stop.code == "timeout" and run.exit_status == 4
    assert 3.0 <= seconds < 120 and len(sent) > 1


def test_the_command_and_the_policy_report_a_stopped_reply(tmp_path):
    with endless_server(lambda n: _chunk({"content": "x" * 4096})) as (url, sent):
        out, err = io.StringIO(), io.StringIO()
        status = live_command(["--vendor", "openai", "--base-url", url, "--model", "m", "--stream",
                               "--workspace", str(tmp_path), "--task", "t"], out, err)
        client = make_client(endpoint_from("openai", "m", url, environ={}), timeout=120)
        try:
            chat = chat_for("openai", client, "m", [tk.make_read_file(tmp_path).contract], "t",
                            stream=True)
            policy = ModelPolicy(chat)
            state = tk.evaluate(tk.State("t"), policy, tk.Host.of([tk.make_read_file(tmp_path)]))
        finally:
            client.close()
    assert status == 4 and err.getvalue() == ""
    assert out.getvalue().splitlines()[-1].startswith("stopped: $.text: ")
    assert state.done and state.observations == () and policy.answer == ""
    assert policy.stop is not None and policy.stop.code == "too_large"
