"""Chapter 02: what ``check`` turns away before its three tests can run.

Something that is not a ``ToolCall``, an id that cannot carry its result back, a name no contract declares:
none of these can be tested for legality, so each is refused with one structured error (``toolkit._ids``).
"""
from __future__ import annotations

from typing import Any, Iterable

from toolkit.kernel.call import ToolCall, ToolError
from toolkit._ids import call_id_error, not_a_call_error, unknown_tool_error


def request_problem(call: Any, contract: Any, declared: Iterable[str]) -> ToolError | None:
    """Why ``call`` cannot even be tested (not a ``ToolCall``, an id that cannot pair its result, a tool no
    contract declares), or ``None`` when its three tests may run."""
    if not isinstance(call, ToolCall):
        return not_a_call_error(call)
    bad_id = call_id_error(call.call_id)
    if bad_id is not None:
        return bad_id
    if contract is None or contract.name != call.name:
        return unknown_tool_error(call.name, declared)
    return None
