"""Chapter 08: what a stream may not do to the assembler: split or repeated ids and names, and the caps it meets.

Everything a chunk can do wrong on its way into the kernel's ``Assembler``, one function each:
``take``, ``parsed_call``, ``answered_once``, ``preview_of``. ``assemble_field`` reads an id or a
name sent once, repeated or in pieces the same way. Each cap a stream passes breaks it at once."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from toolkit import _schema as schema
from toolkit._caps import MAX_CALL_ID_CHARS, MAX_ERRORS_PER_CALL, MAX_NAME_CHARS, MAX_OPEN_CALLS
from toolkit._preview import KeyScanner, Preview
from toolkit._show import echo_value
from toolkit.kernel.call import ToolCall, ToolError


def stream_incomplete(message: str, received: Any = None, hint: str = "") -> ToolError:
    """The error for a stream that never said it was complete."""
    return ToolError("stream_incomplete", "$", message, expected="a completion signal", received=received,
                     hint=hint or "nothing was run; ask for the calls again")


def stream_invalid(pointer: str, message: str, received: Any = None, hint: str = "") -> ToolError:
    """The error for a stream that cannot be trusted (bad framing, bad shapes, ids that change)."""
    return ToolError("stream_invalid", pointer, message, expected="a well-formed stream", received=received,
                     hint=hint or "nothing was run; ask for the calls again")


def assemble_field(current: Any, incoming: Any, started: bool) -> tuple[Any, str]:
    """The field after one delta, and '' or why the delta is refused (``changed`` or ``not text``):
    nothing changes nothing, a repeat or an extension is the value so far, another piece is
    appended until the arguments start (then it is a change). Integers (JSON-RPC ids) repeat or
    change, never grow."""
    if incoming is None or incoming == "":
        return current, ""
    if isinstance(incoming, bool) or not isinstance(incoming, (str, int)):
        return current, "not text"
    if current is None:
        return incoming, ""
    if type(incoming) is type(current) and incoming == current:
        return current, ""
    if isinstance(incoming, str) and isinstance(current, str):
        if incoming.startswith(current):
            return incoming, ""
        if not started:
            return current + incoming, ""
    return current, "changed"


def field_too_long(value: Any, cap: int) -> bool:
    """True when an id or name passes ``cap`` characters (an integer id: when it needs more than 64 bits)."""
    if isinstance(value, int):
        return value.bit_length() > 64
    return isinstance(value, str) and len(value) > cap


def over_cap(pointer: str, what: str, cap_name: str, cap: int, unit: str, hint: str = "") -> ToolError:
    """The refusal for a stream that passed one of the caps of ``toolkit._caps``, naming it."""
    return ToolError("too_large", pointer, f"{what} passed the cap of {cap} {unit} ({cap_name})",
                     expected=f"at most {cap} {unit}", received=f"more than {cap}",
                     hint=hint or "nothing was run; ask for fewer or smaller calls")


def capped_errors(errors: list[ToolError], pointer: str) -> tuple[ToolError, ...]:
    """At most ``MAX_ERRORS_PER_CALL`` errors; when there were more, the last one counts the rest."""
    if len(errors) <= MAX_ERRORS_PER_CALL:
        return tuple(errors)
    kept = MAX_ERRORS_PER_CALL - 1
    rest = ToolError("too_large", pointer, f"{len(errors) - kept} more problems with this call are not listed "
                                           f"(MAX_ERRORS_PER_CALL is {MAX_ERRORS_PER_CALL})",
                     expected=f"at most {MAX_ERRORS_PER_CALL} errors listed", received=len(errors),
                     hint="nothing was run; ask for the calls again")
    return tuple(errors[:kept]) + (rest,)


def answered_once(out: list[Any]) -> list[Any]:
    """Calls sharing a vendor id map to one toolkit id: the first refusal answers it, later ones answer nothing."""
    seen: set[str] = set()
    for n, item in enumerate(out):
        if not isinstance(item, ToolCall) and item.call_id in seen:
            out[n] = replace(item, call_id=None, arguments=None)
        elif item.call_id is not None:
            seen.add(item.call_id)
    return out


class Buffer:
    """What has arrived of one call: its id and name so far, its argument text in pieces, and its problems."""

    __slots__ = ("index", "vendor_id", "call_id", "minted_for", "name", "parts", "size", "errors", "closed",
                 "scanner", "seen", "keys")

    def __init__(self, index: int):
        self.index = index
        self.vendor_id: Any = None          # the vendor's id as assembled so far (text or an integer)
        self.call_id: str | None = None     # the toolkit's id, minted when first needed
        self.minted_for: Any = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.size = 0
        self.errors: list[ToolError] = []
        self.closed = False
        self.scanner: KeyScanner | None = None
        self.seen = 0
        self.keys: tuple[str, ...] = ()

    def problem(self, error: ToolError) -> ToolError | None:
        """Keep one problem; one more than ``MAX_ERRORS_PER_CALL`` breaks the stream (the error that says so)."""
        if len(self.errors) < MAX_ERRORS_PER_CALL:
            self.errors.append(error)
            return None
        return over_cap(f"$[{self.index}]", "the problems with this call", "MAX_ERRORS_PER_CALL",
                        MAX_ERRORS_PER_CALL, "problems", "nothing was run; the stream is broken")


def take(buffers: dict[int, Buffer], index: Any, call_id: Any, name: Any, arguments: Any,
         max_chars: int) -> ToolError | None:
    """One chunk into its call's buffer; the error that breaks the stream, or None."""
    buf = buffers.get(index) if type(index) is int else None
    if buf is None:
        if type(index) is not int or index < 0:
            return stream_invalid("$.index", "a call index must be a non-negative integer", echo_value(index))
        if len(buffers) >= MAX_OPEN_CALLS:
            return over_cap(f"$[{index}]", "the calls in this stream", "MAX_OPEN_CALLS", MAX_OPEN_CALLS, "calls")
        buf = buffers[index] = Buffer(index)
    broken = None
    if buf.closed:
        broken = buf.problem(stream_invalid(f"$[{index}]", "data arrived after the call's block was closed"))
    if (call_id is not None and call_id != buf.vendor_id) or (name is not None and name != buf.name):
        broken = broken or _identify(buf, call_id, name)   # new, growing or changed; plain repeats skip this
    if arguments is None:
        return broken
    if type(arguments) is str and buf.size <= max_chars:   # the common case, kept short
        buf.parts.append(arguments)
        buf.size += len(arguments)
        if buf.size > max_chars:
            buf.parts = []  # drop the text: an endless stream must not fill memory
            broken = broken or buf.problem(ToolError(
                "too_large", f"$[{index}].arguments", f"arguments passed the {max_chars} character cap",
                expected=f"at most {max_chars} characters", received=f"more than {max_chars}",
                hint="send a reference (a path or id) instead of the content"))
    elif not isinstance(arguments, str):
        broken = broken or buf.problem(stream_invalid(f"$[{index}].arguments", "argument fragment is not text",
                                                      type(arguments).__name__))
    return broken


def _identify(buf: Buffer, call_id: Any, name: Any) -> ToolError | None:
    """Assemble the id and the name by ``assemble_field``: repeats are ignored, pieces joined, changes refused."""
    where = f"$[{buf.index}]"
    for field, value, cap, cap_name in (("id", call_id, MAX_CALL_ID_CHARS, "MAX_CALL_ID_CHARS"),
                                        ("name", name, MAX_NAME_CHARS, "MAX_NAME_CHARS")):
        if value is None:
            continue
        current = buf.vendor_id if field == "id" else buf.name
        label = "call id" if field == "id" else "tool name"
        grown, why = assemble_field(current, value, buf.size > 0) if field == "id" or isinstance(value, str) else (
            current, "not text")            # an id may be a JSON-RPC integer; a name is always text
        broken = None
        if why == "changed":
            broken = buf.problem(stream_invalid(f"{where}.{field}", f"{label} changed mid-stream",
                                                [echo_value(current), echo_value(value)]))
        elif why:
            broken = buf.problem(stream_invalid(f"{where}.{field}", f"{label} is not a string", type(value).__name__))
        elif field_too_long(grown, cap):        # no real tool or id is that long: the stream is broken
            return over_cap(f"{where}.{field}", f"the {label}", cap_name, cap, "characters")
        elif field == "id":
            buf.vendor_id = grown
        else:
            buf.name = grown
        if broken:
            return broken
    return None


def parsed_call(buf: Buffer, needs_close: bool, envelope: bool) -> tuple[str | None, Any, list[ToolError]]:
    """A complete call's name and strictly parsed arguments, or why it cannot run."""
    if needs_close and not buf.closed:
        return None, None, [stream_incomplete(f"call #{buf.index} never closed its block", "open block")]
    arguments, errors = schema.parse_arguments("".join(buf.parts))
    if errors:
        return None, None, errors
    name = buf.name
    if envelope:
        name, arguments, errors = _open_envelope(arguments)
        if errors:
            return None, None, errors
        buf.name = name
    if not name:
        return None, None, [stream_invalid(f"$[{buf.index}].name", "no tool name arrived for this call")]
    return name, arguments, []


def _open_envelope(envelope: Any) -> tuple[str | None, Any, list[ToolError]]:
    """Split ``{"name": ..., "arguments": {...}}`` into a name and arguments, strictly."""
    extra = sorted(set(envelope) - {"name", "arguments"})
    if extra:
        return None, None, [ToolError("unexpected_property", f"$.{extra[0]}", "unexpected property",
                                      expected="name and arguments", received=echo_value(extra[0]))]
    name = envelope.get("name")
    if not isinstance(name, str) or not name:
        return None, None, [ToolError("missing_required", "$.name", "a call needs a tool name",
                                      expected="a non-empty string", received=schema.json_type(name))]
    if field_too_long(name, MAX_NAME_CHARS):
        return None, None, [over_cap("$.name", "the tool name", "MAX_NAME_CHARS", MAX_NAME_CHARS, "characters")]
    arguments, errors = schema.parse_arguments(envelope.get("arguments", {}))
    return name, arguments, errors


def preview_of(buf: Buffer, call_id: str | None) -> Preview:
    """Progress for one call: the text so far (secrets masked) and the keys seen so far."""
    if buf.scanner is None:
        buf.scanner = KeyScanner()
    for part in buf.parts[buf.seen:]:
        buf.scanner.feed(part)
    buf.seen = len(buf.parts)
    if len(buf.keys) != len(buf.scanner.keys):
        buf.keys = tuple(buf.scanner.keys)
    return Preview(buf.index, call_id, buf.name, buf.scanner.text(), buf.keys, len(buf.parts))
