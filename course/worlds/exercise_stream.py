"""Chapter 08: exercise 08's given parts: the round of six calls, the stream's buffers, the recorded pieces.

The student writes the two rules of the chapter (may two calls run at the same
time? and: no call before the completion event); what is plumbing is here:

* ``conflict_line(kind, resources)``: ``""`` when ``resources`` is empty (or
  ``None``), else ``kind`` and the resources, sorted and joined by ``", "``;
* ``ROUND_CONTRACTS`` and ``round_of_six()``: Chapter 8's round (three reads,
  three writes, two of them to one file); ``waves_with(conflict, calls)`` puts
  each call in the wave after the latest earlier call it conflicts with, by
  the student's ``conflict``, as the scheduler does;
* ``FragmentBuffers``: one buffer per call index. ``add`` joins the pieces of
  the id and the name (a repeat of what arrived, or the whole value so far sent
  again, replaces it; anything else is the next piece) and appends argument
  fragments; ``finish`` records the stop reason; ``parsed()`` parses every
  buffer strictly (``parse_arguments``: a duplicate key is refused) into
  ``(calls, errors)``; ``incomplete()`` is the ``stream_incomplete`` error;
* ``recorded_pieces(name)`` and ``fed_from(cls, name, upto)``: the tool-call
  pieces of a recorded OpenAI stream, fed to a new accumulator.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from toolkit.kernel import Contract, ToolCall, ToolError, request
from toolkit._schema import parse_arguments
from toolkit.kernel import scheduler
from course.worlds import fixture

ROUND_CONTRACTS = {
    "read_file": Contract("read_file", "Read a file.", {"type": "object"}, reads=("file:{path}",)),
    "write_file": Contract("write_file", "Replace a file.", {"type": "object"}, writes=("file:{path}",)),
}


def conflict_line(kind: str, shared: Iterable[str] | str | None) -> str:
    """``""`` for no shared resource, else ``"<kind> <resources>"``, sorted and joined by ``", "``.

    ``None`` is no resource and one text is one resource (never its letters)."""
    shared = sorted(str(r) for r in ((shared,) if isinstance(shared, str) else shared or ()))
    return f"{kind} {', '.join(shared)}" if shared else ""


def round_of_six() -> list[ToolCall]:
    """Chapter 8's round: two reads of the source, two writes of one note, a write of the config, a read of the note."""
    return [request("read_file", {"path": "src/config.ts"}, "r1"),
            request("read_file", {"path": "src/routes.ts"}, "r2"),
            request("write_file", {"path": "notes/summary.md", "content": "# Draft"}, "w1"),
            request("write_file", {"path": "notes/summary.md", "content": "# Summary"}, "w2"),
            request("write_file", {"path": "src/config.ts", "content": "port = 8081"}, "w3"),
            request("read_file", {"path": "notes/summary.md"}, "r3")]


def waves_with(conflict: Callable[[Any, Any], str], calls: list[ToolCall]) -> list[list[str]]:
    """The call ids in waves: each call one wave after the latest earlier call ``conflict`` says it clashes with."""
    footprints = [scheduler.resources(c, ROUND_CONTRACTS.get(c.name)) for c in calls]
    wave: list[int] = []
    for i, mine in enumerate(footprints):
        wave.append(max((wave[j] + 1 for j in range(i) if conflict(footprints[j], mine)), default=0))
    out: list[list[str]] = [[] for _ in range(max(wave, default=-1) + 1)]
    for call, w in zip(calls, wave):
        out[w].append(call.call_id)
    return out


class FragmentBuffers:
    """One buffer per call index, filled piece by piece; ``finish`` records how the stream stopped."""

    def __init__(self):
        self.buffers: dict[int, dict[str, Any]] = {}   # index -> {"id": ..., "name": ..., "parts": [...]}
        self.stop_reason: str | None = None
        self.finished = False

    def add(self, index: int, call_id: str | None = None, name: str | None = None,
            arguments: str | None = None) -> None:
        buf = self.buffers.setdefault(index, {"id": None, "name": None, "parts": []})
        for key, value in (("id", call_id), ("name", name)):
            if value:
                so_far = buf[key] or ""
                buf[key] = value if value.startswith(so_far) else so_far + value   # a repeat, or the next piece
        if arguments:
            buf["parts"].append(arguments)

    def finish(self, stop_reason: str | None) -> None:
        self.finished, self.stop_reason = True, stop_reason

    def incomplete(self) -> ToolError:
        """The refusal of a stream that has not completed: none yet, or one that stopped for another reason."""
        why = "no completion event yet" if not self.finished else f"the stream stopped at {self.stop_reason!r}"
        return ToolError("stream_incomplete", "$", why, expected="a completion event", received=self.stop_reason,
                         hint="nothing was run")

    def parsed(self) -> tuple[list[ToolCall], list[ToolError]]:
        """Every buffer parsed strictly, in index order: the calls, and the errors of those that do not parse."""
        calls, errors = [], []
        for index in sorted(self.buffers):
            buf = self.buffers[index]
            arguments, problems = parse_arguments("".join(buf["parts"]))
            if problems:
                errors += problems
            else:
                calls.append(ToolCall(buf["name"], arguments, buf["id"]))
        return calls, errors


def recorded_pieces(name: str) -> tuple[list[tuple], str | None]:
    """(index, id, name, arguments) for each tool-call piece of a recorded OpenAI stream, and its finish_reason."""
    out, reason = [], None
    for line in fixture(name).splitlines():
        if not line.startswith("data: {"):
            continue
        choice = json.loads(line[6:])["choices"][0]
        for piece in choice["delta"].get("tool_calls", []):
            function = piece.get("function", {})
            out.append((piece["index"], piece.get("id"), function.get("name"), function.get("arguments")))
        reason = choice.get("finish_reason") or reason
    return out, reason


def fed_from(cls: Callable[[], Any], name: str, upto: int | None = None) -> tuple[Any, str | None]:
    """A new ``cls()`` fed the first ``upto`` pieces (all by default) of the recording ``name``, and its stop reason."""
    acc = cls()
    pieces, reason = recorded_pieces(name)
    for index, call_id, tool, arguments in pieces[:upto]:
        acc.add(index, call_id=call_id, name=tool, arguments=arguments)
    return acc, reason
