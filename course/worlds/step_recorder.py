"""Chapter 08: a measuring harness: which calls had finished when each one started, in logical steps, no clock.

``StepRecorder`` wraps an executor and notes, when each call starts, which
calls have already finished. A call's measured step is 0 if nothing had
finished, else one more than the latest step among those that had. Calls
listed ``together`` meet at a barrier inside the recorder, which opens only
when every one of them is in flight at the same moment, so a run that does not
really overlap them fails loudly instead of merely looking slower. Wall-clock
time never appears, so the numbers are the same on every run and every
machine. Its rows have the shape of ``Plan.rows()``, so the same timeline
(``course.present.schedule_plots``) draws the plan and the measured run.

Use it as a context manager: leaving the block breaks every barrier (a thread
still parked at one is released at once, not after ``timeout``) and waits for
every call in flight through the recorder to come out.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Sequence

from toolkit.kernel import ToolCall
from toolkit.kernel import ToolResult


class StepRecorder:
    """Wraps an executor; records which calls had finished when each call started.

    ``recorder(call)`` runs ``execute(call)`` and returns its result, so a
    recorder can be handed to ``toolkit.wire.rounds.run_plan`` or called in a
    plain loop. ``together`` lists groups of call ids that must be in flight at
    the same moment (e.g. ``plan.waves``): each group meets at a barrier that
    gives up after ``timeout`` seconds, and a call whose barrier broke raises,
    which the scheduler turns into a failed result.
    """

    def __init__(self, execute: Callable[[ToolCall], ToolResult], together: Iterable[Sequence[str]] = (),
                 timeout: float = 10.0):
        self.execute = execute
        self.timeout = timeout
        self._lock = threading.Condition()
        self._finished: list[str] = []
        self._saw: dict[str, frozenset[str]] = {}
        self._names: dict[str, str] = {}
        self._order: list[str] = []
        self._in_flight = 0
        self._barriers: dict[str, threading.Barrier] = {}
        self.met: dict[str, bool] = {}
        for group in together:
            if len(group) > 1:
                barrier = threading.Barrier(len(group), timeout=timeout)
                for call_id in group:
                    self._barriers[call_id] = barrier

    def __call__(self, call: ToolCall) -> ToolResult:
        with self._lock:
            self._saw[call.call_id] = frozenset(self._finished)
            self._names[call.call_id] = call.name
            self._order.append(call.call_id)
            self._in_flight += 1
        try:
            barrier = self._barriers.get(call.call_id)
            if barrier is not None:
                try:
                    barrier.wait()
                    met = True
                except threading.BrokenBarrierError:
                    met = False
                with self._lock:
                    self.met[call.call_id] = met
                if not met:
                    raise RuntimeError(f"{call.call_id} waited in vain: its group was never in flight together")
            return self.execute(call)
        finally:
            with self._lock:
                self._finished.append(call.call_id)
                self._in_flight -= 1
                self._lock.notify_all()

    # -- cleaning up: no thread stays parked in the recorder after the run
    def __enter__(self) -> StepRecorder:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Break every barrier and wait (up to ``timeout``) until no call is in flight through the recorder."""
        for barrier in set(self._barriers.values()):
            barrier.abort()
        with self._lock:
            self._lock.wait_for(lambda: self._in_flight == 0, timeout=self.timeout)

    # -- what was measured
    def _steps(self) -> dict[str, int]:
        """Every call's measured step, computed in start order (a call only saw calls that started before it)."""
        with self._lock:
            order, saw = list(self._order), dict(self._saw)
        steps: dict[str, int] = {}
        for call_id in order:
            steps[call_id] = 1 + max(steps[c] for c in saw[call_id]) if saw[call_id] else 0
        return steps

    def step(self, call_id: str) -> int:
        """The measured logical step of one call (0 if nothing had finished when it started)."""
        return self._steps()[call_id]

    def rows(self, order: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """One row per call that ran, shaped like ``Plan.rows()`` (``start``/``end`` in measured steps).

        ``order`` lists call ids to show (default: the order the calls started in).
        """
        steps = self._steps()
        ids = [c for c in (order if order is not None else self._order) if c in steps]
        return [{"call_id": c, "name": self._names[c], "start": steps[c], "end": steps[c] + 1} for c in ids]

    def finished_before(self, call_id: str) -> frozenset[str]:
        """The calls that had finished when ``call_id`` started (which ones depends on thread timing)."""
        return self._saw[call_id]

    def broken_waits(self, plan: Any) -> list[str]:
        """Calls of ``plan`` that started before a call they wait for had finished (empty when all were kept)."""
        problems = []
        for step in plan.steps:
            if step.call.call_id not in self._saw:
                continue
            early = [c for c, _ in step.waits_for if c not in self._saw[step.call.call_id]]
            if early:
                problems.append(f"{step.call.call_id} started before {', '.join(early)} finished")
        return problems

    @property
    def steps(self) -> int:
        """How many logical steps the run took: the longest chain of 'finished before the next started'."""
        return max((step + 1 for step in self._steps().values()), default=0)
