"""Chapter 06: the drawing for retries: the herd of clients under each jitter variant.

The data behind the herd drawing (``jitter_waits``, ``arrival_times``,
``peak_load``) is computed in ``course.worlds.waits``; ``herd_svg`` only draws
it (inline SVG, like the panels, so no plotting library is imported for it).
"""
from __future__ import annotations

from toolkit.kernel import RetryPolicy
from course.worlds import arrival_times, jitter_waits, peak_load
from course.present.svg import BLUE, FAINT, INK, MUTED, PAPER, RED, svg_circle, svg_figure, svg_line, svg_rect, svg_text


def herd_svg(policy: RetryPolicy, clients: int = 20, seed: int = 0, window: float = 0.1) -> str:
    """Every client's retries on one time axis, one strip per jitter variant (a row of dots per client).

    All clients fail at t = 0. Without jitter their dots stack into one column per retry (the wave); with
    jitter the columns smear out. Each strip names its variant and its worst crowd: the most retries that
    arrive within ``window`` seconds (``peak_load``).
    """
    waits = jitter_waits(policy, clients, seed)
    arrivals = {name: [arrival_times(w) for w in per_client] for name, per_client in waits.items()}
    end = max((t for rows in arrivals.values() for row in rows for t in row), default=1.0) or 1.0
    width, left, right, top, pitch = 760, 150, 740, 40, 3
    strip = 8 + pitch * clients
    height = top + len(arrivals) * (strip + 10) + 34
    scale = (right - left) / end
    cap = f", d_max = {policy.d_max:g}s" if policy.d_max is not None else ""
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8),
             svg_text(16, 24, f"{clients} clients fail at t = 0 and retry: d0 = {policy.d0:g}s, β = "
                              f"{policy.beta:g}, {policy.n_max} retries{cap}", 13, INK, weight="bold")]
    y = top
    for name, rows in arrivals.items():
        crowd = peak_load(waits[name], window)
        parts += [svg_text(16, y + strip / 2, name, 12, INK, weight="bold"),
                  svg_text(16, y + strip / 2 + 14, f"worst crowd: {crowd} in {window:g}s", 10,
                           RED if crowd == clients else MUTED, data_jitter=name, data_peak=crowd),
                  svg_rect(left, y, right - left, strip, "white", FAINT, rx=2, data_strip=name)]
        for c, row in enumerate(rows):
            parts += [svg_circle(left + t * scale, y + 5 + pitch * c, 1.5, BLUE) for t in row]
        y += strip + 10
    parts.append(svg_line(left, y, right, y, MUTED, 1.5))
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500) if end / s <= 14)
    for k in range(int(end // step) + 1):
        x = left + k * step * scale
        parts += [svg_line(x, y, x, y + 5, MUTED), svg_text(x, y + 18, f"{k * step:g}s", 10, MUTED, "middle")]
    parts.append(svg_text(right, y + 31, "time since the failure", 10, MUTED, "end"))
    label = ", ".join(f"{name}: at most {peak_load(w, window)} within {window:g}s" for name, w in waits.items())
    return svg_figure(width, height, parts, f"retries of {clients} clients over time; {label}",
                      data_clients=clients)


__all__ = ["herd_svg"]
