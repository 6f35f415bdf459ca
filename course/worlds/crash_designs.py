"""Chapter 05: the duplicate-invoice designs side by side: which run a choice of guards plays, and the crash matrix.

``guarded_run`` says which run plays a choice of guards (a durable key, an
atomic ledger, a billing service that honours keys): the chapter's panel shows
it, and ``AGENT_TEXT`` says in the scenario's words what that run's agent does.
``crash_matrix`` plays every crash point against every design, all runs side
by side (``course.worlds.crash.run_scenarios``), and counts the invoices
each left behind; ``matrix_table`` prints it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from course.worlds import run_scenarios
from course.worlds import CRASH_POINTS, MODES

#: What each agent does, in the scenario's words, with its ledger on disk (True) or in memory (False).
AGENT_TEXT: dict[tuple[str, bool], str] = {
    ("naive", True): "the agent makes the invoice, then writes its key to a ledger on disk in a separate step; "
                     "billing ignores keys",
    ("atomic", True): "the agent writes the invoice and its key in one SQLite transaction, in billing's own database",
    ("keyed", True): "the agent marks its key pending on disk, calls billing, then marks it done; "
                     "billing recognizes the key",
    ("naive", False): "the agent makes the invoice, then keeps its key in its own memory; billing ignores keys",
    ("keyed", False): "the agent marks its key pending in its own memory, calls billing, then marks it done; "
                      "billing recognizes the key",
}

#: The column the matrix adds with ``in_memory=True``: the naive agent with its ledger in its memory.
IN_MEMORY = "in memory"


def crash_matrix(modes: tuple[str, ...] = MODES, points: tuple[str, ...] = tuple(CRASH_POINTS), *,
                 in_memory: bool = False, played: dict | None = None,
                 context: str | None = None) -> list[dict[str, Any]]:
    """Every crash point x every design -> invoices for order-431 after the retry.

    One row per crash point: ``{"crash_at": ..., "naive": n, "atomic": n, "keyed": n}``, and first an
    ``"in memory"`` column (the naive agent, its ledger in memory) when ``in_memory``. Every run is real and
    all of them are played side by side. ``played`` (outcomes by ``(mode, crash_at, durable)``) lends the
    runs already played, and receives the new ones: each setting is played once.
    """
    columns = ([(IN_MEMORY, "naive", False)] if in_memory else []) + [(mode, mode, True) for mode in modes]
    settings = [(mode, point, durable) for point in points for _, mode, durable in columns]
    known = {} if played is None else played
    missing = [setting for setting in dict.fromkeys(settings) if setting not in known]
    known.update(zip(missing, run_scenarios(missing, context=context)))
    counts = iter(known[setting]["invoice_count"] for setting in settings)
    return [{"crash_at": point, **{name: next(counts) for name, _, _ in columns}} for point in points]


def matrix_table(rows: list[dict[str, Any]]) -> str:
    """The matrix as aligned text, ready to print."""
    names = [k for k in rows[0] if k != "crash_at"] if rows else []
    width = max([len("crash point")] + [len(r["crash_at"]) for r in rows])
    sizes = [max(6, len(name)) for name in names]
    lines = [f"{'crash point':<{width}}  " + "  ".join(f"{m:>{n}}" for m, n in zip(names, sizes))]
    lines += [f"{r['crash_at']:<{width}}  " + "  ".join(f"{r[m]:>{n}}" for m, n in zip(names, sizes)) for r in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class GuardedRun:
    """The run a choice of guards plays: the agent, the crash point, where its ledger lives, and notes."""

    mode: str
    crash_at: str
    durable: bool = True
    notes: tuple[str, ...] = ()

    @property
    def agent(self) -> str:
        """What this run's agent does, in the scenario's words."""
        return AGENT_TEXT[(self.mode, self.durable)]


def guarded_run(durable: bool, atomic: bool, honours: bool, crash_at: str) -> GuardedRun:
    """Which run plays a durable key, an atomic ledger and a billing service that honours keys (each on or off).

    An atomic ledger plays the atomic agent: its ledger lives in billing's
    database, so it is on disk whatever ``durable`` says, and billing's key
    check plays no part. Otherwise billing honouring keys plays the keyed
    agent, else the naive one, with its ledger on disk or (``durable`` off) in
    its memory.
    """
    if crash_at not in CRASH_POINTS:
        raise ValueError(f"crash point must be one of {tuple(CRASH_POINTS)}, not {crash_at!r}")
    if not atomic:
        return GuardedRun("keyed" if honours else "naive", crash_at, durable)
    notes = []
    if not durable:
        notes.append("the key is on disk anyway: an atomic ledger lives in billing's database")
    if honours:
        notes.append("billing's own key check does not come into it: the invoice and its key commit together")
    return GuardedRun("atomic", crash_at, True, tuple(notes))


__all__ = ["AGENT_TEXT", "GuardedRun", "IN_MEMORY", "crash_matrix", "guarded_run", "matrix_table"]
