"""Plots for the chapters (matplotlib, imported only when a plot is drawn)."""
from __future__ import annotations

from typing import Sequence

from ..scoring import Option, choose


def choice_flip(options: Sequence[Option], lam_c: float = 1.0, max_lam_r: float = 3.0, steps: int = 61):
    """Plot each legal option's score as the price of risk λr grows, and shade which one is chosen."""
    import matplotlib.pyplot as plt

    grid = [max_lam_r * i / (steps - 1) for i in range(steps)]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for option in options:
        if option.legal == 1:
            ax.plot(grid, [option.score(lam_c, r) for r in grid], label=option.name)
    winners = [choose(options, lam_c, r).best for r in grid]
    for r, best in zip(grid, winners):
        if best is not None:
            ax.axvspan(r - max_lam_r / (2 * (steps - 1)), r + max_lam_r / (2 * (steps - 1)),
                       color=f"C{list(options).index(best)}", alpha=0.08, linewidth=0)
    ax.set_xlabel("λr, the price of one unit of risk")
    ax.set_ylabel("governed score")
    ax.set_title("Which legal call wins as risk is priced")
    ax.legend()
    fig.tight_layout()
    return fig
