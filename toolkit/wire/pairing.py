"""Chapters 01 and 08: pairing: every call gets exactly one result, found by its id, never by its position.

``pairing_problems`` is the rule: ``missing_result``, ``duplicate_result``, ``orphan_result``,
reported, never resolved by guessing. ``pair_results`` applies it in the host,
``check_conversation`` to a vendor conversation, ``verify`` to one result as a round hands it
back (``call_id_mismatch``)."""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

from toolkit.kernel import ToolCall, ToolError, ToolResult, FailureClass, Status
from toolkit.wire import VENDORS
from toolkit._caps import MAX_NAME_CHARS
from toolkit._show import shorten


def pairing_problems(asked: Sequence[Any], answered: Iterable[Any], where: str = "$.call_id") -> list[ToolError]:
    """Every call id in ``asked`` answered exactly once, every id in ``answered`` naming a call."""
    asked, seen, errors = list(asked), [], []     # lists, not sets: an id as received may be unhashable
    for call_id in answered:
        if call_id not in asked:
            errors.append(ToolError("orphan_result", where, f"result for {call_id!r} answers no call",
                                    expected=asked, received=call_id))
        elif call_id in seen:
            errors.append(ToolError("duplicate_result", where, f"call {call_id!r} got a second result",
                                    expected="exactly one result", received=call_id))
        else:
            seen.append(call_id)
    return errors + [ToolError("missing_result", where, f"call {call_id!r} has no result",
                               expected="exactly one result", received="none",
                               hint="send a result for every call, rejected and cancelled ones too")
                     for call_id in asked if call_id not in seen]


def pair_results(calls: Sequence[ToolCall], results: Iterable[ToolResult]) -> tuple[dict[str, ToolResult],
                                                                                    list[ToolError]]:
    """Pair results with calls by id, whatever order they arrived in: (the pairs, ``pairing_problems``)."""
    results = list(results)
    wanted = [c.call_id for c in calls]
    paired: dict[str, ToolResult] = {}
    for result in results:
        if result.call_id in wanted and result.call_id not in paired:
            paired[result.call_id] = result
    return paired, pairing_problems(wanted, [r.call_id for r in results])


def check_conversation(messages: list[Any], vendor: str) -> list[ToolError]:
    """Every call answered once, every result answering a call: ``pairing_problems`` per round."""
    if not isinstance(messages, (list, tuple)):
        return [ToolError("invalid_call", "$", "a conversation is a list of messages", expected="list",
                          received=type(messages).__name__)]
    if vendor == "openai":
        rounds = _openai_rounds(list(messages))
    elif vendor == "anthropic":
        rounds = _anthropic_rounds(list(messages))
    elif vendor == "mcp":
        rounds = _mcp_rounds(list(messages))
    else:
        raise ValueError(f"unknown vendor {vendor!r}; choose one of {VENDORS}")
    errors: list[ToolError] = []
    for where, asked, answered in rounds:
        errors += pairing_problems([_comparable(x) for x in asked], [_comparable(x) for x in answered], where)
    return errors


def _comparable(call_id: Any) -> Any:
    """Ids as received may be anything; compare odd ones by their text."""
    return call_id if isinstance(call_id, (str, int, float, type(None))) else repr(call_id)


def _get(item: Any, key: str, default: Any = None) -> Any:
    return item.get(key, default) if isinstance(item, Mapping) else default


def _openai_rounds(messages: list) -> list[tuple[str, list, list]]:
    rounds: list[tuple[str, list, list]] = []
    current: tuple[str, list, list] | None = None
    for i, message in enumerate(messages):
        role = _get(message, "role")
        asked = _get(message, "tool_calls")
        if role == "assistant" and isinstance(asked, list) and asked:
            current = (f"$[{i}]", [_get(c, "id") for c in asked], [])
            rounds.append(current)
        elif role == "tool":
            if current is None:  # a result with no assistant call just before it
                current = (f"$[{i}]", [], [])
                rounds.append(current)
            current[2].append(_get(message, "tool_call_id"))
        else:
            current = None
    return rounds


def _anthropic_rounds(messages: list) -> list[tuple[str, list, list]]:
    rounds = []
    for i, message in enumerate(messages):
        blocks = _get(message, "content")
        if not isinstance(blocks, list):
            continue
        if _get(message, "role") == "assistant":
            asked = [_get(b, "id") for b in blocks if _get(b, "type") == "tool_use"]
            if asked:
                following = messages[i + 1] if i + 1 < len(messages) else {}
                reply = _get(following, "content") if _get(following, "role") == "user" else []
                answered = [_get(b, "tool_use_id") for b in (reply if isinstance(reply, list) else [])
                            if _get(b, "type") == "tool_result"]
                rounds.append((f"$[{i}]", asked, answered))
        elif _get(message, "role") == "user":
            previous = messages[i - 1] if i > 0 else {}
            prev_blocks = _get(previous, "content")
            asked_before = _get(previous, "role") == "assistant" and isinstance(prev_blocks, list) and any(
                _get(b, "type") == "tool_use" for b in prev_blocks)
            stray = [_get(b, "tool_use_id") for b in blocks if _get(b, "type") == "tool_result"]
            if stray and not asked_before:
                rounds.append((f"$[{i}]", [], stray))
    return rounds


def _mcp_rounds(messages: list) -> list[tuple[str, list, list]]:
    asked = [json.dumps(_get(m, "id")) for m in messages if _get(m, "method") == "tools/call" and "id" in m]
    answered = [json.dumps(_get(m, "id")) for m in messages
                if isinstance(m, Mapping) and "method" not in m and ("result" in m or "error" in m)]
    return [("$", asked, answered)]


def verify(call: ToolCall, result: Any) -> ToolResult:
    """Accept ``result`` only if it is a ``ToolResult`` for this very call; otherwise a structured failure."""
    if not isinstance(result, ToolResult):
        return round_failure(call, "execution_failed",
                             f"the executor returned a {type(result).__name__}, not a ToolResult", type(result).__name__)
    if result.call_id != call.call_id:
        return round_failure(call, "call_id_mismatch",
                        f"the executor returned a result for {result.call_id!r} as the answer to {call.call_id!r}",
                        result.call_id, "results were crossed; check the execution record before trusting "
                                        "or retrying either call")
    return result


def round_pointer(call: ToolCall) -> str:
    """Where a round's own errors point: ``tool <name>``, the name cut to ``MAX_NAME_CHARS``."""
    return f"tool {shorten(str(call.name), MAX_NAME_CHARS)}"


def round_failure(call: ToolCall, code: str, message: str, received: Any = None, hint: str = "") -> ToolResult:
    """A round's own failure for ``call`` (crossed results, a crashed or hung tool): status failed, not retryable."""
    error = ToolError(code, round_pointer(call), message, expected=call.call_id if code == "call_id_mismatch" else None,
                      received=received, hint=hint, retryable=False)
    return ToolResult(call.call_id, Status.FAILED, failure_class=FailureClass.EXECUTION, reason=code, errors=(error,))
