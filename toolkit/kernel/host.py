"""Chapter 01: the host declares tools, checks each request, runs or refuses it, and answers every call id once.

The model may propose; the host disposes. Every attempt is logged with its
full verdict (all three tests), so the log can say which test stopped a call.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from toolkit.kernel.call import ToolCall
from toolkit.kernel.contract import Contract
from toolkit.kernel.call import ToolError
from toolkit._ids import not_a_call_error, refusal_result, round_refusals, shown_call_id
from toolkit.kernel.legality import LAYER_OF, Caller, Outcome, Verdict, check, refused
from toolkit._caps import MAX_ERRORS_PER_CALL
from toolkit.kernel.call import FailureClass, Status, ToolFailure, ToolResult
from toolkit._show import redact_arguments, scrub, scrub_error, secret_values

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
    """One line of the host's log: the request, its verdict, and its result.

    The log keeps a redacted copy of the request (secret fields masked, repeated secrets scrubbed), never
    the raw arguments: a log is read by people and tools that must not see a secret.
    """

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
        """Steps three and four: check (unless a verdict is given), then run or refuse.

        The result carries the call id; the attempt is logged with all three tests.
        """
        if not isinstance(call, ToolCall):  # a Preview, a Refusal, a dict: only a complete, parsed call runs
            return not_a_call(call)
        if verdict is None or verdict.call != call:   # a verdict answers for one call only
            verdict = self.check(call)
        result = rejection(verdict) if not verdict.legal else self._run(call, verdict)
        self.log.append(self._logged(Attempt(call, verdict, result)))
        return result

    def run_round(self, calls: Iterable[ToolCall]) -> list[ToolResult]:
        """One result per call, in call order; the round's id rule (``toolkit._ids.round_refusals``) comes first.

        Every call whose id another call of the round also sends is refused, not run: results are paired by id.
        """
        calls = list(calls)
        answer, refusals = round_refusals(calls)
        results = []
        for position, call in enumerate(calls):
            if position not in refusals:
                results.append(self.execute(call))
                continue
            result = refusal_result(answer[position], refusals[position])
            if isinstance(call, ToolCall):
                self.log.append(self._logged(Attempt(call, refused(call, refusals[position]), result)))
            results.append(result)
        return results

    def _logged(self, attempt: Attempt) -> Attempt:
        """The copy of ``attempt`` the log keeps: its arguments redacted (the verdict's parsed ones too)."""
        contract = self.contract(attempt.call.name)
        fields = contract.secret_fields if contract else ()
        raw, parsed = attempt.call.arguments, attempt.verdict.arguments
        arguments = redact_arguments(raw, fields)
        safe_parsed = arguments if parsed is raw else None if parsed is None else redact_arguments(parsed, fields)
        if arguments is raw and safe_parsed is parsed:
            return attempt
        call = replace(attempt.call, arguments=arguments)
        verdict = replace(attempt.verdict, call=call, arguments=safe_parsed)
        return Attempt(call, verdict, attempt.result)

    def _run(self, call: ToolCall, verdict: Verdict) -> ToolResult:
        tool = self.tools[call.name]
        arguments = verdict.arguments or {}
        try:
            output = tool.run(arguments, self.world)
        except ToolFailure as failure:
            secrets = secret_values(arguments, tool.contract.secret_fields)
            reason, message = scrub(str(failure.reason), secrets), scrub(str(failure.message), secrets)
            if isinstance(failure.error, ToolError):   # the tool built the error itself: keep its shape, scrub it all
                error = scrub_error(failure.error, secrets)
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
            secrets = secret_values(arguments, tool.contract.secret_fields)
            return ToolResult(call.call_id, Status.FAILED, output=output, failure_class=FailureClass.POSTCONDITION,
                              reason="postcondition_failed",
                              errors=tuple(scrub_error(e, secrets) for e in broken[:MAX_ERRORS_PER_CALL]))
        evidence = output.get("evidence", {}) if isinstance(output, dict) else {}
        return ToolResult(call.call_id, Status.SUCCEEDED, output=output, evidence=evidence)


def not_a_call(obj: Any) -> ToolResult:
    """The result for something handed to an executor that is not a ``ToolCall`` (a ``Preview``, a dict...)."""
    return ToolResult(shown_call_id(getattr(obj, "call_id", None)), Status.REJECTED,
                      failure_class=FailureClass.SCHEMA, reason="not_a_call", errors=(not_a_call_error(obj),))


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
