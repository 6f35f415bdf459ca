"""Chapter 04: choosing among the legal calls: the governed score.

    u* = argmax_u  E[Q(σ, u)] − λc·C(u) − λr·R(u)      over legal u only

A call is picked not because it is possible but because its expected value is worth its cost and its risk.
Illegal calls are never candidates.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from toolkit._printed import choice_lines


def choose(options: Iterable["Option"], lam_c: float = 1.0, lam_r: float = 1.0) -> "Choice":
    """Pick the legal option with the highest governed score; ties go to the earlier option."""
    options = list(options)
    candidates = [o for o in options if o.legal == 1]
    scores = {o.name: o.score(lam_c, lam_r) for o in candidates}
    best = max(candidates, key=lambda o: scores[o.name], default=None)
    return Choice(best, scores, tuple(o.name for o in options if o.legal != 1))


def expected_value(confidence: float, payoff: float) -> float:
    """Expected usefulness: the chance the postcondition holds times what success is worth."""
    return confidence * payoff


def governed_score(value: float, cost: float, risk: float, lam_c: float = 1.0, lam_r: float = 1.0) -> float:
    """``value − λc·cost − λr·risk``."""
    return value - lam_c * cost - lam_r * risk


@dataclass(frozen=True)
class Option:
    """A candidate invocation as the policy sees it."""

    name: str
    value: float
    cost: float
    risk: float
    legal: int = 1

    def score(self, lam_c: float = 1.0, lam_r: float = 1.0) -> float:
        """This option's governed score at the given prices."""
        return governed_score(self.value, self.cost, self.risk, lam_c, lam_r)

    @classmethod
    def from_contract(cls, contract: Any, value: float, name: str = "", legal: int = 1) -> "Option":
        """Cost and risk read from the tool's contract; only the value is the policy's guess."""
        return cls(name or contract.name, value, contract.cost, contract.risk, legal)


@dataclass(frozen=True)
class Choice:
    """The chosen option (None when nothing is legal), each legal option's score, and the illegal ones."""

    best: Option | None
    scores: dict[str, float]
    excluded: tuple[str, ...]

    def lines(self) -> list[str]:
        """One row per option: its score, ``<- chosen`` by the best; illegal options listed, unscored."""
        return choice_lines(self)
