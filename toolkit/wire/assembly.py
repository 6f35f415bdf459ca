"""Chapters 01 and 08: the chapter's sketch of a streamed call, replayed frame by frame through the ``Assembler``.

The ``Assembler`` itself is the kernel's (``toolkit.kernel.stream``): it keeps
three promises. Nothing partial runs (arguments are parsed only in
``finish``, and only when the stop reason completes the round); a preview is
not a call (``preview`` hands out a ``Preview``, a different type from
``ToolCall``); and a stream costs linear time (fragments are appended and
joined once). ``toolkit.wire.vendor_streams`` reads each vendor's event
stream and feeds it.

``SKETCH_FRAMES`` are the four pieces the chapter's sketch draws; they arrive
in frames t1..t3 (t2 brings the second and third) and t4 is the completion
event. ``frames`` replays them.
"""
from __future__ import annotations

from typing import Any, Iterable

from toolkit.kernel import Assembler, ToolCall
from toolkit._ids import IdMap

#: The chapter's sketch, frame by frame. The drawing elides the glue between its
#: two rows (``, "arguments": `` and the closing brace); here it is written out,
#: so the four pieces join into one call: ``{"name": ..., "arguments": {...}}``.
SKETCH_FRAMES = ('{ "name": "read_', 'file", "arguments": ', '{ "path": "src/co', 'nfig.ts" } }')


def frames(texts: Iterable[str], complete: bool = True, ids: IdMap | None = None) -> list[dict[str, Any]]:
    """Replay a whole-call stream frame by frame, as plain rows for a notebook to print.

    Each row says what a host holds after that frame: the preview, and whether
    anything may run (``call`` is set only on the final row, and only when the
    completion signal arrived).
    """
    assembler = Assembler(ids, "course", envelope=True)
    rows = []
    for t, text in enumerate(texts, 1):
        assembler.add(0, arguments=text)
        preview = assembler.preview(0)
        rows.append({"frame": f"t{t}", "received": text, "keys": list(preview.keys) if preview else [],
                     "runnable": False, "call": None})
    outcome = assembler.finish("complete" if complete else None)
    final = outcome[0] if outcome else None
    rows.append({"frame": "completion event" if complete else "(stream ends)", "received": "",
                 "keys": rows[-1]["keys"] if rows else [], "runnable": isinstance(final, ToolCall),
                 "call": final.summary() if isinstance(final, ToolCall) else final.line() if final else None})
    return rows
