"""Chapter 02: the legality indicator: a call may run only when all three tests pass.

    legal(u) = 1{ schema_ok(x) ∧ auth_ok(f) ∧ Pre_f(x) }

``check`` runs all three tests on every attempt, in the chapter's order (schema, then permission/path, then
business/approval), and logs each as pass, fail or not evaluable: it never stops at the first failure, so a
blocked call names *every* test that stopped it. A test over arguments that failed the schema is "not
evaluable", never guessed, and prints as ``–``: ``legal = 0 x – x – = 0``. ``Pre`` asks two questions: is the
world *ready* (preconditions) and, when the contract asks, did a person *intend* this call (approval)?
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable

from toolkit.kernel.call import FailureClass, ToolCall, ToolError
from toolkit.kernel.contract import Contract
from toolkit._conditions import condition_errors
from toolkit._schema import parse_arguments, schema_errors
from toolkit._screen import request_problem
from toolkit._show import scrubbed_errors


def legal(schema_ok: Any, auth_ok: Any, pre: Any) -> int:
    """The indicator itself: 1 when all three tests pass, else 0 (a product of bits)."""
    return _bit(schema_ok) * _bit(auth_ok) * _bit(pre)


def check(call: ToolCall, contract: Contract | None, caller: "Caller | None" = None, world: Any = None,
          declared: Iterable[str] = ()) -> "Verdict":
    """Run schema_ok, auth_ok and Pre for one call and log all three; never raises on bad input.

    Whatever a model sent, the verdict is structured and its errors are safe to show (short, secrets scrubbed).
    """
    caller = caller if caller is not None else Caller()
    problem = request_problem(call, contract, declared)   # not a call, an unusable id, an undeclared tool
    if problem is not None:
        return refused(call, problem)
    arguments, errors = parse_arguments(call.arguments)
    if arguments is not None:
        errors = schema_errors(contract.validator, arguments, contract.secret_fields)
    schema = Test("schema_ok", Outcome.FAIL if errors else Outcome.PASS, tuple(errors))
    usable = None if errors else arguments
    tests = (schema, _auth_test(contract, caller, usable, world), _pre_test(contract, call, caller, usable, world))
    safe = (Test(t.name, t.outcome, scrubbed_errors(t.errors, arguments, contract.secret_fields)) for t in tests)
    return Verdict(call, *safe, usable)   # errors scrubbed: a condition or the schema may echo a secret


class Outcome(str, Enum):
    """One test's result. Only PASS counts as 1 in the indicator; NOT_EVALUABLE is not a guess."""

    PASS = "pass"
    FAIL = "fail"
    NOT_EVALUABLE = "not evaluable"

    @property
    def bit(self) -> int:
        return 1 if self is Outcome.PASS else 0

    @property
    def symbol(self) -> str:
        """How the printed product shows this outcome: ``1``, ``0``, or ``–`` for a test that could not run."""
        return "–" if self is Outcome.NOT_EVALUABLE else str(self.bit)


@dataclass(frozen=True, slots=True)
class Test:
    """The result of one of the three tests, with the errors behind a failure."""

    name: str
    outcome: Outcome
    errors: tuple[ToolError, ...] = ()

    @property
    def bit(self) -> int:
        return self.outcome.bit

    @property
    def symbol(self) -> str:
        return self.outcome.symbol


@dataclass(frozen=True)
class Layer:
    """One validation layer: its test, its name, the class a refusal there gets, the question it asks, and what a
    pass means in a word."""

    test: str
    name: str
    failure_class: FailureClass
    asks: str = ""
    passed: str = ""


#: The layer map, in the order the layers run. Every table that names a test's layer or failure class
#: (host, audit, metrics, panels) reads it from here.
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


def legal_line(schema_ok: Any, auth_ok: Any, pre: Any) -> str:
    """The indicator written out, e.g. ``legal = 0 x 1 x 1 = 0``; a test that was not evaluable shows ``–``."""
    shown = " x ".join(v.symbol if isinstance(v, (Test, Outcome)) else str(_bit(v)) for v in (schema_ok, auth_ok, pre))
    return f"legal = {shown} = {legal(schema_ok, auth_ok, pre)}"


def _bit(value: Any) -> int:
    if isinstance(value, (Test, Outcome)):
        return value.bit
    return 1 if value is True or value == 1 else 0


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
        """One line per test, e.g. ``schema_ok  fail  $.path: unexpected property``, then the product."""
        out = [f"{t.name:<9} {t.outcome.value:<13} {'; '.join(e.line() for e in t.errors)}".rstrip()
               for t in self.tests]
        return out + [legal_line(*self.tests)]

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
    errors += condition_errors(contract.guards, "path_refused", arguments, world)
    return Test("auth_ok", Outcome.FAIL if errors else Outcome.PASS, tuple(errors))


def _pre_test(contract: Contract, call: ToolCall, caller: Caller, arguments: dict | None, world: Any) -> Test:
    if arguments is None and (contract.preconditions or contract.needs_approval):
        return Test("Pre", Outcome.NOT_EVALUABLE)
    errors = condition_errors(contract.preconditions, "precondition_failed", arguments or {}, world)
    if contract.needs_approval and call.call_id not in caller.approved:
        errors.append(ToolError("approval_required", f"tool {contract.name}", "a person must approve this call",
                                expected="human approval", received="not approved",
                                hint="ask for confirmation before retrying", retryable=False))
    return Test("Pre", Outcome.FAIL if errors else Outcome.PASS, tuple(errors))
