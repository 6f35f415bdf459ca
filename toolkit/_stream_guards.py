"""Chapter 08: what a stream may not do to the assembler: split or repeated ids and names, and the caps it meets.

Servers disagree on how a call's id and tool name travel. Most send each once,
on the call's first delta; some repeat the whole value on every delta; some
cut it into pieces like the arguments (``read_`` then ``file``). ``assemble_field`` is
the one rule that reads all three the same way:

* nothing (``None`` or ``""``) changes nothing;
* the same value again is a repeat, never glued on (no ``read_fileread_file``);
* a value that extends what arrived so far is the whole value so far;
* anything else, before the call's first argument text, is the next piece and
  is appended; after it, the value *changed* mid-stream and the call is refused.

One ambiguity is left, and it is decided for the repeat: a piece equal to
everything received so far (``ab`` then ``ab``) is read as a repeat.

The caps come from ``toolkit._caps``, and each refusal names its cap:
``MAX_OPEN_CALLS`` calls in one stream, ``MAX_NAME_CHARS`` and
``MAX_CALL_ID_CHARS`` for a name or an id, and ``MAX_ERRORS_PER_CALL``
problems for one call. Passing one of them breaks the stream (the reader stops
reading, so a hostile body costs no more time than it takes to reach the cap);
``capped_errors`` keeps a refusal's own list of errors within the last cap.
"""
from __future__ import annotations

from typing import Any

from toolkit._caps import MAX_ECHO_CHARS, MAX_ERRORS_PER_CALL
from toolkit.kernel.call import ToolError
from toolkit._show import shorten
from toolkit.kernel.stream import Refusal

__all__ = ["answered_once", "assemble_field", "capped_errors", "field_too_long", "over_cap",
           "shown_value"]


def assemble_field(current: Any, incoming: Any, started: bool) -> tuple[Any, str]:
    """The field after one delta, and '' or why the delta is refused (``changed`` or ``not text``).

    ``current`` is what arrived so far (None at first); ``started`` says
    whether the call's argument text has begun. Integers (JSON-RPC ids) are
    whole values: they repeat or change, never grow.
    """
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


def shown_value(value: Any) -> Any:
    """What an error may echo of a value a stream sent: short text, a small integer, else its JSON type."""
    if isinstance(value, str):
        return shorten(value, MAX_ECHO_CHARS)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
        return value
    return type(value).__name__


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
        if isinstance(item, Refusal) and item.call_id in seen:
            out[n] = Refusal(None, item.name, item.errors, item.index, item.received_chars)
        elif item.call_id is not None:
            seen.add(item.call_id)
    return out
