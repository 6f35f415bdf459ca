"""Chapter 08: running a round: each call starts when what it waits for is done, and every result is checked.

``run_plan`` runs a ``Plan`` on worker threads; results come back in call order, each checked by
``toolkit.wire.pairing.verify``. ``run_round`` schedules and runs in one step. A call past
``timeout`` seconds is ``timeout`` (its outcome unknown) and every call waiting for it is
cancelled; Python cannot stop a thread, so a hung tool's worker is *abandoned* (a daemon, its
late result dropped)."""
from __future__ import annotations

import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from toolkit.kernel import (ToolCall, ToolError, NEXT_STEP, FailureClass, Status, ToolResult,
                            Contracts, Plan, schedule)
from toolkit.wire.pairing import round_failure, round_pointer, verify

#: Something that runs one call and returns its result, e.g. ``host.execute``.
Execute = Callable[[ToolCall], ToolResult]


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

    def answers(self) -> list[ToolResult]:
        """What goes back to the model: one result per id it used, in call order."""
        out, seen = [], set()
        for position, result in enumerate(self.results):
            if position not in self.plan.anonymous and result.call_id not in seen:
                seen.add(result.call_id)
                out.append(result)
        return out

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
    except BaseException as exc:  # one broken call must not sink the round (nor leave it waiting)
        result = round_failure(call, "execution_failed", f"the tool raised {type(exc).__name__}", type(exc).__name__)
    return result, Timing(call.call_id, start, time.perf_counter() - t0)


def _cancelled(call: ToolCall, blocker: str, why: str = "failed") -> ToolResult:
    error = ToolError("cancelled", round_pointer(call), f"not run: {blocker} {why} and this call waits for it",
                      expected=f"{blocker} to succeed", received=why, retryable=True)
    return ToolResult(call.call_id, Status.CANCELLED, failure_class=FailureClass.EXECUTION, reason="cancelled",
                      errors=(error,))


def _timed_out(call: ToolCall, timeout: float) -> ToolResult:
    error = ToolError("timeout", round_pointer(call), f"no result within {timeout:g} s; the call may still finish",
                      expected=f"a result within {timeout:g} s", received="no result",
                      hint=NEXT_STEP[Status.TIMEOUT], retryable=False)
    return ToolResult(call.call_id, Status.TIMEOUT, failure_class=FailureClass.TIMEOUT, reason="timeout",
                      errors=(error,))


def run_plan(plan: Plan, execute: Execute, *, max_workers: int = 8, cancel_dependents: bool = False,
             timeout: float | None = 60.0) -> RoundReport:
    """Run a plan on worker threads: one verified result per item, in call order."""
    results: dict[int, ToolResult] = dict(plan.refused)
    timings: dict[int, Timing] = {}
    order: list[str] = []
    by_id = {s.call.call_id: s for s in plan.steps}
    steps = {s.position: s for s in plan.steps}
    waiting = {s.position: {by_id[c].position for c, _ in s.waits_for} for s in plan.steps}
    dependents: dict[int, list[int]] = {s.position: [] for s in plan.steps}
    for position, needs in waiting.items():
        for need in needs:
            dependents[need].append(position)
    ready = deque(p for p, needs in waiting.items() if not needs)
    finished: queue.SimpleQueue[tuple[int, ToolResult, Timing]] = queue.SimpleQueue()
    running: dict[int, float] = {}            # position -> deadline (perf_counter seconds)
    timed_out: set[int] = set()
    t0 = time.perf_counter()

    def worker(position: int) -> None:
        finished.put((position, *_attempt(steps[position].call, execute, t0)))

    def settle(position: int, result: ToolResult) -> None:
        """``position`` has its result: start (or cancel) every call that was waiting only for it."""
        results[position] = result
        order.append(steps[position].call.call_id)
        for later in dependents[position]:
            waiting[later].discard(position)
            if waiting[later]:
                continue
            waited = [cid for cid, _ in steps[later].waits_for]
            late = next((cid for cid in waited if by_id[cid].position in timed_out), None)
            failed = next((cid for cid in waited if not results[by_id[cid].position].ok), None) \
                if cancel_dependents else None
            if late is not None or failed is not None:
                settle(later, _cancelled(steps[later].call, late or failed, "timed out" if late else "failed"))
            else:
                ready.append(later)

    workers: dict[int, threading.Thread] = {}
    started: dict[int, float] = {}
    while ready or running:
        while ready and len(running) < max(1, max_workers):
            position = ready.popleft()
            started[position] = time.perf_counter()
            running[position] = started[position] + timeout if timeout is not None else float("inf")
            workers[position] = threading.Thread(target=worker, args=(position,), daemon=True,
                                                 name=f"toolkit-call-{position}")
            workers[position].start()
        wait = min(running.values()) - time.perf_counter()
        try:
            position, result, timing = finished.get(timeout=None if wait == float("inf") else max(0.0, wait))
        except queue.Empty:
            now = time.perf_counter()
            for position in [p for p, deadline in running.items() if deadline <= now]:
                del running[position]                 # abandoned: its late result, if any, is dropped
                timed_out.add(position)
                timings[position] = Timing(steps[position].call.call_id, started[position] - t0, now - t0)
                settle(position, _timed_out(steps[position].call, timeout or 0.0))
            continue
        if position in running:
            del running[position]
            timings[position] = timing
            settle(position, result)
    for position, thread in workers.items():
        if position not in timed_out:
            thread.join()                             # it has put its result already: this returns at once
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
