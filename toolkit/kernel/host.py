"""Chapter 01: the host declares tools, checks each request, runs or refuses it, and answers every call id once.

    declare -> the model proposes -> check -> legal ? run : refuse -> one ToolResult per call id, logged

The model may propose; the host disposes. Every attempt is logged with its full verdict (all three tests), so
the log can say which test stopped a call. A tool that raises is a failed call, never a crashed host.

Chapter 06's rule lives here, so every loop keeps it: after a keyed call not safe to repeat timed out,
the same call under another key is refused until the original key brings an answer (``toolkit._unknown``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolResult
from toolkit.kernel.contract import Contract
from toolkit.kernel.legality import LAYER_OF, Caller, Outcome, Verdict, check, refused
from toolkit._caps import MAX_ERRORS_PER_CALL
from toolkit._conditions import condition_errors
from toolkit._ids import not_a_call, refusal_result, round_refusals, shown_call_id
from toolkit._raised import raised_result
from toolkit._show import log_copy, scrubbed_errors
from toolkit._unknown import retry_slot, second_action


@dataclass(frozen=True)
class Tool:
    """A contract and the code that carries it out."""

    contract: Contract
    run: Callable[[dict, Any], Any]   # receives the validated arguments and the host's world

    @property
    def name(self) -> str:
        return self.contract.name


@dataclass(frozen=True)
class Attempt:
    """One line of the host's log: the request (its arguments redacted), its verdict, and its result."""

    call: ToolCall
    verdict: Verdict
    result: ToolResult


def rejection(verdict: Verdict) -> ToolResult:
    """The result for a refused call: status rejected, class of the first failing layer."""
    first = next((t for t in verdict.tests if t.outcome is Outcome.FAIL), verdict.schema_ok)
    errors = verdict.errors[:MAX_ERRORS_PER_CALL]
    return ToolResult(shown_call_id(getattr(verdict.call, "call_id", None)), Status.REJECTED,
                      failure_class=LAYER_OF[first.name].failure_class,
                      reason=errors[0].code if errors else "rejected", errors=errors)


@dataclass
class Host:
    """Runs the loop's third and fourth steps for a set of declared tools."""

    tools: dict[str, Tool]
    caller: Caller = field(default_factory=Caller)
    world: Any = None
    log: list[Attempt] = field(default_factory=list)
    unknown: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # -> key, call id

    @classmethod
    def of(cls, tools: Iterable[Tool], caller: Caller = Caller(), world: Any = None) -> "Host":
        """A host declaring ``tools``, acting for ``caller`` in ``world``."""
        return cls({t.name: t for t in tools}, caller, world)

    def declare(self) -> list[dict[str, Any]]:
        """Step one: the tool list the model is shown (vendor-neutral form)."""
        return [{"name": t.name, "description": t.contract.description, "input_schema": dict(t.contract.schema)}
                for t in self.tools.values()]

    def contract(self, name: str) -> Contract | None:
        tool = self.tools.get(name) if isinstance(name, str) else None
        return tool.contract if tool else None

    def check(self, call: ToolCall) -> Verdict:
        """Step three, first half: all three tests, never raising (whatever ``call`` is)."""
        return check(call, self.contract(getattr(call, "name", None)), self.caller, self.world, declared=self.tools)

    def execute(self, call: ToolCall, verdict: Verdict | None = None) -> ToolResult:
        """Steps three and four: check (unless this call's verdict is given), then run or refuse, and log it."""
        if not isinstance(call, ToolCall):  # a Preview, a Refusal, a dict: only a complete, parsed call runs
            return not_a_call(call)
        if verdict is None or verdict.call != call:   # a verdict answers for one call only
            verdict = self.check(call)
        slot, key = retry_slot(call, self.contract(call.name), verdict.arguments)
        first = self.unknown.get(slot) if slot is not None else None
        if not verdict.legal or (first is not None and first[0] != key):
            result = rejection(verdict) if not verdict.legal else second_action(call, first, key)
        else:
            result = self._run(call, verdict)
            if slot is not None and key is not None and result.status is Status.TIMEOUT:
                self.unknown.setdefault(slot, (key, call.call_id))
            elif first is not None and result.status is Status.SUCCEEDED:
                self.unknown.pop(slot, None)    # the original key brought the answer: known now
        self._log(Attempt(call, verdict, result))
        return result

    def run_round(self, calls: Iterable[ToolCall]) -> list[ToolResult]:
        """One result per call, in call order; calls sharing an id are refused, not run (``_ids.round_refusals``)."""
        calls = list(calls)
        answer, refusals = round_refusals(calls)
        results = []
        for position, call in enumerate(calls):
            if position not in refusals:
                results.append(self.execute(call))
                continue
            results.append(refusal_result(answer[position], refusals[position]))
            if isinstance(call, ToolCall):
                self._log(Attempt(call, refused(call, refusals[position]), results[-1]))
        return results

    def _log(self, attempt: Attempt) -> None:
        """Keep ``attempt``, its arguments redacted: a log is read by people who must not see a secret."""
        self.log.append(log_copy(attempt, getattr(self.contract(attempt.call.name), "secret_fields", ())))

    def _run(self, call: ToolCall, verdict: Verdict) -> ToolResult:
        """Run a legal call: an exception or a broken postcondition comes back as a failed result."""
        tool, arguments = self.tools[call.name], verdict.arguments or {}
        try:
            output = tool.run(arguments, self.world)
        except Exception as exc:  # a ToolFailure keeps its status and class; anything else is `failed`
            return raised_result(call, tool.contract, arguments, exc)
        broken = condition_errors(tool.contract.postconditions, "postcondition_failed", arguments, output, self.world)
        if broken:   # it ran, but did not establish its promise (what a condition echoes is scrubbed)
            errors = scrubbed_errors(tuple(broken[:MAX_ERRORS_PER_CALL]), arguments, tool.contract.secret_fields)
            return ToolResult(call.call_id, Status.FAILED, output=output, failure_class=FailureClass.POSTCONDITION,
                              reason="postcondition_failed", errors=errors)
        evidence = output.get("evidence", {}) if isinstance(output, dict) else {}
        return ToolResult(call.call_id, Status.SUCCEEDED, output=output, evidence=evidence)
