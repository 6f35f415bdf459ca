"""Chapters 02, 04 and 06: the chapter's formulas as sympy expressions, for rendering and for checking numbers.

Each ``*_expr`` function returns a sympy expression (show it with ``latex``);
each evaluating function substitutes the chapter's numbers *exactly* (0.9 is
the rational 9/10, so ``0.9*10 - 2 - 1`` is exactly 6) and returns a plain
Python number. The concept modules compute the same numbers their own way;
the tests check that both agree.

sympy is imported inside the functions, so importing this module is cheap.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from toolkit.kernel import LAYERS


def _sp() -> Any:
    import sympy

    return sympy


def symbols() -> dict[str, Any]:
    """The named symbols used across the chapter's formulas."""
    sp = _sp()
    names = {
        "n": sp.Symbol("n", integer=True, nonnegative=True),
        "i": sp.Symbol("i", integer=True, nonnegative=True),
        "d0": sp.Symbol("d_0", positive=True),
        "beta": sp.Symbol("beta", positive=True),
        "d_max": sp.Symbol(r"d_{\max}", positive=True),
        "n_max": sp.Symbol(r"n_{\max}", integer=True, positive=True),
        "p": sp.Symbol("p", nonnegative=True),              # confidence the postcondition holds
        "V": sp.Symbol("V"),                                 # payoff if it does
        "EQ": sp.Symbol(r"\mathbb{E}[Q]"),                   # expected usefulness
        "C": sp.Symbol("C"),
        "R": sp.Symbol("R"),
        "lam_c": sp.Symbol("lambda_c", nonnegative=True),
        "lam_r": sp.Symbol("lambda_r", nonnegative=True),
    }
    for layer in LAYERS:                  # the three tests, named as the layer map names them
        names[layer.test] = sp.Symbol(r"\texttt{%s}" % layer.test.replace("_", r"\_"), integer=True)
    return names


def latex(expr: Any, **options: Any) -> str:
    """LaTeX text for an expression (what a notebook renders), terms kept in the chapter's order.

    ``options`` go to ``sympy.latex``, e.g. ``mul_symbol="times"`` for ``1 \\times 1 \\times 1``.
    """
    return _sp().latex(expr, order="none", **options)


def _exact(value: Any) -> Any:
    """A number as an exact sympy Rational (0.9 -> 9/10), via its decimal text."""
    sp = _sp()
    return sp.Rational(str(value)) if isinstance(value, float) else sp.sympify(value)


def _plain(value: Any) -> int | float | Fraction:
    """A sympy number as a plain Python number: int when whole, else Fraction when rational, else float."""
    sp = _sp()
    value = sp.nsimplify(value) if not isinstance(value, sp.Basic) else value
    if value.is_Integer:
        return int(value)
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    return float(value)


# ------------------------------------------------------------------ backoff
def delay_expr(capped: bool = False) -> Any:
    """The n-th delay, ``d0 * beta**n`` (``min(d_max, d0 * beta**n)`` when capped)."""
    sp, s = _sp(), symbols()
    d = sp.Mul(s["d0"], s["beta"] ** s["n"], evaluate=False)
    return sp.Min(s["d_max"], d) if capped else d


def total_wait_expr() -> Any:
    """Total waiting over the first ``n`` retries: ``d0 (beta**n - 1) / (beta - 1)``."""
    sp, s = _sp(), symbols()
    beta = s["beta"]
    return sp.Mul(s["d0"], sp.Add(beta ** s["n"], -1, evaluate=False),
                  sp.Pow(sp.Add(beta, -1, evaluate=False), -1), evaluate=False)


def total_wait_sum() -> Any:
    """The same total written as a sum, ``sum_{i=0}^{n-1} d0 beta**i`` (unevaluated)."""
    sp, s = _sp(), symbols()
    return sp.Sum(sp.Mul(s["d0"], s["beta"] ** s["i"], evaluate=False),
                  (s["i"], 0, sp.Add(s["n"], -1, evaluate=False)))


def closed_form_holds() -> bool:
    """sympy's own check that the sum equals the closed form (for beta != 1)."""
    sp = _sp()
    done = sp.piecewise_fold(total_wait_sum().doit())
    # doit splits on beta == 1; the closed form is the other ("otherwise") branch.
    if isinstance(done, sp.Piecewise):
        done = next(expr for expr, cond in done.args if cond is sp.true)
    return sp.simplify(done - total_wait_expr()) == 0


def delays(d0: float = 1, beta: float = 2, count: int = 4, d_max: float | None = None) -> list:
    """The first ``count`` delays from the formula, e.g. ``[1, 2, 4, 8]``."""
    s = symbols()
    expr = delay_expr(capped=d_max is not None)
    values = {s["d0"]: _exact(d0), s["beta"]: _exact(beta)}
    if d_max is not None:
        values[s["d_max"]] = _exact(d_max)
    return [_plain(expr.subs({**values, s["n"]: k})) for k in range(count)]


def total_wait(d0: float = 1, beta: float = 2, count: int = 4) -> int | float | Fraction:
    """The closed form evaluated, e.g. 1 + 2 + 4 + 8 = 15."""
    s = symbols()
    return _plain(total_wait_expr().subs({s["d0"]: _exact(d0), s["beta"]: _exact(beta), s["n"]: count}))


# ------------------------------------------------------------------ legality and score
def legal_expr(product: bool = False) -> Any:
    """The indicator ``1{schema_ok ∧ auth_ok ∧ Pre}``; ``product=True`` gives ``schema_ok·auth_ok·Pre``."""
    sp, s = _sp(), symbols()
    a, b, c = (s[layer.test] for layer in LAYERS)
    if product:
        return sp.Mul(a, b, c, evaluate=False)
    condition = sp.And(sp.Eq(a, 1), sp.Eq(b, 1), sp.Eq(c, 1))
    return sp.Piecewise((1, condition), (0, True))


def indicator_latex() -> str:
    r"""The chapter's notation, ``\mathbf{1}\{schema_ok ∧ auth_ok ∧ Pre\}``, from the same symbols."""
    s = symbols()
    inner = r" \land ".join(latex(s[layer.test]) for layer in LAYERS)
    return r"\mathbf{1}\{" + inner + r"\}"


def legal_value(schema_ok: int, auth_ok: int, pre: int) -> int:
    """The indicator evaluated: (1, 1, 1) -> 1, (0, 1, 1) -> 0."""
    s = symbols()
    return _plain(legal_expr().subs({s["schema_ok"]: schema_ok, s["auth_ok"]: auth_ok, s["Pre"]: pre}))


def legal_product_text(schema_ok: int, auth_ok: int, pre: int) -> str:
    """The chapter's arithmetic line, ``1×1×1 = 1``."""
    return f"{schema_ok}×{auth_ok}×{pre} = {legal_value(schema_ok, auth_ok, pre)}"


def score_expr(expected: bool = True) -> Any:
    """``E[Q] − λc·C − λr·R``; with ``expected=False`` E[Q] is written ``p·V`` (confidence × payoff)."""
    sp, s = _sp(), symbols()
    value = s["EQ"] if expected else sp.Mul(s["p"], s["V"], evaluate=False)
    return sp.Add(value, sp.Mul(-1, s["lam_c"], s["C"], evaluate=False),
                  sp.Mul(-1, s["lam_r"], s["R"], evaluate=False), evaluate=False)


def score_value(value: float, cost: float, risk: float, lam_c: float = 1, lam_r: float = 1,
                confidence: float | None = None) -> int | float | Fraction:
    """The governed score evaluated exactly: ``score_value(10, 2, 1, confidence=0.9)`` is 6."""
    s = symbols()
    if confidence is None:
        expr, values = score_expr(True), {s["EQ"]: _exact(value)}
    else:
        expr, values = score_expr(False), {s["p"]: _exact(confidence), s["V"]: _exact(value)}
    values.update({s["C"]: _exact(cost), s["R"]: _exact(risk), s["lam_c"]: _exact(lam_c),
                   s["lam_r"]: _exact(lam_r)})
    return _plain(expr.subs(values))


# ------------------------------------------------------------------ the chapter's numbers, all at once
def worked_numbers() -> dict[str, Any]:
    """Every worked number of the chapter, computed from the formulas (plain data for a cell to print)."""
    return {
        "score 0.9*10-2-1": score_value(10, 2, 1, confidence=0.9),
        "legal 1*1*1": legal_value(1, 1, 1),
        "legal 0*1*1": legal_value(0, 1, 1),
        "score read 8-1-1": score_value(8, 1, 1),
        "score edit 11-2-6": score_value(11, 2, 6),
        "score 10-2-1": score_value(10, 2, 1),
        "delays from d0=1": delays(1, 2, 4),
        "total wait of 4 retries": total_wait(1, 2, 4),
    }


__all__ = ["closed_form_holds", "delay_expr", "delays", "indicator_latex",
           "latex",
           "legal_expr", "legal_product_text", "legal_value", "score_expr", "score_value", "symbols",
           "total_wait", "total_wait_expr", "total_wait_sum", "worked_numbers"]


# ------------------------------------------------------------------ rendered for a notebook
def contract_signature_latex() -> str:
    r"""A tool with its four annotations: ``f : X \to Y, Pre_f(x), Post_f(x,y), Cost_f(x), Risk_f(x)``."""
    return (r"f : X \to Y,\quad \texttt{Pre}_f(x),\ \texttt{Post}_f(x,y),\ "
            r"\texttt{Cost}_f(x),\ \texttt{Risk}_f(x)")


def legality_latex() -> str:
    """The legality definition as the chapter writes it, each test with its argument."""
    return (r"\texttt{legal}(u_t) = \mathbf{1}\{\texttt{schema\_ok}(x_t) \land \texttt{auth\_ok}(f_t) "
            r"\land \texttt{Pre}_{f_t}(x_t)\}")


def choice_latex() -> str:
    """The policy's choice: the argmax of the governed score, over legal invocations only."""
    return (r"u_t^{*} = \arg\max_{u\,:\,\texttt{legal}(u)=1}\ "
            r"\mathbb{E}[Q(\sigma_t,u)] - \lambda_c C(u) - \lambda_r R(u)")


def show(latex_text: str) -> Any:
    """Display LaTeX in a notebook (an ``IPython.display.Math`` object)."""
    from IPython.display import Math

    return Math(latex_text)
