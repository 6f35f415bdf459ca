"""Chapter 05: the class's tally: invoices and duplicates per order and per student, read from the shared service.

A duplicate is an invoice beyond the first that one student's agent made for
one order. ``class_counts(url)`` reads every invoice from the billing service
and counts, per order (the students who billed it, their invoices and
duplicates) and per student (orders, invoices, duplicates). ``ClassCounts.text()``
is the dashboard's text form, the same for the same books; the instructor's
dashboard (``deploy/class_dashboard.ipynb``, served with Voila) shows it as a
table and keeps it fresh with ``CountsWatch``, a thread that reads the
service every few seconds until it is stopped.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from toolkit.kernel import ToolFailure
from course.worlds import BillingClient

#: How an invoice made without a student tag is counted.
UNTAGGED = "(untagged)"


@dataclass(frozen=True)
class Tally:
    """One row of the tally: a name (an order or a student), how many of the other, invoices and duplicates."""

    name: str
    among: int          # students who billed this order, or orders this student billed
    invoices: int
    duplicates: int


@dataclass(frozen=True)
class ClassCounts:
    """The room's tally: one row per order and one per student, in a fixed order."""

    per_order: tuple[Tally, ...]
    per_student: tuple[Tally, ...]

    @property
    def invoices(self) -> int:
        return sum(row.invoices for row in self.per_order)

    @property
    def duplicates(self) -> int:
        return sum(row.duplicates for row in self.per_order)

    def student(self, name: str) -> Tally | None:
        """The row of one student, or None if the student has made no invoice."""
        return next((row for row in self.per_student if row.name == name), None)

    def lines(self) -> list[str]:
        """Both tables as aligned text, then the totals."""
        width = max([len("student")] + [len(row.name) for row in self.per_order + self.per_student])
        out = [f"{'order':<{width}}  students  invoices  duplicates"]
        out += [f"{r.name:<{width}}  {r.among:>8}  {r.invoices:>8}  {r.duplicates:>10}" for r in self.per_order]
        out += ["", f"{'student':<{width}}    orders  invoices  duplicates"]
        out += [f"{r.name:<{width}}  {r.among:>8}  {r.invoices:>8}  {r.duplicates:>10}" for r in self.per_student]
        out += ["", f"in all: {_count(self.invoices, 'invoice')}, {_count(self.duplicates, 'duplicate')}"]
        return out

    def text(self) -> str:
        return "\n".join(self.lines())


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def tally(invoices: Iterable[dict[str, Any]]) -> ClassCounts:
    """Count invoices per (order, student), then add them up per order and per student."""
    made: dict[tuple[str, str], int] = defaultdict(int)
    for invoice in invoices:
        made[(str(invoice.get("order_id", "")), str(invoice.get("student") or UNTAGGED))] += 1

    def rows(side: int) -> tuple[Tally, ...]:
        grouped: dict[str, list[int]] = defaultdict(list)
        for pair, count in made.items():
            grouped[pair[side]].append(count)
        return tuple(Tally(name, len(counts), sum(counts), sum(c - 1 for c in counts))
                     for name, counts in sorted(grouped.items(), key=lambda item: _order_key(item[0])))

    return ClassCounts(rows(0), rows(1))


def _order_key(name: str) -> tuple:
    """order-2 before order-10; other names alphabetically."""
    head, _, number = name.rpartition("-")
    return (head, int(number), "") if number.isdigit() else (name, -1, name)


def class_counts(url: str, timeout: float = 10.0) -> ClassCounts:
    """The tally of every invoice the billing service at ``url`` holds."""
    return tally(BillingClient(url=url, timeout=timeout).invoices())


class CountsWatch:
    """Reads the tally every ``every`` seconds in a thread and hands it to ``show``, until stopped.

    ``show`` receives a ``ClassCounts``, or a sentence when the service could
    not be read. A context manager; ``start()`` and ``stop()`` do the same by
    hand (a dashboard keeps it running while the room works). It stops by
    itself after ``limit`` seconds.
    """

    def __init__(self, url: str, show: Callable[[ClassCounts | str], None], every: float = 3.0,
                 limit: float = 4 * 3600.0):
        self.url, self.show, self.every, self.limit = url, show, every, limit
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reads = 0

    def read_once(self) -> ClassCounts | str:
        try:
            counts: ClassCounts | str = class_counts(self.url)
        except (ToolFailure, OSError, ValueError) as failure:
            counts = f"the billing service at {self.url} could not be read: {getattr(failure, 'message', failure)}"
        self.reads += 1
        self.show(counts)
        return counts

    def _loop(self) -> None:
        waited = 0.0
        while not self._stop.wait(self.every) and waited < self.limit:
            waited += self.every
            self.read_once()

    def start(self) -> "CountsWatch":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="class-counts", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.every + 15.0)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "CountsWatch":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["ClassCounts", "CountsWatch", "Tally", "UNTAGGED", "class_counts", "tally"]
