"""Chapter 09: the live path through the official SDKs, served recorded bodies by the SDK's own mock transport.

No test needs a key or the internet: every request the SDK builds is answered by ``httpx2.MockTransport``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import toolkit as tk
from toolkit.live import (LiveConfigError, LiveRunError, ModelPolicy, ReplayServer, chat_for, endpoint_from,
                          recording, recording_names, replay_server, run_task)
from course.worlds import CREATE_INVOICE, Books

ROOT = Path(__file__).resolve().parent.parent
VENDORS = ("openai", "anthropic")
TODO = "1. ship the invoice fix\n2. answer Ana\n"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "work" / "notes").mkdir(parents=True)
    (tmp_path / "work" / "notes" / "todo.md").write_text(TODO)
    (tmp_path / "work" / "notes" / "plan.md").write_text("Plan: fix invoices this week.\n")
    (tmp_path / "secret.txt").write_text("planted secret\n")
    return tmp_path / "work"


def invoice_host():
    """create_invoice over a billing world that honours keys; its first answer is lost after the effect."""
    books = Books(orders={"order-7": {"approved": True}}, honour_keys=True)

    def issue(arguments, world):
        answer = world.issue(arguments)
        if not answer.get("replayed"):
            raise tk.ToolFailure(tk.Status.TIMEOUT, "no_answer", "the service did not answer in time",
                                 tk.FailureClass.TIMEOUT)
        return answer
    return tk.Host.of([tk.Tool(CREATE_INVOICE, issue)], tk.Caller().with_scopes("billing.write"), books), books


def run_recording(name, vendor, workspace, stream=False, **options):
    server = replay_server(name, vendor)
    host = tk.Host.of([tk.make_read_file(workspace)])
    chat = chat_for(vendor, server.client(), "recorded-model", [t.contract for t in host.tools.values()],
                    recording(name, vendor)["task"], stream=stream)
    return run_task(chat, host, **options), server


def tool_results(request, vendor):
    """The results the host sent back in one request, as (vendor id, is_error, parsed content)."""
    if vendor == "openai":
        return [(m["tool_call_id"], json.loads(m["content"])["status"] != "succeeded", json.loads(m["content"]))
                for m in request["messages"] if m["role"] == "tool"]
    return [(b["tool_use_id"], b["is_error"], json.loads(b["content"])) for m in request["messages"]
            if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]]


def test_every_recording_exists_for_both_vendors_and_passes_the_sdk_types():
    assert recording_names() == ["hostile_path", "invoice_fresh_key", "invoice_retry",
                                 "parallel_reads", "plain_read", "schema_repair"]
    for name in recording_names():
        for vendor in VENDORS:
            assert len(recording(name, vendor)["responses"]) >= 2     # validated against ChatCompletion / Message


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("stream", [False, True])
def test_a_plain_read_runs_through_the_sdk_and_ends_with_the_answer(vendor, stream, workspace):
    run, server = run_recording("plain_read", vendor, workspace, stream)
    assert run.finished and "two items" in run.answer
    assert [r.status.value for r in run.rounds[0].results] == ["succeeded"]
    (vid, is_error, content), = tool_results(server.requests[1], vendor)
    assert not is_error and content["output"]["content"] == TODO and content["call_id"] == vid
    assert all(r.get("stream", False) is stream for r in server.requests)
    tools = server.requests[0]["tools"]
    assert (tools[0]["function"]["name"] if vendor == "openai" else tools[0]["name"]) == "read_file"


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_hostile_path_is_refused_as_a_structured_result_and_the_model_moves_on(vendor, workspace):
    run, server = run_recording("hostile_path", vendor, workspace)
    first = run.rounds[0].results[0]
    assert first.status is tk.Status.REJECTED and first.reason == "path_refused"
    (vid, is_error, content), = tool_results(server.requests[1], vendor)
    assert is_error and content["status"] == "rejected" and content["errors"][0]["code"] == "path_refused"
    assert "planted secret" not in json.dumps(server.requests)
    assert run.rounds[1].results[0].ok and run.finished


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_schema_error_goes_back_with_its_pointer_and_the_repaired_call_runs(vendor, workspace):
    run, server = run_recording("schema_repair", vendor, workspace)
    (_, is_error, content), = tool_results(server.requests[1], vendor)
    assert is_error and content["failure_class"] == "schema"
    assert {e["code"] for e in content["errors"]} >= {"missing_required"}
    assert run.rounds[1].results[0].ok and run.finished


@pytest.mark.parametrize("vendor", VENDORS)
def test_parallel_reads_are_one_round_answered_under_their_own_ids(vendor, workspace):
    run, server = run_recording("parallel_reads", vendor, workspace)
    assert len(run.rounds) == 1 and [r.ok for r in run.rounds[0].results] == [True, True]
    assert run.rounds[0].waves == [run.rounds[0].vendor_ids]        # two reads of two files: one wave
    answered = tool_results(server.requests[1], vendor)
    asked = run.rounds[0].vendor_ids
    assert [a[0] for a in answered] == asked and len(set(asked)) == 2
    assert [a[2]["output"]["path"] for a in answered] == ["notes/todo.md", "notes/plan.md"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_an_invoice_retried_after_a_timeout_with_the_same_key_makes_one_invoice(vendor):
    host, books = invoice_host()
    server = replay_server("invoice_retry", vendor)
    chat = chat_for(vendor, server.client(), "m", [CREATE_INVOICE], recording("invoice_retry", vendor)["task"])
    run = run_task(chat, host)
    assert [r.results[0].status.value for r in run.rounds] == ["timeout", "succeeded"]
    assert len(books.invoices) == 1 and run.finished
    keys = [json.loads(json.dumps(r.reply.items[0].arguments))["idempotency_key"] for r in run.rounds]
    assert keys[0] == keys[1]


def test_the_round_budget_belongs_to_the_host(workspace):
    run, server = run_recording("hostile_path", "openai", workspace, max_rounds=1)
    assert not run.finished and len(server.requests) == 1
    assert run.lines()[-1] == "no answer: the round budget (1 rounds) ran out"


def flaky(vendor, failures, status=503):
    """A server that fails ``failures`` times, then plays plain_read."""
    import httpx2

    good = ReplayServer(vendor, recording("plain_read", vendor)["responses"])
    seen = []

    def answer(request):
        seen.append(request)
        if len(seen) <= failures:
            return httpx2.Response(status, json={"error": {"type": "overloaded", "message": "busy"}})
        return good(request)
    return httpx2.MockTransport(answer), seen


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_sdk_never_retries_on_its_own_and_the_host_spends_its_budget(vendor, workspace):
    import httpx2
    from toolkit.live import Endpoint, make_client

    transport, seen = flaky(vendor, 1)
    client = make_client(Endpoint(vendor, "m", "http://flaky.invalid/v1", "k"), http_client=httpx2.Client(
        transport=transport))
    host, slept = tk.Host.of([tk.make_read_file(workspace)]), []
    run = run_task(chat_for(vendor, client, "m", [t.contract for t in host.tools.values()], "todo?"), host,
                   retries=1, sleep=slept.append)
    assert run.finished and run.retries_spent == 1 and len(seen) == 3 and len(slept) == 1 and 0 <= slept[0] <= 1
    transport, seen = flaky(vendor, 5)
    client = make_client(Endpoint(vendor, "m", "http://flaky.invalid/v1", "k"), http_client=httpx2.Client(
        transport=transport))
    with pytest.raises(LiveRunError) as failed:
        run_task(chat_for(vendor, client, "m", [], "todo?"), host, retries=2, sleep=slept.append)
    assert len(seen) == 3 and "\n" not in str(failed.value) and "503" in str(failed.value)
    assert "retry budget (2) is spent" in str(failed.value) and len(slept) == 3


def test_a_response_cut_at_its_token_limit_runs_nothing(workspace):
    body = recording("plain_read", "openai")["responses"][0]
    cut = json.loads(json.dumps(body))
    cut["choices"][0]["finish_reason"] = "length"
    server = ReplayServer("openai", [cut, recording("plain_read", "openai")["responses"][1]])
    host = tk.Host.of([tk.make_read_file(workspace)])
    run = run_task(chat_for("openai", server.client(), "m", [t.contract for t in host.tools.values()], "t"), host)
    assert run.rounds[0].results[0].reason == "response_incomplete" and host.log == []
    assert tool_results(server.requests[1], "openai")[0][1] is True


def test_unparseable_arguments_are_answered_and_echoed_raw(workspace):
    body = json.loads(json.dumps(recording("plain_read", "openai")["responses"][0]))
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"path": '
    server = ReplayServer("openai", [body, recording("plain_read", "openai")["responses"][1]])
    host = tk.Host.of([tk.make_read_file(workspace)])
    run_task(chat_for("openai", server.client(), "m", [t.contract for t in host.tools.values()], "t"), host)
    assistant = server.requests[1]["messages"][1]
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"path": '
    assert tool_results(server.requests[1], "openai")[0][0] == assistant["tool_calls"][0]["id"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_model_is_a_policy_for_the_course_loop(vendor, workspace):
    server = replay_server("parallel_reads", vendor)
    host = tk.Host.of([tk.make_read_file(workspace)])
    policy = ModelPolicy(chat_for(vendor, server.client(), "m", [t.contract for t in host.tools.values()], "t"))
    state = tk.evaluate(tk.State("compare"), policy, host)
    assert state.done and [o.kind for o in state.observations] == ["result", "result"]
    assert "invoice fix" in policy.answer
    first = recording("parallel_reads", vendor)["responses"][0]
    asked = ([c["id"] for c in first["choices"][0]["message"]["tool_calls"]] if vendor == "openai"
             else [b["id"] for b in first["content"]])
    assert [a[0] for a in tool_results(server.requests[1], vendor)] == asked


def test_configuration_comes_from_arguments_then_the_environment():
    env = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    assert endpoint_from("openai", "m", environ=env).base_url == "http://127.0.0.1:8000/v1"
    assert endpoint_from("openai", "m", api_key="sk-arg", environ=env).api_key == "sk-arg"
    assert "sk-" not in repr(endpoint_from("openai", "m", environ=env))
    assert endpoint_from("openai", "m", "http://localhost:11434/v1", environ={}).api_key == "local"
    for bad in [dict(vendor="openai", model="m", environ={}), dict(vendor="anthropic", model="m", environ={}),
                dict(vendor="gemini", model="m", environ={}), dict(vendor="openai", model=" ", environ=env),
                dict(vendor="openai", model="m", base_url="ftp://x", environ=env)]:
        with pytest.raises(LiveConfigError) as problem:
            endpoint_from(**bad)
        assert "\n" not in str(problem.value)


def live_cli(*args, env=None):
    full = {"PATH": "/usr/bin:/bin", **(env or {})}
    return subprocess.run([sys.executable, "-m", "toolkit.live", *args], capture_output=True, text=True,
                          cwd=ROOT, env=full, timeout=60)


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_command_replays_a_recording_and_prints_every_round(vendor, workspace):
    done = live_cli("--vendor", vendor, "--workspace", str(workspace), "--replay", "hostile_path", "--stream")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "read_file({\"path\": \"../secret.txt\"}) -> refused (authorization: path_refused) -> rejected" in lines[2]
    assert lines[-1].startswith("recorded answer, not produced from your files: I was not allowed")


def test_a_replay_never_passes_recorded_words_off_as_a_reading_of_your_files(workspace):
    (workspace / "notes" / "todo.md").write_text("1. ship the invoice fix\n")  # not as recorded
    done = live_cli("--vendor", "openai", "--workspace", str(workspace), "--replay", "hostile_path")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if "answer Ana" in line]
    label = "recorded answer, not produced from your files: "
    assert len(said) == 1 and said[0].startswith(label)
    assert not any(line.startswith("answer:") for line in done.stdout.splitlines())
    assert "notes/todo.md\"}) -> allowed -> succeeded" in done.stdout      # the read was real


def test_the_command_exits_1_when_the_rounds_run_out_and_2_on_configuration(workspace):
    out = live_cli("--vendor", "openai", "--workspace", str(workspace), "--replay", "hostile_path",
                   "--max-rounds", "1")
    assert out.returncode == 1 and "round budget" in out.stdout
    for args in (["--vendor", "openai", "--model", "m", "--workspace", str(workspace), "--task", "t"],
                 ["--vendor", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                  "--workspace", str(workspace), "--task", "t"],
                 ["--vendor", "anthropic", "--workspace", str(workspace / "nowhere"), "--replay", "plain_read"],
                 ["--vendor", "openai", "--workspace", str(workspace), "--replay", "no_such"],
                 ["--vendor", "mistral", "--workspace", str(workspace)]):
        failed = live_cli(*args)
        assert failed.returncode == 2, (args, failed.stdout, failed.stderr)
        assert failed.stderr.count("\n") == 1 and failed.stderr.startswith("error: ")
        assert "Traceback" not in failed.stderr


def test_importing_toolkit_and_toolkit_live_loads_no_sdk():
    code = ("import sys, toolkit, toolkit.live; toolkit.live.run_task; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'httpx2', 'mcp')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_stream_cut_before_its_completion_event_runs_nothing(vendor, workspace):
    from course.worlds import fixture

    (workspace / "src").mkdir()
    (workspace / "src" / "config.ts").write_text("export const port = 8080;\n")
    server = ReplayServer(vendor, [fixture(f"{vendor}_stream_cut.txt"),
                                   recording("plain_read", vendor)["responses"][1]])
    host = tk.Host.of([tk.make_read_file(workspace)])
    chat = chat_for(vendor, server.client(), "m", [t.contract for t in host.tools.values()], "t", stream=True)
    run = run_task(chat, host)
    assert [r.reason for r in run.rounds[0].results] == ["stream_incomplete"] and host.log == []
    (_, is_error, content), = tool_results(server.requests[1], vendor)
    assert is_error and content["errors"][0]["code"] == "stream_incomplete" and run.finished


def test_a_reply_cut_with_text_only_is_asked_again_without_an_empty_turn():
    body = json.loads(json.dumps(recording("plain_read", "anthropic")["responses"][1]))
    body["stop_reason"] = "max_tokens"
    server = ReplayServer("anthropic", [body, recording("plain_read", "anthropic")["responses"][1]])
    host = tk.Host.of([])
    run = run_task(chat_for("anthropic", server.client(), "m", [], "t"), host)
    assert run.finished and len(run.rounds) == 1 and run.rounds[0].results == []
    assert all(m["content"] for m in server.requests[1]["messages"])


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("body", [{"choices": "x"}, {"choices": [{"message": ["odd"]}]}, {"content": "text"},
                                  {"content": [{"type": "text", "text": 7}]}, []])
def test_a_server_answering_odd_json_gets_a_refusal_not_a_crash(vendor, body, workspace):
    server = ReplayServer(vendor, [body])
    host = tk.Host.of([tk.make_read_file(workspace)])
    run = run_task(chat_for(vendor, server.client(), "m", [t.contract for t in host.tools.values()], "t"), host,
                   max_rounds=1)
    assert not run.finished and host.log == []
    assert all(r is None or r.status is tk.Status.REJECTED for r in run.rounds[0].results)
