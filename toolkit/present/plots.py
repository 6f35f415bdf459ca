"""Chapter 04: plots for the chapters (matplotlib, imported only when a plot is drawn)."""
from __future__ import annotations

from typing import Sequence

from toolkit.core import Option, choose, flip_point


def choice_flip(options: Sequence[Option], lam_c: float = 1.0, max_lam_r: float = 3.0, steps: int = 61):
    """Plot each legal option's score as the price of risk λr grows, and shade which one is chosen.

    Each option keeps one colour for its line and its shading (illegal options get no line
    and are never shaded). Wherever the chosen option changes, a dashed vertical line marks
    the exact flip point (``toolkit.core.scoring.flip_point``). Returns the figure.
    """
    import matplotlib.pyplot as plt

    options = list(options)
    colour = {option.name: f"C{i}" for i, option in enumerate(options)}
    grid = [max_lam_r * i / (steps - 1) for i in range(steps)]
    half = max_lam_r / (2 * (steps - 1))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for option in options:
        if option.legal == 1:
            ax.plot(grid, [option.score(lam_c, r) for r in grid], label=option.name, color=colour[option.name])
    winners = [choose(options, lam_c, r).best for r in grid]
    for r, best in zip(grid, winners):
        if best is not None:
            ax.axvspan(r - half, r + half, color=colour[best.name], alpha=0.08, linewidth=0)
    for before, after in zip(winners, winners[1:]):
        if before is not None and after is not None and before is not after:
            flip = flip_point(before, after, lam_c)
            if flip is not None:
                ax.axvline(flip, color="0.3", linestyle="--", linewidth=1)
                ax.annotate(f"λr = {flip:g}", (flip, 0.02), xycoords=("data", "axes fraction"),
                            xytext=(4, 0), textcoords="offset points", fontsize=9)
    ax.set_xlabel("λr, the price of one unit of risk")
    ax.set_ylabel("governed score")
    ax.set_title("Which legal call wins as risk is priced")
    ax.legend()
    fig.tight_layout()
    return fig
