"""Chapter 07: what to measure: tool evaluation counted from ordinary logs.

The chapter's list, each a ratio with its counts kept: schema and precondition violation rates,
postcondition success, duplicate-side-effect rate, rollback frequency, partial progress after failed
calls, and utility gain per call. ``measure`` reads neutral ``CallRow``s, built from an ``AuditLog``
(``rows_from_audit``) or a host's attempt log (``rows_from_attempts``); the chapter's example log is
``course.worlds.invoice_log``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from toolkit.kernel import LAYER_OF

#: The record states that count as a failed call (for progress after failure).
FAILED_STATES = frozenset({"failed", "rejected", "timeout", "cancelled", "awaiting_human"})


def measure(rows: Sequence[CallRow]) -> MetricsReport:
    """Compute every measure from call rows (in the order the calls were made)."""
    rows = list(rows)
    n = len(rows)
    ran = [r for r in rows if r.ran]
    per_operation: dict[str, int] = {}
    for r in rows:
        for op in r.effects:
            per_operation[op] = per_operation.get(op, 0) + 1
    failed_then = 0
    failed = [i for i, r in enumerate(rows) if r.final in FAILED_STATES]
    for i in failed:
        task = rows[i].task
        failed_then += any(later.task == task and later.final == "succeeded" for later in rows[i + 1:])
    return MetricsReport(
        calls=n,
        schema_violations=Rate(sum("schema" in r.failures for r in rows), n),
        precondition_violations=Rate(sum("precondition" in r.failures for r in rows), n),
        postcondition_success=Rate(sum(r.final == "succeeded" for r in ran), len(ran)),
        duplicate_side_effects=Rate(sum(k > 1 for k in per_operation.values()), len(per_operation)),
        rollbacks=Rate(sum(r.rolled_back for r in ran), len(ran)),
        progress_after_failure=Rate(failed_then, len(failed)),
        retries=sum(r.retries for r in rows),
        utility=sum(r.utility for r in rows),
    )


@dataclass(frozen=True)
class Rate:
    """``hits`` out of ``total``; ``value`` is 0.0 when there is nothing to count."""

    hits: int
    total: int

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.hits}/{self.total} = {100 * self.value:.1f}%"


@dataclass(frozen=True)
class CallRow:
    """One call as the metrics see it; ``effects`` names each durable side effect's operation."""

    call_id: str
    final: str
    task: str = ""
    tool: str = ""
    failures: tuple[str, ...] = ()
    retries: int = 0
    ran: bool = False
    effects: tuple[str, ...] = ()
    rolled_back: bool = False
    utility: float = 0.0


@dataclass(frozen=True)
class MetricsReport:
    """Every measure of the chapter for one log."""

    calls: int
    schema_violations: Rate
    precondition_violations: Rate
    postcondition_success: Rate
    duplicate_side_effects: Rate
    rollbacks: Rate
    progress_after_failure: Rate
    retries: int
    utility: float

    @property
    def utility_per_call(self) -> float:
        return self.utility / self.calls if self.calls else 0.0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls}
        for name in ("schema_violations", "precondition_violations", "postcondition_success",
                     "duplicate_side_effects", "rollbacks", "progress_after_failure"):
            out[name] = round(getattr(self, name).value, 6)
        out["retries"] = self.retries
        out["utility_per_call"] = round(self.utility_per_call, 6)
        return out

    def named(self) -> list[tuple[str, str]]:
        """Each measure's name and its value as shown (a rate with its counts)."""
        return [("calls", str(self.calls)),
                ("schema violation rate", str(self.schema_violations)),
                ("precondition violation rate", str(self.precondition_violations)),
                ("postcondition success", str(self.postcondition_success)),
                ("duplicate-side-effect rate", str(self.duplicate_side_effects)),
                ("rollback frequency", str(self.rollbacks)),
                ("progress after a failed call", str(self.progress_after_failure)),
                ("retries granted", str(self.retries)),
                ("utility gain per call", f"{self.utility_per_call:.3f}")]

    def lines(self) -> list[str]:
        return [f"{name:<30} {value}" for name, value in self.named()]


def side_by_side(reports: Mapping[str, MetricsReport]) -> list[str]:
    """Several logs' measures as one table: a column per labelled report."""
    wide = max([len(label) for label in reports] + [20])
    columns = [report.named() for report in reports.values()]
    out = [f"{'':<30}" + "".join(f" {label:>{wide}}" for label in reports)]
    for i, (name, _) in enumerate(columns[0]):
        out.append(f"{name:<30}" + "".join(f" {column[i][1]:>{wide}}" for column in columns))
    return out


def refusals_by_layer(rows: Sequence[CallRow]) -> dict[str, int]:
    """How many calls each layer refused: each refused call once, under the first layer that did."""
    counts = {layer.failure_class.value: 0 for layer in LAYER_OF.values()}
    for row in rows:
        first = next((klass for klass in row.failures if klass in counts), None)
        if first is not None:
            counts[first] += 1
    return counts


def rows_from_audit(log: Any) -> list[CallRow]:
    """Call rows from an ``AuditLog``'s events and marks (task, effect, rollback, utility)."""
    rows: dict[str, dict[str, Any]] = {}
    for e in log.events():
        row = rows.setdefault(e["call_id"], {"call_id": e["call_id"], "tool": e["tool"], "final": "requested",
                                             "failures": [], "effects": [], "ran": False, "retries": 0,
                                             "rolled_back": False, "utility": 0.0, "task": ""})
        if e["kind"] == "transition":
            row["final"] = e["target"]
            row["retries"] = max(row["retries"], e["retries"])
            row["ran"] |= e["target"] == "running"
            for klass in filter(None, e["failure"].split(",")):
                if klass not in row["failures"]:
                    row["failures"].append(klass)
        elif e["target"] == "task":
            row["task"] = e["note"]
        elif e["target"] == "effect":
            row["effects"].append(e["note"])
        elif e["target"] == "rollback":
            row["rolled_back"] = True
        elif e["target"] == "utility":
            row["utility"] += e["value"] or 0.0
    return [CallRow(**{**r, "failures": tuple(r["failures"]), "effects": tuple(r["effects"])})
            for r in rows.values()]


def rows_from_attempts(attempts: Iterable[Any], task_of: Any = None) -> list[CallRow]:
    """Call rows from a host's ``Attempt`` log (one call per id; no effects, rollbacks, utility)."""
    from toolkit.effects import FROM_STATUS

    grouped: dict[str, list[Any]] = {}
    for a in attempts:
        grouped.setdefault(a.call.call_id, []).append(a)
    rows = []
    for call_id, group in grouped.items():
        failures: list[str] = []
        for a in group:
            classes = [LAYER_OF[name].failure_class.value for name in a.verdict.blocked_by]
            if a.result.failure_class is not None:
                classes.append(a.result.failure_class.value)
            for klass in classes:
                if klass not in failures:
                    failures.append(klass)
        last = group[-1]
        rows.append(CallRow(call_id, FROM_STATUS[last.result.status].value,
                            task=task_of(last.call) if task_of else "", tool=last.call.name,
                            failures=tuple(failures), retries=len(group) - 1,
                            ran=any(a.verdict.legal for a in group)))
    return rows
