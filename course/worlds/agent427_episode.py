"""Chapter 03: Agent-427's episode as interpreter steps: propose, be refused, inspect the exports, propose again.

A scripted policy (no model, no network) runs through ``toolkit.kernel.loop.evaluate``:
the chapter's first proposal, then ``inspect_step`` (read the rejection; if it
names an unexported symbol, ask for the module's real exports), then
``correct_step`` (take the exported name closest to the one wanted and propose
again). ``transcript_lines`` lays the finished ``Episode`` out as the chapter
prints it.
"""
from __future__ import annotations

import difflib
import json
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.kernel import State, ToolCall, ToolError, ToolResult, evaluate, request
from course.worlds.scripted import ScriptedPolicy
from toolkit._show import shorten
from course.worlds import (BUILD_SCRIPT, Proposal, ProposalHost, corrected_proposal, episode_host, first_proposal,
                           read_build_script, scenario_copy, transition)
from course.worlds.agent427 import TASK


# ------------------------------------------------------------------ the policy
def _rejection(state: State) -> ToolResult | None:
    return next((o.result for o in state.observations if o.kind == "rejected"), None)


def _unexported(result: ToolResult) -> ToolError | None:
    return next((e for e in result.errors if e.code == "symbol_not_exported"), None)


def inspect_step(state: State) -> ToolCall | None:
    """Step two: read the rejection; if it names an unexported symbol, ask for the module's real exports."""
    refused = state.last.result if state.last and state.last.kind == "rejected" else None
    if refused is None or not transition(refused).endswith("inspect_exports"):
        return None
    error = _unexported(refused)
    module = error.pointer.removeprefix("import ").rsplit(".", 1)[0]
    return request("inspect_exports", {"module": module}, "call_2")


def correct_step(state: State) -> Proposal | None:
    """Step three: from the exports just read, take the name closest to the one wanted; propose again."""
    refused, last = _rejection(state), state.last
    if refused is None or last is None or not last.result.ok:
        return None
    wanted = _unexported(refused).received
    names = last.result.output["names"]
    symbol = difflib.get_close_matches(wanted, names, n=1, cutoff=0.0)
    return corrected_proposal(symbol[0], "call_3") if symbol else None


# ------------------------------------------------------------------ the episode
@dataclass
class Episode:
    """A finished run: the workspace, the interpreter's final state, and the host's log."""

    workspace: Path
    state: State
    host: ProposalHost
    before: str
    after: str

    @property
    def attempts(self) -> list:
        return self.host.log

    def diff(self) -> list[str]:
        """The unified diff of build_site.py, with relative names only."""
        return list(difflib.unified_diff(self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
                                         f"a/{BUILD_SCRIPT}", f"b/{BUILD_SCRIPT}", n=1))

    def transcript(self) -> str:
        return "\n".join(transcript_lines(self))


def run_agent427(workspace: Path | str | None = None) -> Episode:
    """Run the whole episode through ``toolkit.kernel.loop.evaluate`` with a scripted policy.

    Without a ``workspace`` the episode runs in a throwaway copy of the
    scenario, removed before this returns (the episode keeps build_site.py's
    text from before and after).
    """
    with ExitStack() as stack:
        root = Path(workspace) if workspace is not None else stack.enter_context(scenario_copy())
        host = episode_host(root)
        before = read_build_script(root)
        policy = ScriptedPolicy([first_proposal("call_1"), inspect_step, correct_step])
        state = evaluate(State(TASK), policy, host)
        return Episode(root, state, host, before, read_build_script(root))


def format_call(call: Any, limit: int = 47) -> list[str]:
    """A tool call in the chapter's layout, one argument per line; a value is cut to ``limit`` characters."""
    args = call.arguments if isinstance(call.arguments, dict) else {"<arguments>": call.arguments}
    head = f"{call.name}({{"
    lines = []
    for i, (key, value) in enumerate(args.items()):
        text = value if isinstance(value, str) else json.dumps(value)
        shown = json.dumps(shorten(text, limit), ensure_ascii=False)
        lines.append(f"{head if i == 0 else ' ' * len(head)}{json.dumps(key)}: {shown}")
    if not lines:
        return [f"{call.name}({{}})"]
    lines[-1] += "})"
    lines[:-1] = [line + "," for line in lines[:-1]]
    return lines


def transcript_lines(episode: Episode) -> list[str]:
    """The episode in the chapter's layout: proposal, validator, transition, evidence, corrected proposal, result."""
    first, inspect, second = episode.attempts
    out = ["proposal.code:", f"  {first.call.code}", "", "proposal.tool:"]
    out += [f"  {line}" for line in format_call(first.call)]
    out += ["", "validator:"] + [f"  {e.line()}" for e in first.result.errors]
    out += ["", "transition:", f"  {transition(first.result)}", ""]
    out += [f"inspect_exports({json.dumps(inspect.call.arguments)}):"]
    exports = inspect.result.output or {}
    out += [f"  {exports.get('module')} exports {', '.join(exports.get('names', []))} (rule: {exports.get('rule')})"]
    out += ["", "corrected proposal:", f"  {second.call.code}"] + [f"  {line}" for line in format_call(second.call)]
    out += ["", "validator:", "  " + ", ".join(f"{t.name} {t.outcome.value}" for t in second.verdict.tests)
            + f": legal = {second.verdict.legal}"]
    result = second.result
    out += ["", "result:", f"  {result.status.value}: {BUILD_SCRIPT}"
            + (f", line {result.output['line']} replaced" if result.ok else f" ({result.reason})")]
    if result.ok:
        evidence = result.evidence
        out += [f"  sha256 before {evidence['sha256_before'][:12]}  after {evidence['sha256_after'][:12]}"]
    out += ["", "interpreter:"] + [f"  {line}" for line in episode.state.transcript()]
    return out


__all__ = ["Episode", "correct_step", "format_call", "inspect_step", "run_agent427", "transcript_lines"]
