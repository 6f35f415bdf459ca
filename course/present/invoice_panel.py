"""Chapter 05: a live view of the duplicate-invoice trace: choose the guards and the crash point, watch the invoices.

Every trace the panel shows comes from a real run (``course.worlds.crash.run_scenario``):
a child process really dies (SIGKILL) at the chosen point, a retry follows, and
the invoices are counted in billing's own database. Which run a setting plays
is ``course.worlds.crash_designs.guarded_run``. A run gives the same trace every
time, so each run is played once and cached. The words shown tell the scenario:
what the agent does, what happened, how many invoices are left.
"""
from __future__ import annotations

import html
import re
from typing import Any, Mapping, Sequence

from course.worlds import CRASH_POINTS, GuardedRun, crash_matrix, guarded_run, run_scenario
from course.present.text_view import panel_bundle
from course.present.svg import (AMBER, BLUE, FAINT, GREEN, INK, LIGHT_BLUE, LIGHT_GREEN, LIGHT_RED, MUTED, PAPER, RED,
                                 drawn_html, svg_figure, svg_line, svg_lines, svg_rect, svg_text)

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
    """What the panel shows: the setting, what the agent does, what happened, and the invoices at the end."""
    on = {True: "on", False: "off"}
    crash = "no crash" if setting["crash_at"] == "none" else f"crash at {setting['crash_at']}"
    lines = [f"durable key: {on[setting['durable']]} | atomic ledger: {on[setting['atomic']]} | "
             f"billing honours keys: {on[setting['honours']]} | {crash}", chosen.agent, *chosen.notes]
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


LANES = ("agent", "ledger", "billing")


def _lane(sentence: str) -> str:
    """Which lane a trace sentence belongs on (``crash`` for the moment the process dies)."""
    if sentence.startswith("process crashes"):
        return "crash"
    if sentence.startswith("agent"):
        return "agent"
    if sentence.startswith("local ledger") or "ledger entry" in sentence:
        return "ledger"
    return "billing"


def trace_svg(setting: Mapping[str, Any], outcome: Mapping[str, Any]) -> str:
    """The trace as agent / ledger / billing lanes, one column per moment; the crash a red line; invoices drawn."""
    trace = [line.split("  ", 1) for line in outcome["trace"]]
    count = outcome["invoice_count"]
    undone = next((j for j, (_, text) in enumerate(trace) if "rolls back" in text), -1)   # the crash that undid it
    width, lane_h, top, col0 = 900, 84, 34, 92
    col = (width - col0 - 170) / max(len(trace), 1)
    height = top + lane_h * 3 + 40
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8)]
    on = {True: "on", False: "off"}
    parts.append(svg_text(16, 22, f"durable key {on[setting['durable']]} · atomic ledger {on[setting['atomic']]}"
                                  f" · billing honours keys {on[setting['honours']]}", 13, INK, weight="bold"))
    for i, lane in enumerate(LANES):
        y = top + i * lane_h
        parts.append(svg_rect(8, y + 4, width - 16, lane_h - 8, "white", FAINT, rx=6, data_lane=lane))
        parts.append(svg_text(20, y + lane_h / 2 + 5, lane, 14, MUTED, weight="bold"))
    for j, (stamp, sentence) in enumerate(trace):
        x = col0 + j * col
        lane = _lane(sentence)
        parts.append(svg_text(x + col / 2, top - 2, stamp, 11, MUTED, "middle"))
        if lane == "crash":
            parts.append(svg_line(x + 8, top + 2, x + 8, top + 3 * lane_h, RED, 3, dash="6 4", data_crash=stamp))
            parts.append(svg_text(x + 8, top + 3 * lane_h + 16, "✕ crash", 13, RED, "start", "bold"))
            first, *more = sentence.replace("process crashes ", "the agent dies ").split("; ")
            drawn, _ = svg_lines(x + 14, top + 22, first, 18, 10, RED, most=5)
            parts.append(drawn)
            kept = outcome["after_crash"]["ledger"]
            held = ("kept in memory: lost" if not setting["durable"] else "holds the key" if kept
                    else "no key recorded")
            parts.append(svg_rect(x + 14, top + lane_h + 10, col - 18, 20, LIGHT_GREEN if kept and setting["durable"]
                                  else LIGHT_RED, GREEN if kept and setting["durable"] else RED, rx=10,
                                  data_ledger_at_crash=held.split(":")[0].replace(" ", "-")))
            parts.append(svg_text(x + 14 + (col - 18) / 2, top + lane_h + 24, held, 9.5, INK, "middle"))
            if more:
                drawn, _ = svg_lines(x + 14, top + lane_h + 44, "; ".join(more), 19, 9.5, RED, most=4)
                parts.append(drawn)
            continue
        y = top + LANES.index(lane) * lane_h
        invoice = re.search(r"INV-\d+", sentence)
        if invoice and lane == "billing" and "recognizes" not in sentence:
            pending = "open transaction" in sentence
            bad = count > 1 and not pending
            parts.append(svg_rect(x + 4, y + 9, col - 8, 24, "white" if pending else LIGHT_RED if bad else LIGHT_GREEN,
                                  (RED if j < undone else AMBER) if pending else RED if bad else GREEN, rx=3,
                                  dash="4 3" if pending else None,
                                  data_invoice=invoice.group(), data_state="uncommitted" if pending else "made"))
            note = (" (rolled back)" if j < undone else " (open)") if pending else ""
            parts.append(svg_text(x + col / 2, y + 26, invoice.group() + note, 9.5 if note else 12,
                                  RED if j < undone else INK, "middle", "bold"))
            drawn, _ = svg_lines(x + 6, y + 46, sentence, 20, 9.5, MUTED, most=3)
        else:
            parts.append(svg_rect(x + 4, y + 8, col - 8, lane_h - 16, LIGHT_BLUE, BLUE, rx=4, data_event=stamp))
            drawn, _ = svg_lines(x + 8, y + 22, sentence, 19, 10, INK, most=4)
        parts.append(drawn)
    x = width - 166
    names = [i.split()[0] for i in outcome["invoices"]]
    colour = GREEN if count == 1 else RED
    parts.append(svg_rect(x, top + 8, 150, 3 * lane_h - 16, LIGHT_GREEN if count == 1 else LIGHT_RED, colour, rx=6,
                          data_count=count))
    parts.append(svg_text(x + 75, top + 28, "at the end", 12, MUTED, "middle"))
    parts.append(svg_text(x + 75, top + 56, f"{count} invoice{'s' if count != 1 else ''}", 18, colour, "middle",
                          "bold"))
    for k, name in enumerate(names):
        parts.append(svg_rect(x + 20, top + 70 + k * 30, 110, 24, "white", colour, rx=3, data_final_invoice=name))
        parts.append(svg_text(x + 75, top + 87 + k * 30, name, 12, INK, "middle", "bold"))
    verdict = "duplicate" if count > 1 else "as promised" if count == 1 else "none"
    parts.append(svg_text(x + 75, top + 3 * lane_h - 16, verdict, 13, colour, "middle", "bold"))
    label = f"trace of {len(trace)} moments; {count} invoice{'s' if count != 1 else ''} for order-431"
    return svg_figure(width, height, parts, label, data_invoices=count)


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

    def matrix(self) -> list[dict[str, Any]]:
        """Every crash point x every design (``crash_matrix(in_memory=True)``); settings already shown are reused."""
        return crash_matrix(in_memory=True, played=_RUNS)

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
        self.view.value = drawn_html(trace_svg(self.setting, self.outcome), self._text, shown=True)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """Displayed itself, the panel is its widget, with its text form as the plain text."""
        return panel_bundle(self.widget, self.text(), **kwargs)


__all__ = ["CRASH_CHOICES", "LANES", "InvoicePanel", "clear_cache", "matrix_html", "outcome_text", "scenario",
           "trace_svg"]
