"""Chapter 08: parallel calls: the model asks for several, the host decides what may overlap.

    wave(b) = 1 + max{ wave(a) : a asked before b and conflict(a, b) }     (0 when b conflicts with none)

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

Before planning, the round's id rule (``toolkit._ids.round_refusals``, the
same for every runner) refuses what cannot be answered by id: something that
is not a ``ToolCall``, a call whose id is unusable, and every call sharing an
id with another. Each item still gets exactly one result.
"""
from __future__ import annotations

import posixpath
import string
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from toolkit._ids import refusal_result, round_refusals
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


@dataclass(frozen=True)
class Plan:
    """A round's calls ordered into waves (``steps``, in call order), and ``(position, result)`` for each
    item the round's id rule refused before planning."""

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
    answer, refusals = round_refusals(items)
    steps: list[PlannedCall] = []
    for position, call in enumerate(items):
        if position in refusals:
            continue
        found = resources(call, _lookup(contracts, call.name))
        reads, writes = found if found is not None else (frozenset(), frozenset())
        me = (reads, writes, found is not None)
        waits, wave = [], 0
        for earlier in steps:
            why = conflict((earlier.reads, earlier.writes, earlier.known), me)
            if why:
                waits.append((earlier.call.call_id, why))
                wave = max(wave, earlier.wave + 1)
        steps.append(PlannedCall(position, call, reads, writes, found is not None, wave, tuple(waits)))
    refused = tuple((p, refusal_result(answer[p], error)) for p, error in refusals.items())
    anonymous = frozenset(p for p, item in enumerate(items) if getattr(item, "call_id", None) != answer[p])
    return Plan(tuple(steps), refused, anonymous)

