"""Chapters 01, 08 and 09: the packaged model (SmolLM2-135M, run by llama.cpp here) in a scene.

``model_session()`` starts llama.cpp's OpenAI-compatible server with the packaged model
(``toolkit.live.local_model``) for one notebook section and yields a ``ModelSession``; leaving the
block stops it. Every request goes through the official ``openai`` SDK by the path chapter 09 takes
with a hosted model (``make_client``, ``for_llama_cpp``, ``with_tool_choice``, ``chat_for``): only
the endpoint differs. The session adds what keeps a small model's time short and its words
repeatable on one machine: temperature 0 (greedy) and a small ``max_tokens``.

``model_missing()`` says why the packaged model cannot run here (``None`` when it can), so a chapter
can say so and go on. Where the model must run (``REQUIRE_MODEL=1``, or ``CI=true``) a missing model
raises instead: such a run never passes by skipping it.
"""
from __future__ import annotations

import functools
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from toolkit.kernel import Contract
from toolkit.live import (Endpoint, LiveConfigError, OpenAIChat, chat_for, for_llama_cpp,
                          local_model, make_client, packaged_model, with_tool_choice)

#: The most tokens one reply may bring: a call's arguments fit; a small model's prose stops early.
REPLY_TOKENS = 64
#: Seconds the SDK waits for one reply: a small model on a busy two-core machine may need a minute.
REPLY_SECONDS = 120.0


def model_required(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this run must use the packaged model: ``REQUIRE_MODEL=1``, or ``CI=true``."""
    env = os.environ if environ is None else environ
    return env.get("REQUIRE_MODEL") == "1" or env.get("CI") == "true"


def model_missing(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the packaged model cannot run here, or None; ``LiveConfigError`` where it must run."""
    try:
        packaged_model()
    except LiveConfigError as problem:
        if model_required(environ):
            raise LiveConfigError(f"REQUIRE_MODEL=1 (or CI), but {problem}") from None
        return str(problem)
    return None


@dataclass(frozen=True)
class ModelSession:
    """The packaged model's server, reached through the official SDK; ``choice``: a tool_choice."""

    endpoint: Endpoint
    max_tokens: int = REPLY_TOKENS

    def client(self, choice: str | None = None, tools: Sequence[str] = ()) -> Any:
        """An ``openai`` client for the server: greedy, ``max_tokens`` short, sending ``choice``."""
        client = with_tool_choice(for_llama_cpp(make_client(self.endpoint, timeout=REPLY_SECONDS)),
                                  "openai", choice, list(tools), local=True)
        resource = client.chat.completions
        resource.create = functools.partial(resource.create, temperature=0,
                                            max_tokens=self.max_tokens)
        client.models.list()      # the SDK opens its own files on a first request: before a witness
        return client

    def chat(self, contracts: Sequence[Contract], task: str, *, choice: str | None = None,
             stream: bool = False) -> OpenAIChat:
        """Chapter 09's conversation (``chat_for``) with the packaged model, about ``task``."""
        client = self.client(choice, [c.name for c in contracts])
        return chat_for("openai", client, self.endpoint.model, contracts, task, stream=stream)

    def stream_lines(self, contracts: Sequence[Contract], task: str, choice: str) -> Iterator[str]:
        """The lines of one streamed reply exactly as the server sent them (server-sent events).

        The request is the one ``chat(...).ask()`` sends with ``stream=True``; the SDK's
        ``with_streaming_response`` hands over the raw lines instead of parsed chunks."""
        chat = self.chat(contracts, task, choice=choice, stream=True)
        raw = chat.client.chat.completions.with_streaming_response
        with raw.create(model=chat.model, messages=chat.messages, tools=chat.tools(),
                        stream=True) as response:
            yield from response.iter_lines()


@contextmanager
def model_session(max_tokens: int = REPLY_TOKENS) -> Iterator[ModelSession]:
    """Serve the packaged model on 127.0.0.1 for the block, yield a ``ModelSession``, stop it."""
    with local_model() as endpoint:
        yield ModelSession(endpoint, max_tokens)
