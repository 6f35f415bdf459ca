"""Chapter 01: what a request a hostile (or broken) model may send gets back: a short, structured refusal.

A model can put anything where a call goes: ``None``, a dict, a name of ten million
characters, bytes, an id that is a number or empty, the same id twice. The host never
raises on any of it, never matches or echoes more than the caps in ``toolkit._caps``
allow, and answers with one ``ToolError`` a model (and a log) can read.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable

from toolkit._show import SURROGATE, echo_text
from toolkit.kernel.call import ToolError
from toolkit._caps import MAX_CALL_ID_CHARS, MAX_NAME_CHARS


def call_id_problem(call_id: Any) -> str | None:
    """Why ``call_id`` cannot pair a result with its request, or ``None`` when it can.

    A call id is non-empty text of at most ``MAX_CALL_ID_CHARS`` characters that UTF-8 can hold: it is
    echoed in every result, stored in ledgers and audit logs, and matched by equality.
    """
    if not isinstance(call_id, str):
        return f"a call id must be text, not {type(call_id).__name__ if call_id is not None else 'null'}"
    if not call_id:
        return "a call id must not be empty"
    if len(call_id) > MAX_CALL_ID_CHARS:
        return f"a call id of {len(call_id)} characters is over the {MAX_CALL_ID_CHARS} character cap"
    if SURROGATE.search(call_id):
        return "a call id must be Unicode text (it holds a lone surrogate)"
    return None


def shown_call_id(call_id: Any) -> str:
    """The id a result may carry for ``call_id``: the id itself when valid, else a short, safe echo (or ``?``)."""
    if call_id_problem(call_id) is None:
        return call_id
    return echo_text(call_id) if isinstance(call_id, str) and call_id else "?"


def shown_name(name: Any) -> str:
    """The tool name a record or a transcript may show: the name itself when it is short, encodable text,
    else its short, safe echo."""
    if isinstance(name, str) and len(name) <= MAX_NAME_CHARS and not SURROGATE.search(name):
        return name
    return echo_text(name)


def call_id_error(call_id: Any) -> ToolError | None:
    """The refusal for a call whose id cannot pair its result, or ``None`` when the id is fine."""
    problem = call_id_problem(call_id)
    if problem is None:
        return None
    return ToolError("invalid_call", "$.call_id", problem,
                     expected=f"a call id: non-empty text of at most {MAX_CALL_ID_CHARS} characters",
                     received=echo_text(call_id), hint="send the call again with the id the model gave it")


def duplicate_call_id_error(call_id: Any) -> ToolError:
    """The refusal for a call whose id an earlier call of the same round already used."""
    return ToolError("duplicate_call_id", "$.call_id", "this call id was already used in this round",
                     expected="a call id used once per round", received=shown_call_id(call_id),
                     hint="give every call of a round its own id")


def not_a_call_error(obj: Any) -> ToolError:
    """The refusal for something handed to a checker or an executor that is not a ``ToolCall``."""
    kind = type(obj).__name__
    return ToolError("not_a_call", "$", f"a {kind} is not a ToolCall; only a complete, parsed call may run",
                     expected="ToolCall", received=kind,
                     hint="wait for the completion signal and execute the ToolCall it produces", retryable=False)


def unknown_tool_error(name: Any, declared: Iterable[str]) -> ToolError:
    """The refusal for a name no declared tool has, with the nearest declared names as a hint.

    A name longer than ``MAX_NAME_CHARS`` is neither fuzzy-matched nor echoed whole; a name that is not
    text is shown by its type only.
    """
    names = sorted(declared)
    shown = echo_text(name)
    if not isinstance(name, str):
        message, near = f"a tool name must be text, not {shown}", []
    elif len(name) > MAX_NAME_CHARS:
        message, near = f"a tool name of {len(name)} characters is over the {MAX_NAME_CHARS} character cap", []
    else:
        message = f"no tool named {shown!r} is declared"
        near = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    return ToolError("unknown_tool", "$.name", message, expected=names, received=shown,
                     hint=f"did you mean {', '.join(near)}?" if near else "choose one of the declared tools")


__all__ = ["call_id_error", "call_id_problem", "duplicate_call_id_error", "not_a_call_error", "shown_call_id",
           "shown_name", "unknown_tool_error"]
