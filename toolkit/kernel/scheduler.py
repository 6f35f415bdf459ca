"""Chapter 08: parallel calls: the model asks for several, the host decides what may overlap.

    wave(b) = 1 + max{ wave(a) : a asked before b and conflict(a, b) }     (0 when b conflicts with none)

How many calls a model put in one round says nothing about whether they may run at the same time; the
resources they touch do. The rule is ``conflict``:

=====================  ==========================  =======================
relation               example                     how it runs
=====================  ==========================  =======================
read-read              read A, read B              together
write-write            both write the same file    in request order
read-write             read config, write config   in request order
=====================  ==========================  =======================

A call whose resources cannot be known (no contract, arguments that do not parse, a template field
missing) conflicts with *every* other call: what the host cannot analyse, it serializes. ``resources``
fills a contract's templates (``reads=("file:{path}",)``) through ``toolkit._resources.footprint``;
``schedule`` orders the round into waves, a ``Plan``, after the round's id rule
(``toolkit._ids.round_refusals``) refused what cannot be answered by id. A *data* dependency (arguments
that come from another call's result) needs a second round. Running a plan is ``toolkit.wire.rounds``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from toolkit._ids import refusal_result, round_refusals
from toolkit._printed import plan_table
from toolkit._resources import footprint
from toolkit._schema import parse_arguments
from toolkit.kernel.call import ToolCall, ToolResult
from toolkit.kernel.contract import Contract

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


def resources(call: ToolCall, contract: Contract | None) -> tuple[frozenset[str], frozenset[str]] | None:
    """The resources a call reads and writes, or None when they cannot be known."""
    if contract is None or contract.name != call.name:
        return None
    arguments, errors = parse_arguments(call.arguments)
    return None if errors or arguments is None else footprint(contract, arguments)


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


@dataclass(frozen=True)
class Plan:
    """A round's calls in waves (``steps``, in call order), and ``(position, result)`` for each refused item."""

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
        return [{"call_id": s.call.call_id, "name": s.call.name, "reads": sorted(s.reads), "writes": sorted(s.writes),
                 "wave": s.wave, "start": s.wave, "end": s.wave + 1,
                 "waits_for": [f"{cid} ({why})" for cid, why in s.waits_for]} for s in self.steps]

    def text(self) -> str:
        """The plan as a small table, one line per call (``toolkit._printed``)."""
        return plan_table(self.rows(), self.refused)


Contracts = Any  # a Host (anything with .contract(name)) or a Mapping[str, Contract]


def schedule(calls: Sequence[Any], contracts: Contracts) -> Plan:
    """Order one round's calls into waves: each goes one wave after the latest earlier call it conflicts with
    (``contracts``: a ``Host`` or a ``{name: Contract}`` mapping)."""
    items = list(calls)
    answer, refusals = round_refusals(items)
    steps: list[PlannedCall] = []
    for position, call in enumerate(items):
        if position in refusals:
            continue
        if isinstance(contracts, Mapping):
            contract = contracts.get(call.name) if isinstance(call.name, str) else None
        else:
            contract = contracts.contract(call.name)
        found = resources(call, contract)
        reads, writes = found if found is not None else (frozenset(), frozenset())
        waits, wave = [], 0
        for earlier in steps:                                  # the wave loop: after every conflict, in order
            why = conflict((earlier.reads, earlier.writes, earlier.known), (reads, writes, found is not None))
            if why:
                waits.append((earlier.call.call_id, why))
                wave = max(wave, earlier.wave + 1)
        steps.append(PlannedCall(position, call, reads, writes, found is not None, wave, tuple(waits)))
    refused = tuple((p, refusal_result(answer[p], error)) for p, error in refusals.items())
    anonymous = frozenset(p for p, item in enumerate(items) if getattr(item, "call_id", None) != answer[p])
    return Plan(tuple(steps), refused, anonymous)
