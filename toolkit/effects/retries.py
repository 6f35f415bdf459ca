"""Chapter 06: the host's retry loop: the model asks to try again, the host's controller decides."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from toolkit.kernel import ToolCall, ToolResult, RetryController, RetryDecision


@dataclass(frozen=True)
class Try:
    """One attempt in a retried call: the result, and what the controller said after it."""

    attempt: int
    result: ToolResult
    decision: RetryDecision | None

    def line(self) -> str:
        status = self.result.status.value + (f" ({self.result.reason})" if self.result.reason else "")
        after = f" -> {self.decision.line()}" if self.decision else ""
        return f"attempt {self.attempt}: {status}{after}"


def run_with_retries(host: Any, call: ToolCall, controller: RetryController,
                     ask: Callable[[ToolCall, ToolResult], ToolCall | None] | None = None,
                     sleep: Callable[[float], None] | None = None,
                     on_try: Callable[[Try], None] | None = None) -> list[Try]:
    """Run ``call``; after each failure ``ask`` may ask for a retry and the controller decides."""
    ask = ask or (lambda c, r: c)
    tries: list[Try] = []
    current, attempt = call, 1
    while True:
        result = host.execute(current)
        wanted = None if result.ok else ask(current, result)
        decision = None if wanted is None else controller.decide(host.contract(call.name), call, result,
                                                                  retry=wanted)
        tries.append(Try(attempt, result, decision))
        if on_try:
            on_try(tries[-1])
        if decision is None or not decision.retry:
            break
        if sleep:
            sleep(decision.wait)
        current, attempt = replace(wanted, call_id=call.call_id), attempt + 1
    return tries
