"""Chapter 01: the host: declares tools, checks each request, executes or refuses it,
and returns exactly one result per call id.

The model may propose; the host disposes. Every attempt is logged with its
full verdict (all three tests), so the log can say which test stopped a call.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from toolkit.core.calls import ToolCall
from toolkit.core.contracts import Contract
from toolkit.core.errors import ToolError
from toolkit.core.legality import LAYER_OF, Caller, Outcome, Verdict, check
from toolkit.core.results import FailureClass, Status, ToolFailure, ToolResult
from toolkit.core.redaction import scrub, secret_values

#: An implementation receives validated arguments and the host's world.
Implementation = Callable[[dict, Any], Any]


@dataclass(frozen=True)
class Tool:
    """A contract and the code that carries it out."""

    contract: Contract
    run: Implementation

    @property
    def name(self) -> str:
        return self.contract.name


@dataclass(frozen=True)
class Attempt:
    """One line of the host's log: the request, its verdict, and its result."""

    call: ToolCall
    verdict: Verdict
    result: ToolResult


def rejection(verdict: Verdict) -> ToolResult:
    """The result for a refused call: status rejected, class of the first failing layer."""
    first = next((t for t in verdict.tests if t.outcome is Outcome.FAIL), verdict.schema_ok)
    errors = verdict.errors
    return ToolResult(verdict.call.call_id, Status.REJECTED, failure_class=LAYER_OF[first.name].failure_class,
                      reason=errors[0].code if errors else "rejected", errors=errors)


@dataclass
class Host:
    """Runs the loop's third and fourth steps for a set of declared tools."""

    tools: dict[str, Tool]
    caller: Caller = field(default_factory=Caller)
    world: Any = None
    log: list[Attempt] = field(default_factory=list)

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
        """Step three, first half: all three tests, never raising."""
        return check(call, self.contract(call.name), self.caller, self.world, declared=self.tools)

    def execute(self, call: ToolCall, verdict: Verdict | None = None) -> ToolResult:
        """Steps three and four: check (unless a verdict is given), then run or refuse.

        The result carries the call id; the attempt is logged with all three tests.
        """
        if not isinstance(call, ToolCall):  # a Preview, a Refusal, a dict: only a complete, parsed call runs
            return not_a_call(call)
        if verdict is None or verdict.call != call:   # a verdict answers for one call only
            verdict = self.check(call)
        result = rejection(verdict) if not verdict.legal else self._run(call, verdict)
        self.log.append(Attempt(call, verdict, result))
        return result

    def run_round(self, calls: Iterable[ToolCall]) -> list[ToolResult]:
        """One result per call, in call order."""
        return [self.execute(call) for call in calls]

    def _run(self, call: ToolCall, verdict: Verdict) -> ToolResult:
        tool = self.tools[call.name]
        arguments = verdict.arguments or {}
        try:
            output = tool.run(arguments, self.world)
        except ToolFailure as failure:
            secrets = secret_values(arguments, tool.contract.secret_fields)
            reason, message = scrub(failure.reason, secrets), scrub(failure.message, secrets)
            if failure.error is not None:   # the tool built the structured error itself: keep pointer and hint
                error = replace(failure.error, message=scrub(failure.error.message, secrets))
            else:
                error = ToolError(reason, f"tool {call.name}", message,
                                  retryable=failure.status is Status.RECOVERABLE_FAILURE)
            return ToolResult(call.call_id, failure.status, failure_class=failure.failure_class,
                              reason=reason, errors=(error,))
        except Exception as exc:  # a crashing tool is a failed call, never a crashed host
            error = ToolError("execution_failed", f"tool {call.name}", f"the tool raised {type(exc).__name__}",
                              hint="the effect may be partial: check the execution record", retryable=False)
            return ToolResult(call.call_id, Status.FAILED, failure_class=FailureClass.EXECUTION,
                              reason="execution_failed", errors=(error,))
        broken = _broken_postconditions(tool.contract, arguments, output, self.world)
        if broken:
            return ToolResult(call.call_id, Status.FAILED, output=output, failure_class=FailureClass.POSTCONDITION,
                              reason="postcondition_failed", errors=tuple(broken))
        evidence = output.get("evidence", {}) if isinstance(output, dict) else {}
        return ToolResult(call.call_id, Status.SUCCEEDED, output=output, evidence=evidence)


def not_a_call(obj: Any) -> ToolResult:
    """The result for something handed to an executor that is not a ``ToolCall`` (a ``Preview``, a dict...)."""
    call_id = getattr(obj, "call_id", None)
    kind = type(obj).__name__
    error = ToolError("not_a_call", "$", f"a {kind} is not a ToolCall; only a complete, parsed call may run",
                      expected="ToolCall", received=kind,
                      hint="wait for the completion signal and execute the ToolCall it produces", retryable=False)
    return ToolResult(call_id if isinstance(call_id, str) and call_id else "?", Status.REJECTED,
                      failure_class=FailureClass.SCHEMA, reason="not_a_call", errors=(error,))


def _broken_postconditions(contract: Contract, arguments: dict, output: Any, world: Any) -> list[ToolError]:
    broken = []
    for condition in contract.postconditions:
        try:
            ok = condition.predicate(arguments, output, world)
        except Exception:
            ok = False
        if isinstance(ok, ToolError):
            broken.append(ok)
        elif ok is not True:
            broken.append(condition.failure("postcondition_failed"))
    return broken
