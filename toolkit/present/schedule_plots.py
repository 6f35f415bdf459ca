"""Chapter 08: the scheduler's plan as a timeline, and what a real run did, measured in logical steps.

``timeline_text`` and ``timeline`` draw rows shaped like ``Plan.rows()``
(``call_id``, ``name``, ``start``, ``end``, optionally ``reads``, ``writes``,
``waits_for``): one bar per call, from the logical step it starts in to the one
it ends in. If every call takes one step, a plan of waves ``[[r1, r2, w1], [w2],
[r3]]`` needs three steps where one-at-a-time needs five.

``StepRecorder`` measures the same thing on a real, threaded run, without a
clock: it wraps the executor and notes, when each call starts, which calls have
already finished. A call's measured step is 0 if nothing had finished, else one
more than the latest step among those that had. Calls listed ``together`` meet at
a barrier inside the recorder, which opens only when every one of them is in
flight at the same moment, so a run that does not really overlap them fails
loudly instead of merely looking slower. Wall-clock time never appears, so the
numbers are the same on every run and every machine.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

from toolkit.core import ToolCall
from toolkit.core import ToolResult

Row = Mapping[str, Any]


def _waited_ids(row: Row) -> list[str]:
    """Call ids out of ``waits_for`` entries such as ``"w1 (write-write file:c.txt)"``."""
    return [entry.rsplit(" (", 1)[0] for entry in row.get("waits_for", [])]


def _touches(row: Row) -> str:
    parts = []
    if row.get("reads"):
        parts.append("reads " + ", ".join(row["reads"]))
    if row.get("writes"):
        parts.append("writes " + ", ".join(row["writes"]))
    return "; ".join(parts)


def timeline_text(rows: Sequence[Row], cell: int = 6) -> str:
    """The timeline as text: one line per call, a ``[####]`` block in each logical step it occupies."""
    if not rows:
        return "(no calls)"
    steps = max(int(r["end"]) for r in rows)
    labels = [f"{r['call_id']} {r['name']}" for r in rows]
    label_width = max(map(len, labels)) + 2
    head = " " * label_width + "".join(f"{f'step {s}':<{cell + 1}}" for s in range(steps))
    lines = [head.rstrip()]
    for label, r in zip(labels, rows):
        blocks = "".join(("[" + "#" * (cell - 2) + "] ") if r["start"] <= s < r["end"] else " " * (cell + 1)
                         for s in range(steps))
        notes = [_touches(r)] if _touches(r) else []
        if r.get("waits_for"):
            notes.append("after " + ", ".join(_waited_ids(r)))
        lines.append((f"{label:<{label_width}}{blocks} " + "; ".join(notes)).rstrip())
    return "\n".join(lines)


def timeline(rows: Sequence[Row], title: str = "plan", ax: Any = None) -> Any:
    """Draw rows as a timeline (matplotlib): bars in logical steps, coloured by tool, arrows for waits.

    Returns the figure. Calls are listed top to bottom in the order given.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(7.2, 0.4 * max(len(rows), 2) + 1.2))
    else:
        fig = ax.figure
    colours = {name: f"C{i}" for i, name in enumerate(dict.fromkeys(r["name"] for r in rows))}
    where = {r["call_id"]: (i, r) for i, r in enumerate(rows)}
    labelled: set[str] = set()
    for i, r in enumerate(rows):
        ax.barh(i, r["end"] - r["start"], left=r["start"], height=0.55, color=colours[r["name"]], alpha=0.8,
                edgecolor="black", linewidth=0.6, label=None if r["name"] in labelled else r["name"])
        labelled.add(r["name"])   # one legend entry per tool
        note = _touches(r)
        if note:
            ax.text(r["end"] + 0.05, i, note, va="center", fontsize=8)
        for waited in _waited_ids(r):
            if waited in where:
                j, before = where[waited]
                ax.annotate("", xy=(r["start"] + 0.12, i - 0.2), xytext=(before["end"] - 0.12, j + 0.2),
                            arrowprops={"arrowstyle": "->", "color": "0.25", "lw": 0.9})
    steps = max((int(r["end"]) for r in rows), default=1)
    ax.set_yticks(range(len(rows)), [f"{r['call_id']} {r['name']}" for r in rows])
    ax.invert_yaxis()
    ax.set_xticks(range(steps + 1))
    ax.set_xlim(0, steps + 2.2)
    ax.set_xlabel("logical step (every call takes one)")
    ax.set_title(title)
    ax.grid(axis="x", linestyle=":", alpha=0.6)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def timelines(panels: Mapping[str, Sequence[Row]]) -> Any:
    """Several timelines stacked, sharing the step axis (e.g. the plan, a measured run, a one-at-a-time run)."""
    import matplotlib.pyplot as plt

    heights = [max(len(rows), 2) for rows in panels.values()]
    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(7.2, 0.32 * sum(heights) + 1.1 * len(panels)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for n, (ax, (title, rows)) in enumerate(zip(axes[:, 0], panels.items())):
        timeline(rows, title, ax)
        if n < len(panels) - 1:
            ax.set_xlabel("")
    return fig


class StepRecorder:
    """Wraps an executor; records which calls had finished when each call started.

    ``recorder(call)`` runs ``execute(call)`` and returns its result, so a
    recorder can be handed to ``toolkit.wire.scheduler.run_plan`` or called in a
    plain loop. ``together`` lists groups of call ids that must be in flight at
    the same moment (e.g. ``plan.waves``): each group meets at a barrier that
    gives up after ``timeout`` seconds, and a call whose barrier broke raises,
    which the scheduler turns into a failed result.
    """

    def __init__(self, execute: Callable[[ToolCall], ToolResult], together: Iterable[Sequence[str]] = (),
                 timeout: float = 10.0):
        self.execute = execute
        self._lock = threading.Lock()
        self._finished: list[str] = []
        self._saw: dict[str, frozenset[str]] = {}
        self._names: dict[str, str] = {}
        self._order: list[str] = []
        self._barriers: dict[str, threading.Barrier] = {}
        self.met: dict[str, bool] = {}
        for group in together:
            if len(group) > 1:
                barrier = threading.Barrier(len(group), timeout=timeout)
                for call_id in group:
                    self._barriers[call_id] = barrier

    def __call__(self, call: ToolCall) -> ToolResult:
        with self._lock:
            self._saw[call.call_id] = frozenset(self._finished)
            self._names[call.call_id] = call.name
            self._order.append(call.call_id)
        try:
            barrier = self._barriers.get(call.call_id)
            if barrier is not None:
                try:
                    barrier.wait()
                    met = True
                except threading.BrokenBarrierError:
                    met = False
                with self._lock:
                    self.met[call.call_id] = met
                if not met:
                    raise RuntimeError(f"{call.call_id} waited in vain: its group was never in flight together")
            return self.execute(call)
        finally:
            with self._lock:
                self._finished.append(call.call_id)

    def _steps(self) -> dict[str, int]:
        """Every call's measured step, computed in start order (a call only saw calls that started before it)."""
        with self._lock:
            order, saw = list(self._order), dict(self._saw)
        steps: dict[str, int] = {}
        for call_id in order:
            steps[call_id] = 1 + max(steps[c] for c in saw[call_id]) if saw[call_id] else 0
        return steps

    def step(self, call_id: str) -> int:
        """The measured logical step of one call (0 if nothing had finished when it started)."""
        return self._steps()[call_id]

    def rows(self, order: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """One row per call that ran, shaped like ``Plan.rows()`` (``start``/``end`` in measured steps).

        ``order`` lists call ids to show (default: the order the calls started in).
        """
        steps = self._steps()
        ids = [c for c in (order if order is not None else self._order) if c in steps]
        return [{"call_id": c, "name": self._names[c], "start": steps[c], "end": steps[c] + 1} for c in ids]

    def finished_before(self, call_id: str) -> frozenset[str]:
        """The calls that had finished when ``call_id`` started (which ones depends on thread timing)."""
        return self._saw[call_id]

    def broken_waits(self, plan: Any) -> list[str]:
        """Calls of ``plan`` that started before a call they wait for had finished (empty when all were kept)."""
        problems = []
        for step in plan.steps:
            if step.call.call_id not in self._saw:
                continue
            early = [c for c, _ in step.waits_for if c not in self._saw[step.call.call_id]]
            if early:
                problems.append(f"{step.call.call_id} started before {', '.join(early)} finished")
        return problems

    @property
    def steps(self) -> int:
        """How many logical steps the run took: the longest chain of 'finished before the next started'."""
        return max((step + 1 for step in self._steps().values()), default=0)
