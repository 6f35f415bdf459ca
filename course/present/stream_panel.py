"""Chapter 08: the stream slider: a recorded stream chunk by chunk, and whether the host may run anything yet.

A slider picks a position in a recorded server-sent-event body from
``course/worlds/recordings``. At each position the panel shows the chunks
received so far, the ``Preview`` of every call still arriving (the text so far,
secret-named values masked, and the keys seen so far, never a guessed value),
and the one question that matters:
*may anything execute yet?* Before the completion event the answer is always
"cannot execute: no completion event yet"; only after it does the panel show the
completed ``ToolCall`` objects (or, for a cut stream, the refusals).

Every moment comes from ``course.worlds.stream_replay``, which feeds the real readers
the same chunks, one at a time; this module only writes it out and draws it.
"""
from __future__ import annotations

from toolkit._show import shorten
from course.worlds import Moment, replay
from course.present.text_view import panel_bundle
from course.present.svg import (AMBER, BLUE, FAINT, GREEN, INK, LIGHT_AMBER, LIGHT_GREEN, LIGHT_RED, MUTED, PAPER,
                                 RED, drawn_html, svg_figure, svg_rect, svg_text)

WAITING = "cannot execute: no completion event yet"


def moment_text(name: str, moment: Moment, descriptions: list[str], window: int = 8) -> str:
    """What the panel shows at one moment, as plain text."""
    total = len(descriptions)
    lines = [f"{name}: {moment.position} of {total} chunks received"]
    received = descriptions[: moment.position]
    if received:
        lines.append("chunks so far:")
        hidden = max(0, len(received) - window)
        if hidden:
            lines.append(f"  ... {hidden} earlier chunk{'s' if hidden > 1 else ''}")
        lines += [f"  {n:>2}  {text}" for n, text in enumerate(received, 1) if n > hidden]
    else:
        lines.append("chunks so far: none")
    if moment.text:
        lines.append(f"assistant text: {moment.text!r}")
    if moment.previews:
        lines.append("preview (progress only, not a call):")
        lines += [f"  {p.line()}" for p in moment.previews]
    return "\n".join(lines + verdict_lines(moment))


def verdict_lines(moment: Moment) -> list[str]:
    """The panel's last word at one moment: what may run now (the complete calls), what was refused, or nothing."""
    if not (moment.executable or moment.refusals):
        return [WAITING]
    lines = []
    signal = f" ({moment.stop_reason!r})" if moment.stop_reason else ""
    if moment.executable:
        lines.append(f"completion event{signal}: {len(moment.calls)} complete call"
                     f"{'s' if len(moment.calls) > 1 else ''}, ready for validation and execution")
        lines += [f"  {call.summary()}" for call in moment.calls]
    if moment.refusals:
        lines.append(f"refused, never executed{signal}:")
        lines += [f"  {refusal.line()}" for refusal in moment.refusals]
    return lines


def stream_svg(moments: list[Moment], position: int) -> str:
    """The chunks received so far, each call's buffer filling fragment by fragment, and the completion event."""
    moment, total = moments[position], len(moments) - 1
    signal = next((m.position for m in moments[1:] if m.final), None)
    buffers: dict[str, object] = {}
    for m in moments[1: position + 1]:
        for p in m.previews:
            buffers[p.call_id or f"#{p.index}"] = p
    final = {item.call_id: item for item in moment.final}
    keys = list(dict.fromkeys([*buffers, *final]))
    width, top, row = 820, 78, 46
    height = top + row * max(len(keys), 1) + 56
    cell = min(40.0, (width - 40) / max(total, 1))
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8),
             svg_text(16, 22, f"{position} of {total} chunks received", 13, INK, weight="bold")]
    for n in range(1, total + 1):
        x = 20 + (n - 1) * cell
        got, event = n <= position, n == signal
        mark = GREEN if signal is not None and moments[signal].executable else RED
        fill = (mark if event else BLUE) if got else "white"
        parts.append(svg_rect(x, 32, cell - 4, 18, fill, mark if event else FAINT, rx=3,
                              data_chunk=n, data_state="received" if got else "pending"))
        if event:
            words = "completion event" if mark == GREEN else f"stop: {moments[signal].stop_reason}, calls cut"
            parts.append(svg_text(min(x + cell / 2 - 2, width - 80), 64, words if got else f"({words})", 10,
                                  mark if got else MUTED, "middle", "bold"))
    if not keys:
        parts.append(svg_text(20, top + 24, "no call has started arriving", 12, MUTED))
    for i, key in enumerate(keys):
        y = top + i * row
        preview, done = buffers.get(key), final.get(key)
        name = getattr(done, "name", None) or getattr(preview, "name", None) or "?"
        parts.append(svg_text(20, y + 22, f"{key} {name}", 12, INK, weight="bold", mono=True))
        fragments = getattr(preview, "fragments", 0)
        parts.append(svg_rect(200, y + 6, 420, 26, "white", FAINT, rx=4, data_buffer=key))
        for f in range(fragments):
            parts.append(svg_rect(203 + f * 14, y + 9, 11, 20, LIGHT_AMBER, AMBER, rx=2, data_fragment=f + 1))
        text = getattr(preview, "text", "")
        shown = shorten(text, 34, keep_end=True)      # the latest characters, as many as the buffer box holds
        parts.append(svg_text(210 + fragments * 14, y + 24, shown, 11, MUTED, mono=True))
        if done is None:
            state, colour, fill = "arriving: not a call yet", AMBER, LIGHT_AMBER
        elif key in {c.call_id for c in moment.calls}:
            state, colour, fill = "complete: to validation", GREEN, LIGHT_GREEN
        else:
            state, colour, fill = "refused: never runs", RED, LIGHT_RED
        parts.append(svg_rect(632, y + 6, 170, 26, fill, colour, rx=13, data_call=key,
                              data_state=state.split(":")[0]))
        parts.append(svg_text(717, y + 24, state, 11, colour, "middle", "bold"))
    y = height - 22
    if moment.executable:
        words, colour = f"completion event received: {len(moment.calls)} complete calls go on to validation", GREEN
    elif moment.refusals:
        words, colour = f"stream over without completion ({moment.stop_reason}): nothing runs", RED
    else:
        words, colour = "waiting for the completion event: nothing may run", RED
    parts.append(svg_text(20, y, words, 14, colour, weight="bold", data_verdict=colour == GREEN))
    return svg_figure(width, height, parts, f"{position} of {total} chunks; {words}", data_position=position)


class StreamPanel:
    """A slider over a recorded stream; drive it from Python with ``.set(position=...)`` and read ``.text()``."""

    def __init__(self, name: str = "openai_stream.txt", position: int = 0, body: str | None = None,
                 window: int = 8):
        import ipywidgets as w

        self.name, self.window = name, window
        self.vendor, self.chunks, self.moments = replay(name, body)
        self.descriptions = [m.chunk for m in self.moments[1:]]
        self.slider = w.IntSlider(value=min(max(position, 0), len(self.chunks)), min=0, max=len(self.chunks),
                                  step=1, description="chunks", continuous_update=True)
        self.view = w.HTML()
        self.slider.observe(self._update, names="value")
        self.widget = w.VBox([self.slider, self.view])
        self._update()

    @property
    def moment(self) -> Moment:
        return self.moments[self.slider.value]

    def set(self, position: int) -> str:
        """Move the slider to ``position`` chunks received (clamped to the stream), and return what is shown."""
        self.slider.value = min(max(int(position), 0), self.slider.max)
        return self.text()

    def text(self) -> str:
        return self._text

    def verdict(self) -> str:
        """Only the last lines of ``text()``: what may run at this position, or that nothing may yet."""
        return "\n".join(verdict_lines(self.moment))

    def _update(self, _change: object = None) -> None:
        self._text = moment_text(self.name, self.moment, self.descriptions, self.window)
        drawing = stream_svg(self.moments, self.slider.value)
        self.view.value = drawn_html(drawing, self._text, shown=True)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """Displayed itself, the panel is its widget, with its text form as the plain text."""
        return panel_bundle(self.widget, self.text(), **kwargs)
