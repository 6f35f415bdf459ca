"""Chapter 08: parallel calls: the model asks for several, the host decides what may overlap.

"Parallel requests" is not "parallel execution". How many calls a model put
in one round says nothing about whether they may run at the same time; the
resources they touch do. The rule is ``conflict``:

=====================  ==========================  =======================
relation               example                     how it runs
=====================  ==========================  =======================
read-read              read A, read B              together
write-write            both write the same file    in request order
read-write             read config, write config   in request order
=====================  ==========================  =======================

A call whose resources cannot be known (no contract, arguments that do not
parse, a template field missing) is ordered against *every* other call: what
the host cannot analyse, it serializes.

Each contract declares resource templates (``reads=("file:{path}",)``);
``resources`` fills them from a call's arguments and ``schedule`` orders the
round into waves, a ``Plan``. A *data* dependency (a call whose arguments come
from another call's result) cannot be seen within one round: every call in a
round already has its arguments. It needs a second round, after the first
results come back. Running a plan is ``toolkit.wire.rounds``.

Hardening: every item of a round gets exactly one result, even one that
cannot run. Something that is not a ``ToolCall``, a call whose id is not a
non-empty string of at most ``MAX_CALL_ID_CHARS`` characters, and calls that
share an id are refused before planning; a round of more than
``MAX_OPEN_CALLS`` items is refused whole. A refused item whose id cannot
answer it gets a placeholder id (``?3`` for item 3) used by no other item, so
results still pair one to one with the items.
"""
from __future__ import annotations

import posixpath
import string
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from toolkit._caps import MAX_CALL_ID_CHARS, MAX_OPEN_CALLS
from toolkit._ids import call_id_problem
from toolkit.kernel.call import ToolCall
from toolkit.kernel.contract import Contract
from toolkit.kernel.call import ToolError
from toolkit.kernel.call import FailureClass, Status, ToolResult
from toolkit.kernel.host import not_a_call
from toolkit._schema import parse_arguments
from toolkit._stream_guards import over_cap, shown_value

Footprint = tuple[frozenset[str], frozenset[str], bool]   # (reads, writes, known)


def conflict(a: Footprint, b: Footprint) -> str:
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
    anonymous: frozenset[int] = frozenset()   # positions whose result carries a placeholder id

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


def schedule(calls: Sequence[Any], contracts: Contracts) -> Plan:
    """Order one round's calls into waves from the resources their contracts declare.

    A call goes in the wave after the latest earlier call it conflicts with,
    so read-read shares a wave, and write-write and read-write keep request
    order. ``contracts`` is a ``Host`` or a ``{name: Contract}`` mapping.
    """
    items = list(calls)
    answer = _answer_ids(items)
    anonymous = frozenset(p for p, item in enumerate(items) if _own_id(item) != answer[p])
    if len(items) > MAX_OPEN_CALLS:
        error = over_cap("$", "the calls in this round", "MAX_OPEN_CALLS", MAX_OPEN_CALLS, "calls",
                         "nothing was run; ask for fewer calls in one round")
        return Plan((), tuple((p, _refused(answer[p], "too_large", error)) for p in range(len(items))), anonymous)
    counts: dict[str, int] = {}
    for item in items:
        if isinstance(item, ToolCall) and usable_id(item.call_id):
            counts[item.call_id] = counts.get(item.call_id, 0) + 1
    steps: list[PlannedCall] = []
    refused: list[tuple[int, ToolResult]] = []
    for position, item in enumerate(items):
        if not isinstance(item, ToolCall):
            refused.append((position, replace(not_a_call(item), call_id=answer[position])))
            continue
        if not usable_id(item.call_id):
            refused.append((position, _refused(answer[position], "invalid_call", ToolError(
                "invalid_call", "$.call_id", f"a call id must be a non-empty string of at most {MAX_CALL_ID_CHARS} "
                                             "characters (MAX_CALL_ID_CHARS)",
                expected="a non-empty string", received=shown_value(item.call_id),
                hint="results are paired by id, so a call without a usable one cannot be answered; it was not run",
                retryable=False))))
            continue
        if counts[item.call_id] > 1:
            refused.append((position, _duplicate(item)))
            continue
        found = resources(item, _lookup(contracts, item.name))
        reads, writes = found if found is not None else (frozenset(), frozenset())
        me = (reads, writes, found is not None)
        waits, wave = [], 0
        for earlier in steps:
            why = conflict((earlier.reads, earlier.writes, earlier.known), me)
            if why:
                waits.append((earlier.call.call_id, why))
                wave = max(wave, earlier.wave + 1)
        steps.append(PlannedCall(position, item, reads, writes, found is not None, wave, tuple(waits)))
    return Plan(tuple(steps), tuple(refused), anonymous)


def usable_id(call_id: Any) -> bool:
    """True when ``call_id`` can pair a result with its call (the host's own rule, ``core.hostile.call_id_problem``)."""
    return call_id_problem(call_id) is None


def _answer_ids(items: list[Any]) -> list[str]:
    """The id each item's result is filed under: its own when usable (calls sharing one keep it), else a placeholder.

    An item that is not a ``ToolCall`` keeps its id only when no other item has
    it. A placeholder (``?3``, ``??3``, ...) is used by no other item.
    """
    ids = [_own_id(item) for item in items]
    everywhere: dict[str, int] = {}
    for call_id in ids:
        if usable_id(call_id):
            everywhere[call_id] = everywhere.get(call_id, 0) + 1
    taken, out = set(everywhere), []
    for position, (item, call_id) in enumerate(zip(items, ids)):
        if usable_id(call_id) and (isinstance(item, ToolCall) or everywhere[call_id] == 1):
            out.append(call_id)
            continue
        placeholder = f"?{position}"
        while placeholder in taken:
            placeholder = "?" + placeholder
        taken.add(placeholder)
        out.append(placeholder)
    return out


def _own_id(item: Any) -> str | None:
    call_id = getattr(item, "call_id", None)
    return call_id if usable_id(call_id) else None


def _refused(call_id: str, reason: str, error: ToolError) -> ToolResult:
    return ToolResult(call_id, Status.REJECTED, failure_class=FailureClass.SCHEMA, reason=reason, errors=(error,))


def _duplicate(call: ToolCall) -> ToolResult:
    error = ToolError("duplicate_call_id", "$.call_id", f"another call in this round also uses {call.call_id!r}",
                      expected="one id per call", received=call.call_id,
                      hint="results are paired by id, so calls sharing one cannot be told apart; none was run")
    return ToolResult(call.call_id, Status.REJECTED, failure_class=FailureClass.SCHEMA, reason="duplicate_call_id",
                      errors=(error,))
