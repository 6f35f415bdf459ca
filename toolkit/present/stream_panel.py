"""Chapter 08: the stream slider: a recorded stream chunk by chunk, and whether the host may run anything yet.

A slider picks a position in a recorded server-sent-event body from
``toolkit/wire/recordings``. At each position the panel shows the chunks
received so far, the ``Preview`` of every call still arriving (the text so far,
secret-named values masked, and the keys seen so far, never a guessed value),
and the one question that matters:
*may anything execute yet?* Before the completion event the answer is always
"cannot execute: no completion event yet"; only after it does the panel show the
completed ``ToolCall`` objects (or, for a cut stream, the refusals).

Every moment comes from ``toolkit.wire.stream_replay``, which feeds the real readers
the same chunks, one at a time; this module only writes it out and draws it.
"""
from __future__ import annotations

from toolkit.wire import Moment, replay
from toolkit.present.text_view import pre_html

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
    if moment.executable or moment.refusals:
        signal = f" ({moment.stop_reason!r})" if moment.stop_reason else ""
        if moment.executable:
            lines.append(f"completion event{signal}: {len(moment.calls)} complete call"
                         f"{'s' if len(moment.calls) > 1 else ''}, ready for validation and execution")
            lines += [f"  {call.summary()}" for call in moment.calls]
        if moment.refusals:
            lines.append(f"refused, never executed{signal}:")
            lines += [f"  {refusal.line()}" for refusal in moment.refusals]
    else:
        lines.append(WAITING)
    return "\n".join(lines)


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

    def _update(self, _change: object = None) -> None:
        self._text = moment_text(self.name, self.moment, self.descriptions, self.window)
        colour = "#1a7f37" if self.moment.executable else "#cf222e"
        self.view.value = pre_html(self._text, colour)

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)
