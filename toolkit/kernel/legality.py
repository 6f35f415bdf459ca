"""Chapter 02: the legality indicator: a call may run only when all three tests pass.

    legal(u) = 1{ schema_ok(x) ∧ auth_ok(f) ∧ Pre_f(x) }

``check`` runs all three tests on every attempt, in layer order, and logs each as pass, fail or not evaluable (a
test over arguments the schema refused is never guessed: ``–``), so a blocked call names *every* test that stopped
it. ``Pre`` asks two questions: is the world *ready* (preconditions), did a person *intend* this call (approval)?
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable

from toolkit.kernel.call import FailureClass, ToolCall, ToolError
from toolkit.kernel.contract import Contract
from toolkit._conditions import condition_errors
from toolkit._printed import legality_lines
from toolkit._schema import parse_arguments, schema_errors
from toolkit._ids import request_problem
from toolkit._show import scrubbed_errors


def legal(schema_ok: Any, auth_ok: Any, pre: Any) -> int:
    """The indicator itself: 1 when all three tests pass, else 0 (a product of bits)."""
    return _bit(schema_ok) * _bit(auth_ok) * _bit(pre)


def check(call: ToolCall, contract: Contract | None, caller: "Caller | None" = None, world: Any = None,
          declared: Iterable[str] = ()) -> "Verdict":
    """Run schema_ok, auth_ok and Pre for one call and log all three; never raises, whatever a model sent."""
    caller = caller if caller is not None else Caller()
    problem = request_problem(call, contract, declared)   # not a call, an unusable id, an undeclared tool
    if problem is not None:
        return refused(call, problem)
    arguments, errors = parse_arguments(call.arguments)
    if arguments is not None:
        errors = schema_errors(contract.validator, arguments, contract.secret_fields)
    usable = None if errors else arguments   # the later tests never guess what malformed arguments meant
    tests = (_test("schema_ok", errors), _auth_test(contract, caller, usable, world),
             _pre_test(contract, call, caller, usable, world))
    safe = (Test(t.name, t.outcome, scrubbed_errors(t.errors, arguments, contract.secret_fields)) for t in tests)
    return Verdict(call, *safe, usable)   # errors scrubbed: a condition or the schema may echo a secret


class Outcome(str, Enum):
    """One test's result. Only PASS counts as 1 in the indicator; NOT_EVALUABLE is not a guess."""

    PASS = "pass"
    FAIL = "fail"
    NOT_EVALUABLE = "not evaluable"


@dataclass(frozen=True, slots=True)
class Test:
    """The result of one of the three tests, with the errors behind a failure."""

    name: str
    outcome: Outcome
    errors: tuple[ToolError, ...] = ()


@dataclass(frozen=True)
class Layer:
    """One validation layer: its test, name, a refusal's class there, the question it asks, a pass in a word."""

    test: str
    name: str
    failure_class: FailureClass
    asks: str = ""
    passed: str = ""


#: The layer map, in the order the layers run: every table naming a test's layer or failure class reads it.
LAYERS = (
    Layer("schema_ok", "schema", FailureClass.SCHEMA, "are the arguments well-formed?", "well-formed"),
    Layer("auth_ok", "permission", FailureClass.AUTHORIZATION, "may this caller do this, here?", "permitted"),
    Layer("Pre", "business", FailureClass.PRECONDITION,
          "is the world ready (preconditions), and did a person mean this call (approval)?", "world ready"),
)
LAYER_OF: dict[str, Layer] = {layer.test: layer for layer in LAYERS}

#: The two questions inside ``Pre``, by the error code a "no" to each produces.
PRE_QUESTIONS: dict[str, str] = {"precondition_failed": "world ready", "approval_required": "intended"}


@dataclass(frozen=True)
class Caller:
    """Who is asking: the scopes they hold and the call ids a person approved."""

    name: str = "agent"
    scopes: frozenset[str] = frozenset()
    approved: frozenset[str] = frozenset()

    def with_scopes(self, *scopes: str) -> "Caller":
        return Caller(self.name, self.scopes | set(scopes), self.approved)

    def approving(self, *call_ids: str) -> "Caller":
        return Caller(self.name, self.scopes, self.approved | set(call_ids))


def _bit(value: Any) -> int:   # only a pass counts: a Test or Outcome that passed, True, or 1
    value = value.outcome if isinstance(value, Test) else value
    return 1 if value is Outcome.PASS or value is True or value == 1 else 0


@dataclass(frozen=True, slots=True)
class Verdict:
    """All three tests for one attempt, and the indicator they give."""

    call: ToolCall
    schema_ok: Test
    auth_ok: Test
    pre: Test
    arguments: dict | None = field(default=None, compare=False, repr=False)   # raw values: never printed

    @property
    def tests(self) -> tuple[Test, Test, Test]:
        return (self.schema_ok, self.auth_ok, self.pre)

    @property
    def legal(self) -> int:
        """The indicator for this attempt: 1 when schema_ok, auth_ok and Pre all pass, else 0."""
        return legal(*self.tests)

    @property
    def blocked_by(self) -> tuple[str, ...]:
        """Names of the tests that failed (not-evaluable ones are not blamed)."""
        return tuple(t.name for t in self.tests if t.outcome is Outcome.FAIL)

    @property
    def errors(self) -> tuple[ToolError, ...]:
        """Every structured error behind this verdict, in layer order (what goes back to the model)."""
        return tuple(e for t in self.tests for e in t.errors)

    def lines(self) -> list[str]:
        """One line per test (``schema_ok fail $.path: ...``), then the product (``legal = 0 x – x – = 0``)."""
        return legality_lines(self)

    def __str__(self) -> str:
        return "\n".join(self.lines())


def refused(call: Any, error: ToolError) -> Verdict:
    """The verdict for a request refused before its tests could run (not a call, a bad id, a repeated id)."""
    return Verdict(call, Test("schema_ok", Outcome.FAIL, (error,)),
                   Test("auth_ok", Outcome.NOT_EVALUABLE), Test("Pre", Outcome.NOT_EVALUABLE))


def _auth_test(contract: Contract, caller: Caller, arguments: dict | None, world: Any) -> Test:
    errors = [ToolError("not_authorized", f"tool {contract.name}", f"caller lacks {p}", expected=p,
                        received=sorted(caller.scopes), hint="this call lies outside the caller's role",
                        retryable=False) for p in contract.permissions if p not in caller.scopes]
    if arguments is None and contract.guards:   # path guards need arguments the schema accepted
        return Test("auth_ok", Outcome.FAIL if errors else Outcome.NOT_EVALUABLE, tuple(errors))
    return _test("auth_ok", errors + condition_errors(contract.guards, "path_refused", arguments, world))


def _pre_test(contract: Contract, call: ToolCall, caller: Caller, arguments: dict | None, world: Any) -> Test:
    if arguments is None and (contract.preconditions or contract.needs_approval):
        return Test("Pre", Outcome.NOT_EVALUABLE)
    errors = condition_errors(contract.preconditions, "precondition_failed", arguments or {}, world)
    if contract.needs_approval and call.call_id not in caller.approved:
        errors.append(ToolError("approval_required", f"tool {contract.name}", "a person must approve this call",
                                expected="human approval", received="not approved",
                                hint="ask for confirmation before retrying", retryable=False))
    return _test("Pre", errors)


def _test(name: str, errors: list[ToolError]) -> Test:
    return Test(name, Outcome.FAIL if errors else Outcome.PASS, tuple(errors))
