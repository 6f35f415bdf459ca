"""Chapter 08: parallel calls: the model asks for several, the host decides what may overlap.

"Parallel requests" is not "parallel execution". How many calls a model put
in one round says nothing about whether they may run at the same time; the
resources they touch do. Each contract declares resource templates
(``reads=("file:{path}",)``), and ``schedule`` fills them from each call's
arguments and orders the round:

=====================  ==========================  =======================
relation               example                     how it runs
=====================  ==========================  =======================
read-read              read A, read B              together
write-write            both write the same file    in request order
read-write             read config, write config   in request order
=====================  ==========================  =======================

A *data* dependency (a call whose arguments come from another call's result)
cannot be seen within one round: every call in a round already has its
arguments. It needs a second round, after the first results come back.

A call whose resources cannot be known (no contract, arguments that do not
parse, a template field missing) is ordered against *every* other call: what
the host cannot analyse, it serializes.

``run_plan`` executes a plan on a thread pool (real concurrency), each call
starting as soon as the calls it waits for are done. Results come back in
call order and are checked against their requests: a result whose
``call_id`` is not its call's id is replaced by a structured
``call_id_mismatch`` failure, never passed on. ``pair_results`` is the same
check for results gathered any other way; ``naive_pairing`` is the broken
reconciler the chapter warns about, kept so its failure can be shown.
"""
from __future__ import annotations

import posixpath
import string
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from toolkit.core import ToolCall
from toolkit.core import Contract
from toolkit.core import ToolError
from toolkit.core import FailureClass, Status, ToolResult
from toolkit.core import parse_arguments
from toolkit.wire.streaming import not_a_call

#: Something that runs one call and returns its result, e.g. ``host.execute``.
Execute = Callable[[ToolCall], ToolResult]


# ------------------------------------------------------------------ resources
def canonical(resource: str) -> str:
    """One spelling per resource: ``file:./src//a.txt`` -> ``file:src/a.txt`` (lexically; links are not followed)."""
    scheme, colon, rest = resource.partition(":")
    if colon and scheme == "file" and rest:
        rest = posixpath.normpath(rest.replace("\\", "/"))
    return f"{scheme}{colon}{rest}"


def resources(call: ToolCall, contract: Contract | None) -> tuple[frozenset[str], frozenset[str]] | None:
    """The resources a call reads and writes, or None when they cannot be known."""
    if contract is None or contract.name != call.name:
        return None
    arguments, errors = parse_arguments(call.arguments)
    if errors or arguments is None:
        return None
    for template in contract.reads + contract.writes:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
        if any(f not in arguments for f in fields):
            return None
    try:
        reads, writes = contract.resources(arguments)
    except (ValueError, KeyError, IndexError, AttributeError):
        return None
    return frozenset(map(canonical, reads)), frozenset(map(canonical, writes))


# ----------------------------------------------------------------------- plan
@dataclass(frozen=True)
class PlannedCall:
    """One call in a plan: what it touches, its wave, and the earlier calls it waits for (with why)."""

    position: int
    call: ToolCall
    reads: frozenset[str]
    writes: frozenset[str]
    known: bool
    wave: int
    waits_for: tuple[tuple[str, str], ...]   # (call id, reason) pairs

    def row(self) -> dict[str, Any]:
        return {"call_id": self.call.call_id, "name": self.call.name, "reads": sorted(self.reads),
                "writes": sorted(self.writes), "wave": self.wave, "start": self.wave, "end": self.wave + 1,
                "waits_for": [f"{cid} ({why})" for cid, why in self.waits_for]}


@dataclass(frozen=True)
class Plan:
    """A round's calls ordered into waves, plus the items refused before planning.

    ``steps`` are in call order. ``refused`` holds ``(position, result)`` for
    items that cannot run at all: something that is not a ``ToolCall`` (a
    ``Preview``, say), or a call whose id another call in the round also uses.
    """

    steps: tuple[PlannedCall, ...]
    refused: tuple[tuple[int, ToolResult], ...] = ()

    @property
    def size(self) -> int:
        return len(self.steps) + len(self.refused)

    @property
    def waves(self) -> list[list[str]]:
        """Call ids per wave: the calls in one wave have no conflict with each other."""
        out: list[list[str]] = [[] for _ in range(self.depth)]
        for step in self.steps:
            out[step.wave].append(step.call.call_id)
        return out

    @property
    def depth(self) -> int:
        """Logical steps the round needs if every call takes one step (1 for all-parallel, n for a chain)."""
        return 1 + max((s.wave for s in self.steps), default=-1)

    def rows(self) -> list[dict[str, Any]]:
        """Plain rows for a table or a timeline plot: start/end in logical steps."""
        return [s.row() for s in self.steps]

    def text(self) -> str:
        """The plan as a small table, one line per call."""
        lines = [f"{'wave':<5} {'call':<24} {'reads':<22} {'writes':<22} waits for"]
        for s in sorted(self.steps, key=lambda s: (s.wave, s.position)):
            call = f"{s.call.name} #{s.call.call_id}"
            lines.append(f"{s.wave:<5} {call:<24} {', '.join(sorted(s.reads)) or '-':<22} "
                         f"{', '.join(sorted(s.writes)) or '-':<22} "
                         f"{'; '.join(f'{c} ({w})' for c, w in s.waits_for) or '-'}")
        for position, result in self.refused:
            lines.append(f"{'-':<5} item {position} refused: {result.reason}")
        return "\n".join(lines)


Contracts = Any  # a Host (anything with .contract(name)) or a Mapping[str, Contract]


def _lookup(contracts: Contracts, name: Any) -> Contract | None:
    if isinstance(contracts, Mapping):
        return contracts.get(name) if isinstance(name, str) else None
    return contracts.contract(name)


Footprint = tuple[frozenset[str], frozenset[str], bool]   # (reads, writes, known)


def _conflict(a: Footprint, b: Footprint) -> str:
    """Why call ``b`` must wait for the earlier call ``a``, or '' if it need not."""
    a_reads, a_writes, a_known = a
    b_reads, b_writes, b_known = b
    if not (a_known and b_known):
        return "unknown resources"
    if a_writes & b_writes:
        return "write-write " + ", ".join(sorted(a_writes & b_writes))
    shared = (a_writes & b_reads) | (a_reads & b_writes)
    if shared:
        return "read-write " + ", ".join(sorted(shared))
    return ""


def schedule(calls: Sequence[Any], contracts: Contracts) -> Plan:
    """Order one round's calls into waves from the resources their contracts declare.

    A call goes in the wave after the latest earlier call it conflicts with,
    so read-read shares a wave, and write-write and read-write keep request
    order. ``contracts`` is a ``Host`` or a ``{name: Contract}`` mapping.
    """
    counts: dict[str, int] = {}
    for item in calls:
        if isinstance(item, ToolCall):
            counts[item.call_id] = counts.get(item.call_id, 0) + 1
    steps: list[PlannedCall] = []
    refused: list[tuple[int, ToolResult]] = []
    for position, item in enumerate(calls):
        if not isinstance(item, ToolCall):
            refused.append((position, not_a_call(item)))
            continue
        if counts[item.call_id] > 1:
            refused.append((position, _duplicate(item)))
            continue
        found = resources(item, _lookup(contracts, item.name))
        reads, writes = found if found is not None else (frozenset(), frozenset())
        me = (reads, writes, found is not None)
        waits, wave = [], 0
        for earlier in steps:
            why = _conflict((earlier.reads, earlier.writes, earlier.known), me)
            if why:
                waits.append((earlier.call.call_id, why))
                wave = max(wave, earlier.wave + 1)
        steps.append(PlannedCall(position, item, reads, writes, found is not None, wave, tuple(waits)))
    return Plan(tuple(steps), tuple(refused))


def _duplicate(call: ToolCall) -> ToolResult:
    error = ToolError("duplicate_call_id", "$.call_id", f"another call in this round also uses {call.call_id!r}",
                      expected="one id per call", received=call.call_id,
                      hint="results are paired by id, so calls sharing one cannot be told apart; none was run")
    return ToolResult(call.call_id, Status.REJECTED, failure_class=FailureClass.SCHEMA, reason="duplicate_call_id",
                      errors=(error,))


# ---------------------------------------------------------------------- run
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


def _failure(call: ToolCall, code: str, message: str, received: Any = None, hint: str = "") -> ToolResult:
    error = ToolError(code, f"tool {call.name}", message, expected=call.call_id if code == "call_id_mismatch" else None,
                      received=received, hint=hint, retryable=False)
    return ToolResult(call.call_id, Status.FAILED, failure_class=FailureClass.EXECUTION, reason=code, errors=(error,))


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


# ------------------------------------------------------------------ pairing
def naive_pairing(calls: Sequence[ToolCall], results_as_they_arrived: Sequence[ToolResult]) -> dict[str, ToolResult]:
    """The broken reconciler: pairs the i-th call with the i-th result to arrive.

    Correct only if results arrive in request order. When a later call
    finishes first, its result is filed under an earlier call's id and nobody
    notices: it looks like success. Kept to show the failure; never use it.
    """
    return {call.call_id: result for call, result in zip(calls, results_as_they_arrived)}


def pair_results(calls: Sequence[ToolCall], results: Iterable[ToolResult]) -> tuple[dict[str, ToolResult],
                                                                                    list[ToolError]]:
    """Pair results with calls by id, whatever order they arrived in.

    Returns the pairs and the problems: a call with no result
    (``missing_result``), a call with two (``duplicate_result``), a result
    whose id matches no call (``orphan_result``). Problems are never resolved
    by guessing.
    """
    wanted = [c.call_id for c in calls]
    paired: dict[str, ToolResult] = {}
    errors: list[ToolError] = []
    for result in results:
        if result.call_id not in wanted:
            errors.append(ToolError("orphan_result", "$.call_id", f"result for {result.call_id!r} answers no call",
                                    expected=wanted, received=result.call_id))
        elif result.call_id in paired:
            errors.append(ToolError("duplicate_result", "$.call_id", f"call {result.call_id!r} got a second result",
                                    expected="exactly one result", received=result.call_id))
        else:
            paired[result.call_id] = result
    for call_id in wanted:
        if call_id not in paired:
            errors.append(ToolError("missing_result", "$.call_id", f"call {call_id!r} has no result",
                                    expected="exactly one result", received="none",
                                    hint="every call needs a result, rejected and cancelled ones too"))
    return paired, errors
