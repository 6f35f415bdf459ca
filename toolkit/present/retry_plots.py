"""Chapters 06 and 07: plots for retries and measurement: jitter variants, the schema-violation drift, the 202 trap.

The data behind the jitter plot (``jitter_waits``, ``peak_load``) is computed
in ``toolkit.effects.waits``; the ``*_plot`` functions only draw it with
matplotlib, imported only when a plot is drawn, and return the figure.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from toolkit.effects import Jitter, RetryPolicy, jitter_waits, peak_load, plan


def jitter_plot(policy: RetryPolicy, clients: int = 20, seed: int = 0, window: float = 0.1):
    """One panel per jitter variant: each client's wait before retry 1, 2, ..., over the planned delay ``d``."""
    import matplotlib.pyplot as plt

    waits = jitter_waits(policy, clients, seed)
    planned = plan(replace(policy, jitter=Jitter.NONE))
    retries = list(range(1, len(planned) + 1))
    fig, axes = plt.subplots(1, len(waits), figsize=(12, 3.4), sharey=True)
    for ax, (name, per_client) in zip(axes, waits.items()):
        for c, client in enumerate(per_client):
            offset = (c - (clients - 1) / 2) * 0.3 / max(1, clients)
            ax.plot([k + offset for k in retries], client, "o", markersize=3, alpha=0.6, color="C0")
        ax.plot(retries, planned, "k--", linewidth=1, label="planned d")
        ax.set_title(f"{name}\nat most {peak_load(per_client, window)} retries within {window:g}s", fontsize=10)
        ax.set_xlabel("retry number")
        ax.set_xticks(retries)
    axes[0].set_ylabel("wait before the retry (s)")
    axes[0].legend(loc="upper left")
    fig.suptitle(f"{clients} clients failing together, d0={policy.d0:g}s, beta={policy.beta:g}"
                 + (f", d_max={policy.d_max:g}s" if policy.d_max is not None else ""))
    fig.tight_layout()
    return fig


def drift_plot(rows: Sequence[dict], reference: float = 0.03):
    """The schema-violation rate per window (from ``toolkit.effects.metrics.drift``) against the habit behind it."""
    import matplotlib.pyplot as plt

    windows = [r["window"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(windows, [100 * r["rate"] for r in rows], "o-", label="schema violations read from the log")
    ax.plot(windows, [100 * r["habit"] for r in rows], "--", color="grey", label="chance of a stale habit")
    ax.axhline(100 * reference, color="C3", linewidth=1, linestyle=":", label=f"{100 * reference:g} % baseline")
    ax.set_xlabel(f"window ({rows[0]['calls']} calls each)" if rows else "window")
    ax.set_ylabel("rate (%)")
    ax.set_title("The rate climbs as schema and habits drift apart")
    ax.legend()
    fig.tight_layout()
    return fig


def gaming_plot(gamed: Sequence[dict], repaired: Sequence[dict]):
    """What the metric says and what is true, call by call (rows from ``toolkit.worlds.deploy.run_episode``)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    calls = [r["call"] for r in gamed]
    ax.plot(calls, [r["successful_calls"] for r in gamed], "o-", color="C3", label="successful calls (202 counts)")
    ax.plot(calls, [r["settled_healthy"] for r in gamed], "s-", color="C2", label="settled healthy (the truth)")
    ax.plot([r["call"] for r in repaired], [r["successful_calls"] for r in repaired], "x--", color="C0",
            label="successful calls (settled postcondition)")
    ax.set_xlabel("deploy call")
    ax.set_ylabel("count so far")
    ax.set_title("The metric rises; settled health lags behind")
    ax.legend()
    fig.tight_layout()
    return fig


__all__ = ["drift_plot", "gaming_plot", "jitter_plot"]
