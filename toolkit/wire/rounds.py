"""Chapter 08: running a round: each call starts when what it waits for is done, and every result is checked.

``run_plan`` executes a ``Plan`` (``toolkit.wire.scheduler``) on a thread pool
(real concurrency), each call starting as soon as the calls it waits for are
done. Results come back in call order, one per call, and each is checked
against its request by ``verify``: a result whose ``call_id`` is not its
call's id is replaced by a structured ``call_id_mismatch`` failure, never
passed on (``toolkit.wire.pairing`` is the same check for results gathered any
other way). ``run_round`` schedules and runs in one step.
"""
from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from toolkit.core import ToolCall
from toolkit.core import ToolError
from toolkit.core import FailureClass, Status, ToolResult
from toolkit.wire.scheduler import Contracts, Plan, schedule

#: Something that runs one call and returns its result, e.g. ``host.execute``.
Execute = Callable[[ToolCall], ToolResult]


def verify(call: ToolCall, result: Any) -> ToolResult:
    """Accept ``result`` only if it is a ``ToolResult`` for this very call; otherwise a structured failure."""
    if not isinstance(result, ToolResult):
        return _failure(call, "execution_failed", f"the executor returned a {type(result).__name__}, not a ToolResult",
                        type(result).__name__)
    if result.call_id != call.call_id:
        return _failure(call, "call_id_mismatch",
                        f"the executor returned a result for {result.call_id!r} as the answer to {call.call_id!r}",
                        result.call_id, "results were crossed; check the execution record before trusting "
                                        "or retrying either call")
    return result


def _failure(call: ToolCall, code: str, message: str, received: Any = None, hint: str = "") -> ToolResult:
    error = ToolError(code, f"tool {call.name}", message, expected=call.call_id if code == "call_id_mismatch" else None,
                      received=received, hint=hint, retryable=False)
    return ToolResult(call.call_id, Status.FAILED, failure_class=FailureClass.EXECUTION, reason=code, errors=(error,))


@dataclass(frozen=True)
class Timing:
    """When one call ran, in seconds from the start of the round (measured, so not for printing)."""

    call_id: str
    start: float
    end: float


@dataclass(frozen=True)
class RoundReport:
    """A round's outcome: one result per call, in call order, each checked against its request."""

    plan: Plan
    results: tuple[ToolResult, ...]
    timings: tuple[Timing, ...]
    completion_order: tuple[str, ...]
    elapsed: float

    def by_id(self) -> dict[str, ToolResult]:
        return {r.call_id: r for r in self.results}

    def rows(self) -> list[dict[str, Any]]:
        """Deterministic per-call rows (no clock values): call id, wave, status, reason."""
        waves = {s.position: s.wave for s in self.plan.steps}
        return [{"call_id": r.call_id, "wave": waves.get(i), "status": r.status.value, "reason": r.reason or "-"}
                for i, r in enumerate(self.results)]

    def summary(self) -> str:
        """e.g. ``3 calls in 2 waves: 2 succeeded, 1 failed``: partial success reported per status."""
        counts: dict[str, int] = {}
        for r in self.results:
            counts[r.status.value] = counts.get(r.status.value, 0) + 1
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        calls = f"{len(self.results)} call{'' if len(self.results) == 1 else 's'}"
        return f"{calls} in {self.plan.depth} wave{'' if self.plan.depth == 1 else 's'}: {parts}"


def _attempt(call: ToolCall, execute: Execute, t0: float) -> tuple[ToolResult, Timing]:
    start = time.perf_counter() - t0
    try:
        result = verify(call, execute(call))
    except Exception as exc:  # one broken call must not sink the round
        result = _failure(call, "execution_failed", f"the tool raised {type(exc).__name__}", type(exc).__name__)
    return result, Timing(call.call_id, start, time.perf_counter() - t0)


def _cancelled(call: ToolCall, blocker: str) -> ToolResult:
    error = ToolError("cancelled", f"tool {call.name}", f"not run: {blocker} failed and this call waits for it",
                      expected=f"{blocker} to succeed", received="failed", retryable=True)
    return ToolResult(call.call_id, Status.CANCELLED, failure_class=FailureClass.EXECUTION, reason="cancelled",
                      errors=(error,))


def run_plan(plan: Plan, execute: Execute, *, max_workers: int = 8, cancel_dependents: bool = False) -> RoundReport:
    """Run a plan on a thread pool; every call gets exactly one verified result, in call order.

    A call starts as soon as every call it waits for has finished. With
    ``cancel_dependents=True``, a call that waits for a call that did not
    succeed is not run and gets a ``cancelled`` result instead.
    """
    results: dict[int, ToolResult] = dict(plan.refused)
    timings: dict[int, Timing] = {}
    order: list[str] = []
    by_id = {s.call.call_id: s for s in plan.steps}
    waiting = {s.position: {by_id[c].position for c, _ in s.waits_for} for s in plan.steps}
    dependents: dict[int, list[int]] = {s.position: [] for s in plan.steps}
    for position, needs in waiting.items():
        for need in needs:
            dependents[need].append(position)
    steps = {s.position: s for s in plan.steps}
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        running: dict[Future, int] = {}

        def release(position: int) -> None:
            """``position`` is done: start (or cancel) every call that was waiting only for it."""
            for later in dependents[position]:
                waiting[later].discard(position)
                if waiting[later]:
                    continue
                blocker = next((cid for cid, _ in steps[later].waits_for
                                if not results[by_id[cid].position].ok), None) if cancel_dependents else None
                if blocker is not None:
                    results[later] = _cancelled(steps[later].call, blocker)
                    release(later)
                else:
                    running[pool.submit(_attempt, steps[later].call, execute, t0)] = later

        for position, needs in waiting.items():
            if not needs:
                running[pool.submit(_attempt, steps[position].call, execute, t0)] = position
        while running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: running[f]):
                position = running.pop(future)
                results[position], timings[position] = future.result()
                order.append(steps[position].call.call_id)
                release(position)
    elapsed = time.perf_counter() - t0
    ordered = tuple(results[i] for i in range(plan.size))
    return RoundReport(plan, ordered, tuple(timings[i] for i in sorted(timings)), tuple(order), elapsed)


def run_round(calls: Sequence[Any], contracts: Contracts, execute: Execute | None = None, **options: Any
              ) -> RoundReport:
    """Schedule and run one round. With a ``Host``, ``execute`` defaults to ``host.execute``."""
    if execute is None:
        if not hasattr(contracts, "execute"):
            raise TypeError("pass execute=... when the contracts come from a mapping rather than a Host")
        execute = contracts.execute
    return run_plan(schedule(calls, contracts), execute, **options)
