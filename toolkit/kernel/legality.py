"""Chapter 02: the legality indicator and the three validation layers.

    legal(u) = 1{ schema_ok(x) ∧ auth_ok(f) ∧ Pre_f(x) }

``check`` evaluates all three tests on every attempt, in the chapter's order
(schema -> permission/path -> business/approval), and records each as
pass, fail, or not evaluable. It never stops at the first failure, so a
blocked call names *every* test that stopped it. A test over arguments that
did not pass the schema is "not evaluable" rather than guessed, and the
printed product shows it as ``–``: ``legal = 0 x – x – = 0``.

``Pre`` is the business layer and asks two questions: is the world *ready*
(the contract's preconditions) and, when the contract asks for it, did a
person say this call is *intended* (approval of this call id)? A call can be
well-formed, permitted and ready and still not be what the user meant; only
approval catches that.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable

from toolkit.kernel.call import ToolCall
from toolkit.kernel.contract import Condition, Contract
from toolkit.kernel.call import ToolError
from toolkit._ids import call_id_error, not_a_call_error, unknown_tool_error
from toolkit._show import scrub_error, secret_values
from toolkit.kernel.call import FailureClass
from toolkit._schema import parse_arguments, schema_errors


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
    """One validation layer: the test that stands for it, its name, the class a refusal there is given,
    and the question it answers."""

    test: str
    name: str
    failure_class: FailureClass
    asks: str = ""


#: The layer map: the three validation layers in the order they run. Every table that
#: names a test's layer or failure class (host, audit, metrics, panels) reads it from here.
LAYERS = (
    Layer("schema_ok", "schema", FailureClass.SCHEMA, "are the arguments well-formed?"),
    Layer("auth_ok", "permission", FailureClass.AUTHORIZATION, "may this caller do this, here?"),
    Layer("Pre", "business", FailureClass.PRECONDITION,
          "is the world ready (preconditions), and did a person mean this call (approval)?"),
)
LAYER_OF: dict[str, Layer] = {layer.test: layer for layer in LAYERS}


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


#: The two questions inside ``Pre``, by the error code a "no" to each produces.
PRE_QUESTIONS: dict[str, str] = {"precondition_failed": "world ready", "approval_required": "intended"}


def legal(schema_ok: Any, auth_ok: Any, pre: Any) -> int:
    """The indicator itself: 1 when all three tests pass, else 0 (a product of bits)."""
    return _bit(schema_ok) * _bit(auth_ok) * _bit(pre)


def legal_line(schema_ok: Any, auth_ok: Any, pre: Any) -> str:
    """The indicator written out, e.g. ``legal = 0 x 1 x 1 = 0``; a test that was not evaluable shows ``–``."""
    shown = " x ".join(_symbol(v) for v in (schema_ok, auth_ok, pre))
    return f"legal = {shown} = {legal(schema_ok, auth_ok, pre)}"


def _symbol(value: Any) -> str:
    if isinstance(value, (Test, Outcome)):
        return value.symbol
    return str(_bit(value))


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
        out = []
        for t in self.tests:
            detail = "; ".join(e.line() for e in t.errors)
            out.append(f"{t.name:<9} {t.outcome.value:<13} {detail}".rstrip())
        out.append(legal_line(*self.tests))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def check(call: ToolCall, contract: Contract | None, caller: Caller = Caller(), world: Any = None,
          declared: Iterable[str] = ()) -> Verdict:
    """Evaluate schema_ok, auth_ok and Pre for one call; never raises on bad input.

    Whatever a model sent (any name, any id, any arguments, or something that is not a call at all),
    the verdict is structured and its errors are safe to show: short, and scrubbed of the call's secrets.
    """
    if not isinstance(call, ToolCall):
        return refused(call, not_a_call_error(call))
    bad_id = call_id_error(call.call_id)
    if bad_id is not None:
        return refused(call, bad_id)
    if contract is None or contract.name != call.name:
        return refused(call, unknown_tool_error(call.name, declared))
    arguments, errors = parse_arguments(call.arguments)
    if arguments is not None:
        errors = schema_errors(contract.validator, arguments, contract.secret_fields)
    schema = Test("schema_ok", Outcome.PASS if not errors else Outcome.FAIL, tuple(errors))
    usable = arguments if schema.outcome is Outcome.PASS else None
    auth = _auth_test(contract, caller, usable, world)
    pre = _pre_test(contract, call, caller, usable, world)
    if schema.errors or auth.errors or pre.errors:   # what a condition or the schema echoes may repeat a secret
        secrets = secret_values(arguments, contract.secret_fields) if arguments is not None else set()
        schema, auth, pre = (_scrubbed(t, secrets) for t in (schema, auth, pre))
    return Verdict(call, schema, auth, pre, usable)


def _scrubbed(test: Test, secrets: set[str]) -> Test:
    return Test(test.name, test.outcome, tuple(scrub_error(e, secrets) for e in test.errors)) if test.errors else test


def refused(call: Any, error: ToolError) -> Verdict:
    """The verdict for a request refused before its tests could run (not a call, a bad id, a repeated id)."""
    return Verdict(call, Test("schema_ok", Outcome.FAIL, (error,)),
                   Test("auth_ok", Outcome.NOT_EVALUABLE), Test("Pre", Outcome.NOT_EVALUABLE))


def _auth_test(contract: Contract, caller: Caller, arguments: dict | None, world: Any) -> Test:
    missing = [p for p in contract.permissions if p not in caller.scopes]
    errors = [ToolError("not_authorized", f"tool {contract.name}", f"caller lacks {p}", expected=p,
                        received=sorted(caller.scopes), hint="this call lies outside the caller's role",
                        retryable=False) for p in missing]
    if arguments is None and contract.guards:
        outcome = Outcome.FAIL if errors else Outcome.NOT_EVALUABLE
        return Test("auth_ok", outcome, tuple(errors))
    errors += _run_conditions(contract.guards, "path_refused", arguments, world)
    return Test("auth_ok", Outcome.FAIL if errors else Outcome.PASS, tuple(errors))


def _pre_test(contract: Contract, call: ToolCall, caller: Caller, arguments: dict | None, world: Any) -> Test:
    if arguments is None and (contract.preconditions or contract.needs_approval):
        return Test("Pre", Outcome.NOT_EVALUABLE)
    errors = _run_conditions(contract.preconditions, "precondition_failed", arguments or {}, world)
    if contract.needs_approval and call.call_id not in caller.approved:
        errors.append(ToolError("approval_required", f"tool {contract.name}", "a person must approve this call",
                                expected="human approval", received="not approved",
                                hint="ask for confirmation before retrying", retryable=False))
    return Test("Pre", Outcome.FAIL if errors else Outcome.PASS, tuple(errors))


def _run_conditions(conditions: Iterable[Condition], code: str, arguments: dict, world: Any) -> list[ToolError]:
    errors: list[ToolError] = []
    for condition in conditions:
        try:
            verdict = condition.predicate(arguments, world)
        except Exception as exc:  # a buggy condition refuses; it never lets a call through
            verdict = ToolError(code, "$", f"{condition.name} could not be checked ({type(exc).__name__})",
                                expected=condition.description, received="error", retryable=False)
        if isinstance(verdict, ToolError):
            errors.append(verdict)
        elif verdict is not True:
            errors.append(condition.failure(code))
    return errors
