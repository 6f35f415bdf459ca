"""Chapters 02-04, 08: how a verdict, the indicator, a loop step, a choice, a contract and a plan print.

Each kernel object's ``line``/``lines``/``card``/``text`` is one function here, e.g.
``legal_line(0, 1, 1)`` -> ``legal = 0 x 1 x 1 = 0`` (a test that could not run prints ``–``)."""
from __future__ import annotations

from typing import Any, Iterable

from toolkit._show import call_line


def legal_line(schema_ok: Any, auth_ok: Any, pre: Any) -> str:
    """The indicator written out, e.g. ``legal = 0 x 1 x 1 = 0``; a test that was not evaluable shows ``–``."""
    from toolkit.kernel.legality import legal

    shown = " x ".join(_symbol(v) for v in (schema_ok, auth_ok, pre))
    return f"legal = {shown} = {legal(schema_ok, auth_ok, pre)}"


def _symbol(value: Any) -> str:   # 1 or 0, or – for a test that could not run
    from toolkit.kernel.legality import Outcome, legal

    return "–" if getattr(value, "outcome", value) is Outcome.NOT_EVALUABLE else str(legal(value, 1, 1))


def legality_lines(verdict: Any) -> list[str]:
    """One line per test, e.g. ``schema_ok fail          $.path: unexpected property``, then ``legal_line``."""
    out = [f"{t.name:<9} {t.outcome.value:<13} {'; '.join(e.line() for e in t.errors)}".rstrip()
           for t in verdict.tests]
    return out + [legal_line(*verdict.tests)]


def observation_line(observation: Any) -> str:
    """One transcript line: what was proposed (the contract's secret fields masked) and what came of it."""
    o = observation
    detail = f" ({o.result.reason})" if o.result.reason else ""
    shown = call_line(o.call.name, o.call.arguments, o.call.call_id, o.secret_fields)
    return f"{o.kind:<8} {shown} -> {o.result.status.value}{detail}"


def choice_lines(choice: Any) -> list[str]:
    """One row per option: its score and which one is chosen; illegal options are listed, unscored."""
    width = max((len(n) for n in [*choice.scores, *choice.excluded]), default=0)
    rows = [f"{name:<{width}}  {score:>6g}" + ("  <- chosen" if choice.best and name == choice.best.name else "")
            for name, score in choice.scores.items()]
    return rows + [f"{name:<{width}}  {'illegal':>6}  (never a candidate)" for name in choice.excluded]


def contract_card(contract: Any) -> str:
    """The card for ``contract``: what it requires, ensures, how a retry behaves, its risk and its evidence."""
    requires = [f"caller has {p}" for p in contract.permissions]
    requires += [c.description for c in contract.guards + contract.preconditions]
    if contract.needs_approval:
        requires.append("a person approved this call")
    retry = contract.retry.value
    if retry == "safe with same key":
        retry = f"safe with same {contract.idempotency_field or 'idempotency key'}"
    lines = [f"tool {contract.name}({', '.join(contract.parameters)})",
             f"  requires: {'; '.join(requires) or 'nothing'}",
             f"  ensures: {'; '.join(c.description for c in contract.postconditions) or 'nothing'}",
             f"  retry: {retry}",
             f"  risk: {contract.risk_category}",
             f"  evidence: {' and '.join(contract.evidence) or 'none'}"]
    return "\n".join(lines)


def plan_table(rows: list[dict[str, Any]], refused: Iterable[tuple[int, Any]]) -> str:
    """``wave  call  reads  writes  waits for``, sorted by wave (request order within one), then each refusal."""
    lines = [f"{'wave':<5} {'call':<24} {'reads':<22} {'writes':<22} waits for"]
    for row in sorted(rows, key=lambda r: r["wave"]):          # stable: request order within a wave
        call = f"{row['name']} #{row['call_id']}"
        lines.append(f"{row['wave']:<5} {call:<24} {', '.join(row['reads']) or '-':<22} "
                     f"{', '.join(row['writes']) or '-':<22} {'; '.join(row['waits_for']) or '-'}")
    lines += [f"{'-':<5} item {position} refused: {result.reason}" for position, result in refused]
    return "\n".join(lines)
