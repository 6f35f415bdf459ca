"""Chapter 09: the host at the boundary of a real model: rounds, budgets, and one answer per call id.

``run_task`` is the chapter's loop with a model on the other side::

    for each round, while the round budget lasts:
        reply = ask the model; a dropped connection, a 429 or a 5xx waits what chapter 06's
                controller decides (at least the endpoint's Retry-After), until the budget is spent
        a reply past a cap of toolkit._caps or its deadline: nothing in it runs; stop, with one line
        if the model asked for nothing: its text is the answer; stop (saying so if it never called)
        refused while reading (cut, unparseable, reused id): answered at once, never run
        the other calls: one round (toolkit.wire.run_round), each checked by the contract and, if
                         not safe to repeat, run through the ledger
        write back the assistant turn and one result per call id

``ModelPolicy`` puts the model in ``ScriptedPolicy``'s place for ``toolkit.kernel.evaluate``."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from toolkit.kernel import (Contract, FailureClass, Host, Jitter, Refusal, Retry, RetryController,
                            RetryPolicy, State, Status, ToolCall, ToolError, ToolResult,
                            invoke_with_ledger, request)
from toolkit._caps import MAX_RETRY_AFTER, MAX_SUMMARY_CHARS
from toolkit._show import call_line
from toolkit.live import ModelReply, failure_line, is_transient, retry_after
from toolkit.wire import run_round

#: What a run that ended without a single call says: its answer is no reading of any file.
NO_CALL = "no tool was called; nothing was read"
_SDK_MODULES = ("openai", "anthropic", "httpx2", "httpx", "httpcore")
#: Asking the model acts on nothing (the host runs the tools), so the controller may grant the same request again.
MODEL_REQUEST = Contract("model_request", "Ask the model for its next turn.", {"type": "object"}, retry=Retry.SAFE)


class LiveRunError(Exception):
    """The model could not be asked (after the host's retries); ``str`` is one line."""


def sdk_failure(exc: BaseException) -> bool:
    """Whether ``exc`` came from an SDK or its HTTP client (and so is the endpoint's, not the course's, fault)."""
    return type(exc).__module__.split(".")[0] in _SDK_MODULES


def _parsed(arguments: Any) -> Any:
    """Arguments a vendor sent as JSON text, parsed for the round's line (left as they are when they do not parse)."""
    try:
        return json.loads(arguments) if isinstance(arguments, str) else arguments
    except (ValueError, RecursionError):
        return arguments


def verdict_of(result: ToolResult | None) -> str:
    """``allowed``, or ``refused (layer: code)`` for a result the contract (or the reader) refused."""
    if result is None:
        return "refused (no id to answer)"
    if result.status is Status.REJECTED:
        layer = result.failure_class.value if result.failure_class is not None else "rejected"
        return f"refused ({layer}: {result.reason})"
    return "allowed"


@dataclass
class LiveRound:
    """One request and what the host did with it: per item, its result (None when there is no id to answer)."""

    number: int
    reply: ModelReply
    results: list[ToolResult | None]
    vendor_ids: list[Any]
    secret_fields: list[tuple[str, ...]]
    waves: list[list[str]] = field(default_factory=list)   # the scheduler's plan, by vendor id

    def lines(self) -> list[str]:
        out = [f"round {self.number}: {len(self.reply.items)} call(s), stop reason {self.reply.stop_reason}"]
        for item, result, vid, hidden in zip(self.reply.items, self.results, self.vendor_ids, self.secret_fields):
            status = result.status.value if result is not None else "not answered"
            shown = call_line(item.name or "?", _parsed(item.arguments), None, hidden, MAX_SUMMARY_CHARS)
            out.append(f"  {vid if vid is not None else '-'} {shown} -> {verdict_of(result)} -> {status}")
        return out


@dataclass
class LiveRun:
    """A whole task: its rounds, whether the model finished inside the budget, and its final text.
    ``stop``: why the host stopped reading a reply; ``recorded``: served from a recording."""

    rounds: list[LiveRound] = field(default_factory=list)
    finished: bool = False
    answer: str = ""
    retries_spent: int = 0
    stop: ToolError | None = None
    recorded: bool = False

    @property
    def called(self) -> bool:
        """Whether the model proposed at least one whole call (run or refused by the host)."""
        return any(isinstance(i, ToolCall) for r in self.rounds for i in r.reply.items)

    def outcome(self) -> list[str]:
        """How the run ended, in plain lines (what the command prints after the rounds)."""
        if self.stop is not None:
            return [f"stopped: {self.stop.line()}"]
        if not self.finished:
            return [f"no answer: the round budget ({len(self.rounds)} rounds) ran out"]
        said = "recorded answer, not produced from your files" if self.recorded else "answer"
        return ([] if self.called else [NO_CALL]) + [f"{said}: {self.answer}"]

    @property
    def exit_status(self) -> int:
        """0 answered after calling tools, 1 out of rounds, 3 answered with no call, 4 stopped."""
        return 4 if self.stop is not None else 1 if not self.finished else 0 if self.called else 3

    def lines(self) -> list[str]:
        return [line for r in self.rounds for line in r.lines()] + self.outcome()


def ask_with_budget(chat: Any, retries: int, *, sleep: Callable[[float], Any] = time.sleep,
                    seed: int = 0) -> tuple[ModelReply, int]:
    """Ask once; on a transient SDK failure wait what the controller decides and ask again. (reply, retries spent).

    The wait is the controller's (full jitter from ``random.Random(seed)``), and at least the ``Retry-After``
    the endpoint sent; ``sleep`` does the waiting (a test passes ``list.append``). When the controller says
    no, or the endpoint asks for more than ``MAX_RETRY_AFTER`` seconds, the run stops with ``LiveRunError``.
    """
    policy = RetryPolicy(d0=1.0, beta=2.0, n_max=retries, jitter=Jitter.FULL)   # 1, 2, 4, ... s
    controller = RetryController(policy, budget=retries, seed=seed)
    asking = request("model_request", {}, call_id="model_request")
    while True:
        try:
            return chat.ask(), controller.retries_used
        except Exception as exc:       # only the SDK's own failures are turned into one line
            if not sdk_failure(exc):
                raise
            where = str(getattr(getattr(chat, "client", None), "base_url", "") or "the endpoint").rstrip("/")
            if not is_transient(exc):
                raise LiveRunError(failure_line(exc, where)) from None
            failed = ToolResult(asking.call_id, Status.RECOVERABLE_FAILURE, failure_class=FailureClass.EXECUTION,
                                reason="endpoint_busy")
            decision, asked = controller.decide(MODEL_REQUEST, asking, failed), retry_after(exc) or 0.0
            if not decision.retry or asked > MAX_RETRY_AFTER:
                why = decision.reason if not decision.retry else \
                    f"it asks to wait {asked:g}s, more than the host's {MAX_RETRY_AFTER:g}s"
                raise LiveRunError(f"{failure_line(exc, where)}; escalating after "
                                   f"{controller.retries_used} retries: {why}") from None
            sleep(max(decision.wait, asked))


def run_task(chat: Any, host: Host, ledger: Any = None, *, max_rounds: int = 8, retries: int = 2,
             on_round: Callable[[LiveRound], None] | None = None, timeout: float | None = 60.0,
             sleep: Callable[[float], Any] = time.sleep, seed: int = 0) -> LiveRun:
    """Run the task in ``chat`` until the model answers or ``max_rounds`` requests are spent;
    ``retries``, ``sleep``, ``seed``: per request, as ``ask_with_budget`` takes them."""
    run = LiveRun()
    execute = lambda call: invoke_with_ledger(host, call, ledger)  # noqa: E731 - the ledger decides, per contract
    for number in range(1, max_rounds + 1):
        reply, spent = ask_with_budget(chat, retries, sleep=sleep, seed=seed + number)
        run.retries_spent += spent
        if reply.stop is not None:      # past a cap or the deadline: nothing in it runs
            run.stop = reply.stop
            break
        if reply.finished:
            run.finished, run.answer = True, reply.text
            break
        calls = [i for i in reply.items if isinstance(i, ToolCall)]
        report = run_round(calls, host, execute, timeout=timeout) if calls else None
        ran = iter(report.results if report is not None else ())
        results = [i.result if isinstance(i, Refusal) else next(ran) for i in reply.items]
        vendor_ids = [chat.ids.external(i.call_id, chat.vendor) if i.call_id else None for i in reply.items]
        hidden = [tuple(getattr(host.contract(i.name), "secret_fields", ())) if isinstance(i.name, str) else ()
                  for i in reply.items]
        shown = {i.call_id: v for i, v in zip(reply.items, vendor_ids)}
        waves = [[shown.get(c, c) for c in wave] for wave in report.plan.waves] if report is not None else []
        live_round = LiveRound(number, reply, results, vendor_ids, hidden, waves)
        run.rounds.append(live_round)
        if on_round is not None:
            on_round(live_round)
        chat.answer(reply.items, [r for r in results if r is not None], reply.text)
    return run


class ModelPolicy:
    """A real model as a policy for ``toolkit.kernel.evaluate``: one call per step, results sent back per round.

    Refused calls are answered by the policy (they never reach the loop); ``max_rounds`` bounds the
    requests; ``answer`` holds the model's final text once it stops."""

    def __init__(self, chat: Any, *, max_rounds: int = 8, retries: int = 2,
                 sleep: Callable[[float], Any] = time.sleep, seed: int = 0):
        self.chat, self.max_rounds, self.retries, self.sleep, self.seed = chat, max_rounds, retries, sleep, seed
        self.rounds = 0
        self.answer = ""
        self.stop: ToolError | None = None     # why the host stopped reading the last reply
        self._queue: list[ToolCall] = []
        self._asked: tuple[ToolCall | Refusal, ...] = ()
        self._text = ""

    def __call__(self, state: State) -> ToolCall | None:
        if self._queue:
            return self._queue.pop(0)
        if self._asked:
            seen = {o.call.call_id: o.result for o in state.observations}
            results = [i.result if isinstance(i, Refusal) else seen.get(i.call_id) for i in self._asked]
            self.chat.answer(self._asked, [r for r in results if r is not None], self._text)
            self._asked = ()
        if self.rounds >= self.max_rounds:
            return None
        reply, _ = ask_with_budget(self.chat, self.retries, sleep=self.sleep, seed=self.seed + self.rounds)
        self.rounds += 1
        self.stop = reply.stop
        if not reply.items or reply.stop is not None:
            self.answer = reply.text if reply.stop is None else ""
            return None
        self._asked, self._text = reply.items, reply.text
        self._queue = [i for i in reply.items if isinstance(i, ToolCall)]
        return self._queue.pop(0) if self._queue else self(state)
