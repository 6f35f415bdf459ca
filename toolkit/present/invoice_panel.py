"""Chapter 05: a live view of the duplicate-invoice trace: choose the guards and the crash point, watch the invoices.

Every trace the panel shows comes from a real run (``toolkit.worlds.crash.run_scenario``):
a child process really dies (SIGKILL) at the chosen point, a retry follows, and
the invoices are counted in billing's own database. Which run a setting plays
is ``toolkit.worlds.crash.guarded_run``. A run gives the same trace every time,
so each run is played once and cached.
"""
from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

from toolkit.worlds import CRASH_POINTS, GuardedRun, guarded_run, run_scenario
from toolkit.present.text_view import pre_html

#: The dropdown: the scenario's crash points by name, and "no crash".
CRASH_CHOICES: tuple[tuple[str, str], ...] = tuple((("no crash" if p == "none" else p), p) for p in CRASH_POINTS)

_RUNS: dict[tuple[str, str, bool], dict[str, Any]] = {}


def scenario(mode: str, crash_at: str, durable: bool = True) -> dict[str, Any]:
    """``run_scenario(mode, crash_at, durable=durable)``, run once per setting and then served from a cache."""
    if (mode, crash_at, durable) not in _RUNS:
        _RUNS[(mode, crash_at, durable)] = run_scenario(mode, crash_at, durable=durable)
    return _RUNS[(mode, crash_at, durable)]


def clear_cache() -> None:
    """Forget every cached run (the next view runs its scenario again)."""
    _RUNS.clear()


def _listed(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "(empty)"


def outcome_text(setting: Mapping[str, Any], chosen: GuardedRun, outcome: Mapping[str, Any]) -> str:
    """What the panel shows: the setting, the run it plays, the trace, and the invoices at the end."""
    on = {True: "on", False: "off"}

    def crash(point: str) -> str:
        return "no crash" if point == "none" else f"crash at {point}"

    lines = [f"durable key: {on[setting['durable']]} | atomic ledger: {on[setting['atomic']]} | "
             f"billing honours keys: {on[setting['honours']]} | {crash(setting['crash_at'])}",
             f"run: {chosen.mode} agent, {crash(chosen.crash_at)}: {chosen.agent}"]
    lines += [f"note: {note}" for note in chosen.notes]
    lines += list(outcome["trace"])
    if outcome["crashed"]:
        after = outcome["after_crash"]
        ledger = _listed(after["ledger"]) if chosen.durable else "(in memory: gone with the process)"
        lines.append(f"just after the crash: invoices {_listed([i.split()[0] for i in after['invoices']])}; "
                     f"ledger {ledger}")
    names = [i.split()[0] for i in outcome["invoices"]]
    count = outcome["invoice_count"]
    verdict = ("a duplicate: the invoice was made before its key was safe" if count > 1
               else "one invoice, as promised" if count == 1 else "no invoice")
    lines.append(f"invoices for order-431: {count} ({_listed(names)}) - {verdict}")
    return "\n".join(lines)


def matrix_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """Crash-matrix rows (``{"crash_at": ..., column: invoices, ...}``) as an HTML table: 1 green, else red."""
    columns = [k for k in rows[0] if k != "crash_at"] if rows else []
    head = "".join(f"<th style='padding:2px 10px'>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = "".join(
            f"<td style='padding:2px 10px;text-align:center;background:{'#dafbe1' if row[c] == 1 else '#ffebe9'}'>"
            f"{html.escape(str(row[c]))}</td>" for c in columns)
        body.append(f"<tr><td style='padding:2px 10px'><code>{html.escape(str(row['crash_at']))}</code></td>"
                    f"{cells}</tr>")
    return ("<table><tr><th style='padding:2px 10px'>crash point</th>" + head + "</tr>"
            + "".join(body) + "</table>")


class InvoicePanel:
    """Three switches and a crash-point dropdown over the real duplicate-invoice run.

    Drive it from Python with ``.set(durable=..., atomic=..., honours=...,
    crash=...)`` and read ``.text()``; a click in the notebook updates the same
    text. ``.outcome`` is the run behind what is shown, as plain data.
    """

    def __init__(self, durable: bool = True, atomic: bool = False, honours: bool = False,
                 crash: str = "after_effect_before_ledger"):
        import ipywidgets as w

        self._holding = False
        layout = w.Layout(width="auto")
        self.durable = w.Checkbox(value=durable, description="durable key (ledger on disk; off: in memory)",
                                  indent=False, layout=layout)
        self.atomic = w.Checkbox(value=atomic, description="atomic ledger (invoice + key in one transaction)",
                                 indent=False, layout=layout)
        self.honours = w.Checkbox(value=honours, description="billing honours keys", indent=False, layout=layout)
        self.crash = w.Dropdown(options=list(CRASH_CHOICES), value=self._point(crash), description="crash",
                                style={"description_width": "initial"})
        self.view = w.HTML()
        for control in (self.durable, self.atomic, self.honours, self.crash):
            control.observe(self._update, names="value")
        self.widget = w.VBox([w.HBox([self.durable, self.atomic, self.honours]), self.crash, self.view])
        self._update()

    @staticmethod
    def _point(crash: str) -> str:
        point = "none" if crash == "no crash" else crash
        if point not in CRASH_POINTS:
            raise ValueError(f"crash must be one of {[label for label, _ in CRASH_CHOICES]}, not {crash!r}")
        return point

    def set(self, durable: bool | None = None, atomic: bool | None = None, honours: bool | None = None,
            crash: str | None = None) -> str:
        """Flip any switch or pick a crash point, as a student would, and return what is shown (one run)."""
        point = None if crash is None else self._point(crash)
        self._holding = True
        try:
            for control, value in ((self.durable, durable), (self.atomic, atomic), (self.honours, honours),
                                   (self.crash, point)):
                if value is not None:
                    control.value = value
        finally:
            self._holding = False
        self._update()
        return self.text()

    @property
    def setting(self) -> dict[str, Any]:
        return {"durable": self.durable.value, "atomic": self.atomic.value, "honours": self.honours.value,
                "crash_at": self.crash.value}

    @property
    def run(self) -> GuardedRun:
        """The run the current setting plays."""
        s = self.setting
        return guarded_run(s["durable"], s["atomic"], s["honours"], s["crash_at"])

    @property
    def invoice_count(self) -> int:
        return self.outcome["invoice_count"]

    def text(self) -> str:
        return self._text

    def _update(self, _change: object = None) -> None:
        if self._holding:
            return
        chosen = self.run
        self.outcome = scenario(chosen.mode, chosen.crash_at, chosen.durable)
        self._text = outcome_text(self.setting, chosen, self.outcome)
        colour = "#cf222e" if self.outcome["invoice_count"] != 1 else "#1a7f37"
        self.view.value = pre_html(self._text, colour)

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)


__all__ = ["CRASH_CHOICES", "InvoicePanel", "clear_cache", "matrix_html", "outcome_text", "scenario"]
