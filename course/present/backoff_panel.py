"""Chapter 06: a live view of the retry controller: move beta, n_max and d0, pick a jitter, watch the delay plan.

Every line the panel shows comes from ``course.worlds.waits.walk`` (the rows
from ``course.worlds.waits.plan_rows``): the same pure ``step`` the host runs,
applied from ``(n=0, d=d0)`` until the controller escalates. Nothing here
recomputes the rule its own way; the closed form of the total wait is evaluated
separately, as a check the student can read beside it.
"""
from __future__ import annotations

from toolkit.kernel import Jitter, RetryPolicy
from course.worlds.waits import walk
from course.worlds import plan_rows
from course.present.text_view import panel_bundle
from course.present.svg import (AMBER, BLUE, FAINT, GREY, INK, LIGHT_AMBER, MUTED, PAPER, RED, drawn_html,
                                 svg_circle, svg_figure, svg_line, svg_rect, svg_text)

BAR_WIDTH = 24   # characters of the longest bar in the text view


def _seconds(x: float) -> str:
    """1 -> '1s', 1.5159 -> '1.52s' (display only)."""
    return f"{round(x, 2):g}s"


def plan_text(policy: RetryPolicy, seed: int = 0) -> str:
    """What the panel shows for one policy: the plan, the escalation point, and the total wait."""
    decisions = walk(policy, seed=seed)
    rows, last = plan_rows(policy, seed), decisions[-1]
    jitter = policy.jitter.value + ("" if policy.jitter is Jitter.NONE else f", seed {seed}")
    head = (f"policy: d0={policy.d0:g}s, beta={policy.beta:g}, n_max={policy.n_max}"
            + (f", d_max={policy.d_max:g}s" if policy.d_max is not None else "") + f", jitter={jitter}")
    lines = [head, f"the first call has just failed: {policy.start()}; n counts the repeat attempts from here"]
    if rows:
        longest = max(r["wait"] for r in rows) or 1.0
        lines.append(f"{'retry':>5}  {'d':>7}  {'wait':>8}  {'state after':<14} wait")
        for r in rows:
            bar = "#" * max(1, round(BAR_WIDTH * r["wait"] / longest))
            lines.append(f"{r['retry']:>5}  {_seconds(r['d']):>7}  {_seconds(r['wait']):>8}  "
                         f"{r['after']:<14} {bar}")
        lines.append(f"the failure after retry {len(rows)} escalates: {last.reason}")
    else:
        lines.append(f"no retry is allowed: the first failure escalates ({last.reason})")
    waited = sum(r["wait"] for r in rows)
    planned = sum(r["d"] for r in rows)
    closed = ""
    if policy.d_max is None and rows:
        value = policy.d0 * (policy.beta ** len(rows) - 1) / (policy.beta - 1)
        closed = f"; closed form d0(beta^n - 1)/(beta - 1) at n = {len(rows)} gives {_seconds(value)}"
    if policy.jitter is Jitter.NONE:
        lines.append(f"total wait before escalating: {_seconds(waited)}{closed}")
    else:
        lines.append(f"total wait before escalating: {_seconds(waited)} (drawn by {policy.jitter.value} jitter)")
        lines.append(f"the plan d without jitter sums to {_seconds(planned)}{closed}")
    if policy.jitter is Jitter.DECORRELATED:
        lines.append("decorrelated jitter draws U(d0, 3 x previous wait), capped by d_max: it does not follow d")
    return "\n".join(lines)


def plan_svg(policy: RetryPolicy, seed: int = 0) -> str:
    """The plan on a time axis: each wait as a bar from one failed attempt to the next, then the escalation point."""
    rows, last = plan_rows(policy, seed), walk(policy, seed=seed)[-1]
    width, height, left, right, axis = 760, 200, 40, 720, 150
    total = sum(r["wait"] for r in rows)
    planned = sum(r["d"] for r in rows)
    end = max(total, planned, 1.0)
    scale = (right - left) / end
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8),
             svg_text(16, 22, f"d0 = {policy.d0:g}s · β = {policy.beta:g} · n_max = {policy.n_max} · jitter "
                              f"{policy.jitter.value}", 13, INK, weight="bold"),
             svg_line(left, axis, right, axis, MUTED, 1.5)]
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if end / s <= 12)
    tick = 0.0
    while tick <= end + 1e-9:
        x = left + tick * scale
        parts += [svg_line(x, axis, x, axis + 5, MUTED), svg_text(x, axis + 18, f"{tick:g}s", 10, MUTED, "middle")]
        tick += step
    parts.append(svg_circle(left, axis - 52, 7, RED, data_attempt=0))
    parts.append(svg_text(left, axis - 66, "call fails", 11, RED, "middle"))
    clock = planned_clock = 0.0
    for r in rows:
        x0 = left + clock * scale
        if policy.jitter is not Jitter.NONE:
            px = left + planned_clock * scale
            parts.append(svg_rect(px, axis - 22, r["d"] * scale, 8, "white", GREY, rx=2, dash="3 2"))
            planned_clock += r["d"]
        parts.append(svg_rect(x0, axis - 60, max(r["wait"] * scale, 1.5), 16, LIGHT_AMBER, AMBER, rx=3,
                              data_wait=f"{r['wait']:g}", data_retry=r["retry"]))
        if r["wait"] * scale > 34:
            parts.append(svg_text(x0 + r["wait"] * scale / 2, axis - 48, _seconds(r["wait"]), 10, INK, "middle"))
        clock += r["wait"]
        x1 = left + clock * scale
        parts.append(svg_line(x1, axis - 44, x1, axis, FAINT))
        parts.append(svg_circle(x1, axis - 52, 6, BLUE, data_attempt=r["retry"]))
        parts.append(svg_text(x1, axis - 30, f"retry {r['retry']}", 10, BLUE, "middle"))
    x = left + clock * scale
    parts.append(svg_line(x, 34, x, axis, RED, 2.5, data_escalation=f"{total:g}"))
    parts.append(svg_text(min(x + 6, right - 150), 46, f"escalate at {_seconds(total)}", 13, RED, weight="bold"))
    parts.append(svg_text(min(x + 6, right - 150), 60, last.reason, 10, RED))
    parts.append(svg_rect(left, axis + 28, 12, 8, LIGHT_AMBER, AMBER, rx=2))
    parts.append(svg_text(left + 16, axis + 36, "wait before the next attempt", 10, MUTED))
    if policy.jitter is not Jitter.NONE:
        parts.append(svg_rect(left + 190, axis + 28, 12, 8, "white", GREY, rx=2, dash="3 2"))
        parts.append(svg_text(left + 206, axis + 36, "the plan d without jitter", 10, MUTED))
    label = f"{len(rows)} retries, escalation after {_seconds(total)}"
    return svg_figure(width, height, parts, label, data_retries=len(rows))


class BackoffPanel:
    """Sliders for beta, n_max and d0 and a jitter dropdown over the controller's plan.

    Drive it from Python with ``.set(beta=..., n_max=..., d0=..., jitter=...)``
    and read ``.text()``; a slider moved by hand updates the same text.
    """

    def __init__(self, beta: float = 2.0, n_max: int = 4, d0: float = 1.0, jitter: str = "none",
                 seed: int = 0, d_max: float | None = None):
        import ipywidgets as w

        self.seed, self.d_max = seed, d_max
        style = {"description_width": "initial"}
        self.beta = w.FloatSlider(value=beta, min=1.25, max=4.0, step=0.25, description="β (growth)", style=style)
        self.n_max = w.IntSlider(value=n_max, min=0, max=8, step=1, description="n_max (retries)", style=style)
        self.d0 = w.FloatSlider(value=d0, min=0.25, max=4.0, step=0.25, description="d0 (first delay, s)",
                                style=style)
        self.jitter = w.Dropdown(options=[j.value for j in Jitter], value=Jitter(jitter).value,
                                 description="jitter", style=style)
        self.view = w.HTML()
        for control in (self.beta, self.n_max, self.d0, self.jitter):
            control.observe(self._update, names="value")
        self.widget = w.VBox([w.HBox([self.beta, self.n_max]), w.HBox([self.d0, self.jitter]), self.view])
        self._update()

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(d0=self.d0.value, beta=self.beta.value, n_max=self.n_max.value, d_max=self.d_max,
                      jitter=Jitter(self.jitter.value))

    def set(self, beta: float | None = None, n_max: int | None = None, d0: float | None = None,
            jitter: str | None = None) -> str:
        """Move any of the controls, as a student would, and return what is shown."""
        for control, value in ((self.beta, beta), (self.n_max, n_max), (self.d0, d0), (self.jitter, jitter)):
            if value is not None:
                control.value = Jitter(value).value if control is self.jitter else value
        return self.text()

    def text(self) -> str:
        return self._text

    def _update(self, _change: object = None) -> None:
        self._text = plan_text(self.policy, self.seed)
        self.view.value = drawn_html(plan_svg(self.policy, self.seed), self._text, shown=True)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """Displayed itself, the panel is its widget, with its text form as the plain text."""
        return panel_bundle(self.widget, self.text(), **kwargs)
