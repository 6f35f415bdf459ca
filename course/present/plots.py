"""Chapter 04: the flip point drawn: each legal option's score as the price of risk grows (inline SVG).

``choice_flip`` returns the drawing and its text form as one HTML block (``drawn_html``), so a
notebook shows it with ``display(HTML(...))`` and no plotting library is imported for it.
Which option is chosen is decided by ``toolkit.kernel.choose``; where it can change is ``flip_point``, the
price of risk at which two options tie. This module finds the bands between those points and draws them.

Marks carry ``data-*`` attributes a test can read: a score line ``data-option`` (with its scores at
both ends, ``data-score-from`` and ``data-score-to``), a shaded band ``data-chosen`` with
``data-from`` and ``data-to``, a flip line ``data-flip`` (the exact value, ``repr`` of the float)
with ``data-before`` and ``data-after``.
"""
from __future__ import annotations

from typing import Sequence

from toolkit.kernel import Option, choose
from course.present.svg import (AMBER, BLUE, GREEN, GREY, INK, LIGHT_AMBER, LIGHT_BLUE, LIGHT_GREEN, LIGHT_RED,
                                 MUTED, PAPER, RED, drawn_html, svg_figure, svg_line, svg_rect, svg_text)

#: One (line, shading) colour pair per legal option, in the order the options are given.
PALETTE = ((BLUE, LIGHT_BLUE), (AMBER, LIGHT_AMBER), (GREEN, LIGHT_GREEN), (RED, LIGHT_RED))
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 64, 616, 64, 300


def flip_point(a: Option, b: Option, lam_c: float = 1.0) -> float | None:
    """The risk price λr at which ``a`` and ``b`` score the same (None if they never cross)."""
    gap_risk = a.risk - b.risk
    if gap_risk == 0:
        return None
    return ((a.value - lam_c * a.cost) - (b.value - lam_c * b.cost)) / gap_risk


def choice_bands(options: Sequence[Option], lam_c: float, max_lam_r: float) -> list[tuple[float, float, Option | None]]:
    """``(from, to, chosen)`` for each stretch of λr in [0, max_lam_r] where one option stays chosen.

    The only places the choice can change are where two legal options tie, so the stretches are cut at
    every pairwise ``flip_point`` inside the range and each piece asks ``choose`` at its middle.
    """
    if not (isinstance(max_lam_r, (int, float)) and 0 < max_lam_r < float("inf")):
        raise ValueError(f"max_lam_r must be a positive finite number, not {max_lam_r!r}")
    legal = [o for o in options if o.legal == 1]
    cuts = {0.0, float(max_lam_r)}
    for i, a in enumerate(legal):
        for b in legal[i + 1:]:
            flip = flip_point(a, b, lam_c)
            if flip is not None and 0 < flip < max_lam_r:
                cuts.add(flip)
    edges = sorted(cuts)
    bands: list[tuple[float, float, Option | None]] = []
    for lo, hi in zip(edges, edges[1:]):
        best = choose(options, lam_c, (lo + hi) / 2).best
        if bands and bands[-1][2] is best:
            bands[-1] = (bands[-1][0], hi, best)
        else:
            bands.append((lo, hi, best))
    return bands


def _flips(bands: list[tuple[float, float, Option | None]], lam_c: float) -> list[tuple[float, Option, Option]]:
    """``(λr, before, after)`` at each border between two bands whose chosen options differ."""
    flips = []
    for (_, _, before), (_, _, after) in zip(bands, bands[1:]):
        if before is not None and after is not None:
            flip = flip_point(before, after, lam_c)
            if flip is not None:
                flips.append((flip, before, after))
    return flips


def choice_flip_text(options: Sequence[Option], lam_c: float = 1.0, max_lam_r: float = 3.0) -> str:
    """The drawing in words: each option's score as a line in λr, who is chosen where, and each flip."""
    options = list(options)
    width = max(len(o.name) for o in options) if options else 0
    lines = [f"governed score as the price of risk grows (λc = {lam_c:g}, λr from 0 to {max_lam_r:g})"]
    for option in options:
        if option.legal == 1:
            lines.append(f"  {option.name:<{width}}  score = {option.value - lam_c * option.cost:g} - "
                         f"{option.risk:g} × λr")
        else:
            lines.append(f"  {option.name:<{width}}  illegal: no line, never chosen")
    bands = choice_bands(options, lam_c, max_lam_r)
    for lo, hi, best in bands:
        lines.append(f"  λr {lo:.3g} to {hi:.3g}: {best.name if best else 'nothing'} chosen")
    flips = _flips(bands, lam_c)
    for flip, before, after in flips:
        lines.append(f"  flip at λr = {flip:.3g}: {before.name} gives way to {after.name}")
    if not flips:
        lines.append("  no flip in this range")
    return "\n".join(lines)


def _tick_step(span: float, most: int) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) giving at most ``most`` ticks over ``span``."""
    scale = 1e-3
    while True:
        for base in (1, 2, 2.5, 5):
            if span / (base * scale) <= most:
                return base * scale
        scale *= 10


def choice_flip_svg(options: Sequence[Option], lam_c: float = 1.0, max_lam_r: float = 3.0) -> str:
    """Score lines over λr (one colour per legal option), the chosen option shaded, a dashed line at each flip."""
    options = list(options)
    legal = [o for o in options if o.legal == 1]
    colour = {o.name: PALETTE[i % len(PALETTE)] for i, o in enumerate(legal)}
    ends = [o.score(lam_c, r) for o in legal for r in (0.0, max_lam_r)] or [0.0, 1.0]
    y_step = _tick_step((max(ends) - min(ends)) or 1.0, 6)
    y_lo, y_hi = (min(ends) // y_step) * y_step, -(-max(ends) // y_step) * y_step
    y_hi = y_hi if y_hi > y_lo else y_lo + y_step

    def x(r: float) -> float:
        return LEFT + (RIGHT - LEFT) * r / max_lam_r

    def y(score: float) -> float:
        return BOTTOM - (BOTTOM - TOP) * (score - y_lo) / (y_hi - y_lo)

    parts = [svg_rect(0, 0, WIDTH, HEIGHT, PAPER, rx=8),
             svg_text(16, 24, "Which legal call wins as risk is priced", 13, INK, weight="bold"),
             svg_text(WIDTH - 16, 24, "shaded: the call chosen at that price", 11, MUTED, "end")]
    lx = LEFT
    for option in options:           # the legend: a swatch per legal option, illegal ones named in grey
        if option.legal == 1:
            parts += [svg_rect(lx, 38, 18, 4, colour[option.name][0], rx=1),
                      svg_text(lx + 24, 44, option.name, 11, INK, data_legend=option.name)]
            lx += 24 + 6.5 * len(option.name) + 24
        else:
            said = f"{option.name} (illegal, no line)"
            parts.append(svg_text(lx, 44, said, 11, GREY, data_legend=option.name, data_state="not-legal"))
            lx += 6.5 * len(said) + 24
    bands = choice_bands(options, lam_c, max_lam_r)
    for lo, hi, best in bands:
        if best is not None:
            parts.append(svg_rect(x(lo), TOP, x(hi) - x(lo), BOTTOM - TOP, colour[best.name][1], rx=0,
                                  data_chosen=best.name, data_from=repr(lo), data_to=repr(hi)))
    x_step = _tick_step(max_lam_r, 8)
    for k in range(int(round(max_lam_r / x_step)) + 1):
        r = k * x_step
        parts += [svg_line(x(r), BOTTOM, x(r), BOTTOM + 5, MUTED),
                  svg_text(x(r), BOTTOM + 18, f"{r:g}", 10, MUTED, "middle")]
    for k in range(int(round((y_hi - y_lo) / y_step)) + 1):
        s = y_lo + k * y_step
        parts += [svg_line(LEFT - 5, y(s), LEFT, y(s), MUTED),
                  svg_text(LEFT - 8, y(s) + 3.5, f"{s:g}", 10, MUTED, "end")]
    parts += [svg_line(LEFT, BOTTOM, RIGHT, BOTTOM, MUTED, 1.5), svg_line(LEFT, TOP, LEFT, BOTTOM, MUTED, 1.5),
              svg_text((LEFT + RIGHT) / 2, BOTTOM + 38, "λr, the price of one unit of risk", 11, MUTED, "middle"),
              f"<text x='16' y='{(TOP + BOTTOM) / 2:.1f}' font-size='11' fill='{MUTED}' text-anchor='middle' "
              f"transform='rotate(-90 16 {(TOP + BOTTOM) / 2:.1f})'>governed score</text>"]
    for option in legal:
        start, end = option.score(lam_c, 0.0), option.score(lam_c, max_lam_r)
        parts.append(svg_line(x(0), y(start), x(max_lam_r), y(end), colour[option.name][0], 2.5,
                              data_option=option.name, data_score_from=f"{start:g}", data_score_to=f"{end:g}"))
    flips = _flips(bands, lam_c)
    for i, (flip, before, after) in enumerate(flips):     # labels of close flips climb so they do not overlap
        parts += [svg_line(x(flip), TOP, x(flip), BOTTOM, INK, 1, dash="5 4", data_flip=repr(flip),
                           data_before=before.name, data_after=after.name),
                  svg_text(x(flip) + 4, BOTTOM - 8 - 16 * (i % 3), f"λr = {flip:.3g}", 11, INK)]
    said = ", ".join(f"λr = {f:.3g} ({b.name} to {a.name})" for f, b, a in flips) or "none in this range"
    return svg_figure(WIDTH, HEIGHT, parts, f"scores of {len(legal)} legal calls over λr from 0 to {max_lam_r:g}; "
                      f"flips: {said}", data_lam_c=f"{lam_c:g}")


def choice_flip(options: Sequence[Option], lam_c: float = 1.0, max_lam_r: float = 3.0) -> str:
    """The drawing with its text form beside it (hidden from the eye), ready for ``display(HTML(...))``."""
    return drawn_html(choice_flip_svg(options, lam_c, max_lam_r), choice_flip_text(options, lam_c, max_lam_r))


__all__ = ["choice_bands", "choice_flip", "choice_flip_svg", "choice_flip_text"]
