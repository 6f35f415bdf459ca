"""Chapter 09: the live path against a real HTTP server: a small OpenAI-compatible one on 127.0.0.1.

It speaks ``POST /v1/chat/completions`` like a local Ollama, vLLM or llama.cpp server would, answering from a
script of recorded bodies (streamed as server-sent events when the request asks), and it stops when the test ends.
"""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from processes import reply, serving

import toolkit as tk
from toolkit.live import chat_for, endpoint_from, make_client, recording, run_task, sse_body

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def compatible_server(responses):
    """An OpenAI-compatible server on a free port; yields (base_url, received request bodies)."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            received.append(body)
            if self.path != "/v1/chat/completions" or len(received) > len(responses):
                reply(self, 404 if self.path != "/v1/chat/completions" else 500,
                      b'{"error": {"message": "no such route or no more responses"}}')
                return
            answer = responses[len(received) - 1]
            stream = body.get("stream", False)
            data = sse_body("openai", answer).encode() if stream else json.dumps(answer).encode()
            reply(self, 200, data, "text/event-stream" if stream else "application/json")

        def log_message(self, *args):
            pass

    with serving(Handler) as url:
        yield url, received


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_text("1. ship the invoice fix\n2. answer Ana\n")
    return tmp_path


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_sdk_runs_the_loop_against_a_local_compatible_server(stream, workspace):
    with compatible_server(recording("hostile_path", "openai")["responses"]) as (base_url, received):
        endpoint = endpoint_from("openai", "local-model", base_url, environ={})    # a local server takes any key
        host = tk.Host.of([tk.make_read_file(workspace)])
        chat = chat_for("openai", make_client(endpoint), "local-model", [t.contract for t in host.tools.values()],
                        "read ../secret.txt or the todo list", stream=stream)
        run = run_task(chat, host)
    assert run.finished and [r.results[0].status.value for r in run.rounds] == ["rejected", "succeeded"]
    assert len(received) == 3 and all(r["model"] == "local-model" for r in received)
    refused = [m for m in received[1]["messages"] if m["role"] == "tool"]
    assert json.loads(refused[0]["content"])["errors"][0]["code"] == "path_refused"


def test_the_server_context_manager_stops_its_server():
    with compatible_server([]) as (base_url, _):
        pass
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    import socket
    with socket.socket() as probe:
        probe.settimeout(1)
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_the_command_runs_against_the_local_server_and_a_404_is_one_line(workspace):
    responses = recording("plain_read", "openai")["responses"]
    with compatible_server(responses) as (base_url, _):
        done = subprocess.run([sys.executable, "-m", "toolkit.live", "--vendor", "openai", "--base-url", base_url,
                               "--model", "local-model", "--workspace", str(workspace), "--task", "todo?"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("answer: Your todo list")
    with compatible_server(responses) as (base_url, _):
        wrong = subprocess.run([sys.executable, "-m", "toolkit.live", "--vendor", "openai", "--base-url",
                                base_url.removesuffix("/v1"), "--model", "m", "--workspace", str(workspace),
                                "--task", "t"], capture_output=True, text=True, cwd=ROOT, timeout=60,
                               env={"PATH": "/usr/bin:/bin"})
    assert wrong.returncode == 2 and "404" in wrong.stderr and wrong.stderr.count("\n") == 1
