"""Chapters 01 and 08: vendor messages: calls read out of three wire shapes, results written back into them.

``openai_calls`` / ``anthropic_calls`` / ``mcp_call`` read each call as a ``ToolCall`` or a
``Refusal`` that never reaches an executor (a response cut at its token limit refuses them all);
``openai_tool_messages`` / ``anthropic_tool_results`` / ``mcp_response`` write results back under
the id the vendor knows, and the assistant-message writers echo every call, refused ones
included, so every result has its call."""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from toolkit.kernel import ToolCall, ToolError, ToolResult, Refusal, is_cut
from toolkit._schema import parse_arguments
from toolkit._ids import duplicate_call_id_error, id_key, IdMap
from toolkit._json import parsed_arguments
from toolkit._show import echo_value
from toolkit.wire import id_problem


def _calls_from(vendor: str, id_field: str, entries: list[tuple[Any, str | None, Any, list[ToolError]]],
                ids: IdMap, cut: ToolError | None) -> list[ToolCall | Refusal]:
    """(vendor id, name, raw arguments, problems) into calls, or refusals for any problem."""
    seen: dict[Any, int] = {}
    for vendor_id, *_ in entries:
        if vendor_id not in (None, "") and not isinstance(vendor_id, (dict, list)):
            seen[id_key(vendor_id)] = seen.get(id_key(vendor_id), 0) + 1
    out: list[ToolCall | Refusal] = []
    answered: set[Any] = set()
    for position, (vendor_id, name, raw, problems) in enumerate(entries):
        problems = list(problems)
        usable_id = vendor_id if id_problem(vendor, vendor_id) is None else None
        if vendor_id not in (None, "") and usable_id is None:
            problems.append(_invalid(f"${id_field}", id_problem(vendor, vendor_id) or "bad id", vendor_id))
        duplicate = usable_id is not None and seen.get(id_key(usable_id), 0) > 1
        if duplicate:
            problems.append(duplicate_call_id_error(usable_id, f"${id_field}"))
        call_id = ids.internal(vendor, usable_id)
        if duplicate and id_key(usable_id) in answered:
            call_id = None  # the first call with this id carries the one result
        elif duplicate:
            answered.add(id_key(usable_id))
        arguments = None
        if not problems and cut is None:
            arguments, parse_errors = parse_arguments(raw)
            problems += parse_errors
        if cut is not None:
            problems.insert(0, cut)
        if problems:
            out.append(Refusal(call_id, name if isinstance(name, str) else None, tuple(problems), position,
                               arguments=raw))
        else:
            out.append(ToolCall(name, arguments, call_id))  # type: ignore[arg-type]
    return out


def _invalid(pointer: str, message: str, received: Any = None, hint: str = "") -> ToolError:
    shown = type(received).__name__ if isinstance(received, (dict, list)) else echo_value(received)   # no payload copied
    return ToolError("invalid_call", pointer, message, received=shown, hint=hint, retryable=True)


def _cut(vendor: str, reason: str) -> ToolError:
    return ToolError("response_incomplete", "$", f"the {vendor} response stopped at {reason!r} before the calls "
                     "were complete", expected="a finished response", received=reason,
                     hint="nothing was run; ask again with a larger token limit or smaller arguments")


def openai_calls(response: Any, ids: IdMap) -> list[ToolCall | Refusal]:
    """Calls from an OpenAI Chat Completions response (or its message), parsed strictly."""
    message, finish = response, None
    if isinstance(response, Mapping) and "choices" in response:
        choices = response.get("choices")
        if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], Mapping):
            return [Refusal(None, None, (_invalid("$.choices", "expected exactly one choice", choices),))]
        message, finish = choices[0].get("message"), choices[0].get("finish_reason")
    if not isinstance(message, Mapping):
        return [Refusal(None, None, (_invalid("$.message", "expected an assistant message object", message),))]
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        return [Refusal(None, None, (_invalid("$.message.tool_calls", "expected a list", calls),))]
    entries = []
    for i, item in enumerate(calls):
        where = f"$.message.tool_calls[{i}]"
        function = item.get("function") if isinstance(item, Mapping) else None
        if not isinstance(function, Mapping):
            entries.append((None, None, None, [_invalid(f"{where}.function", "missing function object")]))
            continue
        problems = []
        if item.get("type", "function") != "function":
            problems.append(_invalid(f"{where}.type", "only function tool calls are supported", item.get("type")))
        name, raw = function.get("name"), function.get("arguments", "")
        if not isinstance(name, str) or not name:
            problems.append(_invalid(f"{where}.function.name", "missing tool name", name))
        if raw is None:
            raw = ""
        entries.append((item.get("id"), name, raw, problems))
    cut = _cut("OpenAI", finish) if is_cut(finish) else None
    return _calls_from("openai", ".tool_calls[].id", entries, ids, cut)


def anthropic_calls(message: Any, ids: IdMap) -> list[ToolCall | Refusal]:
    """Calls from an Anthropic Messages response: its ``tool_use`` content blocks."""
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
        return [Refusal(None, None, (_invalid("$.content", "expected a message with a content list"),))]
    entries = []
    for i, block in enumerate(message["content"]):
        if not isinstance(block, Mapping) or block.get("type") != "tool_use":
            continue  # text, thinking and server-side blocks are not calls for this host
        problems = []
        name = block.get("name")
        if not isinstance(name, str) or not name:
            problems.append(_invalid(f"$.content[{i}].name", "missing tool name", name))
        entries.append((block.get("id"), name, block.get("input", {}), problems))
    stop = message.get("stop_reason")
    cut = _cut("Anthropic", stop) if is_cut(stop) else None
    return _calls_from("anthropic", ".content[].id", entries, ids, cut)


def mcp_call(request: Any, ids: IdMap) -> ToolCall | Refusal:
    """The call inside an MCP ``tools/call`` JSON-RPC request."""
    if not isinstance(request, Mapping):
        return Refusal(None, None, (_invalid("$", "expected a JSON-RPC request object", request),))
    problems = []
    if request.get("jsonrpc") != "2.0":
        problems.append(_invalid("$.jsonrpc", 'expected "2.0"', request.get("jsonrpc")))
    if request.get("method") != "tools/call":
        problems.append(_invalid("$.method", 'expected "tools/call"', request.get("method")))
    if "id" not in request:
        return Refusal(None, None, (_invalid("$.id", "a notification cannot carry a call: there is no id to answer"),))
    params = request.get("params")
    if not isinstance(params, Mapping):
        problems.append(_invalid("$.params", "expected an object with name and arguments", params))
        params = {}
    name = params.get("name")
    if not isinstance(name, str) or not name:
        problems.append(_invalid("$.params.name", "missing tool name", name))
    return _calls_from("mcp", ".id", [(request.get("id"), name, params.get("arguments", {}), problems)], ids, None)[0]


def result_text(result: ToolResult, shown_id: Any = None) -> str:
    """The result as the JSON text a model reads, under ``shown_id`` (the id the vendor knows)."""
    data = result.to_dict()
    if shown_id is not None:
        data["call_id"] = shown_id
    return json.dumps(data, ensure_ascii=False, default=str)


def _echoed(calls: Iterable[ToolCall | Refusal]) -> list[ToolCall | Refusal]:
    """The calls that answer an id: a refusal with no call id has nothing to echo (and no result)."""
    return [c for c in calls if isinstance(c, (ToolCall, Refusal)) and c.call_id is not None]


def _raw_text(arguments: Any) -> str:
    """Arguments as the text OpenAI carries: text unchanged (even unparseable), anything else as JSON."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(arguments)


def _raw_input(arguments: Any) -> dict[str, Any]:
    """Arguments as the object Anthropic carries (anything else under ``unparsed_arguments``)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if arguments is None or arguments == "":
        return {}
    parsed = parsed_arguments(arguments)
    return dict(parsed) if isinstance(parsed, Mapping) else {"unparsed_arguments": _raw_text(arguments)}


def openai_assistant_message(calls: Iterable[ToolCall | Refusal], ids: IdMap, content: str | None = None
                             ) -> dict[str, Any]:
    """The assistant message that carried ``calls``, refused ones too, with their raw arguments."""
    echoed = _echoed(calls)
    message: dict[str, Any] = {"role": "assistant", "content": content if echoed else (content or "")}
    if echoed:
        message["tool_calls"] = [{"id": ids.external(c.call_id, "openai"), "type": "function",  # type: ignore[arg-type]
                                  "function": {"name": c.name or "", "arguments": _raw_text(c.arguments)}}
                                 for c in echoed]
    return message


def openai_tool_messages(results: Iterable[ToolResult], ids: IdMap) -> list[dict[str, Any]]:
    """One ``role: "tool"`` message per result, under the id OpenAI gave the call."""
    out = []
    for r in results:
        vendor_id = ids.external(r.call_id, "openai")
        out.append({"role": "tool", "tool_call_id": vendor_id, "content": result_text(r, vendor_id)})
    return out


def anthropic_assistant_message(calls: Iterable[ToolCall | Refusal], ids: IdMap, content: str | None = None
                                ) -> dict[str, Any]:
    """The assistant turn that carried ``calls`` (``tool_use`` blocks, refused ones too), after its text."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
    blocks += [{"type": "tool_use", "id": ids.external(c.call_id, "anthropic"), "name": c.name or "",  # type: ignore
                "input": _raw_input(c.arguments)} for c in _echoed(calls)]
    return {"role": "assistant", "content": blocks}


def anthropic_tool_results(results: Iterable[ToolResult], ids: IdMap) -> dict[str, Any]:
    """One user turn holding a ``tool_result`` block per result (``is_error`` unless it succeeded)."""
    blocks = []
    for r in results:
        vendor_id = ids.external(r.call_id, "anthropic")
        blocks.append({"type": "tool_result", "tool_use_id": vendor_id, "content": result_text(r, vendor_id),
                       "is_error": not r.ok})
    return {"role": "user", "content": blocks}


def mcp_request(call: ToolCall, ids: IdMap) -> dict[str, Any]:
    """A ``tools/call`` JSON-RPC request for ``call``."""
    return {"jsonrpc": "2.0", "id": ids.external(call.call_id, "mcp"), "method": "tools/call",
            "params": {"name": call.name, "arguments": call.arguments}}


def mcp_response(result: ToolResult, ids: IdMap) -> dict[str, Any]:
    """The JSON-RPC response to ``tools/call``: an undeclared tool is ``-32602``, else a result."""
    rpc_id = ids.external(result.call_id, "mcp")
    text = result_text(result, rpc_id)
    if result.reason == "unknown_tool":
        message = result.errors[0].message if result.errors else "unknown tool"
        return {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32602, "message": message,
                                                          "data": json.loads(text)}}
    body = {"content": [{"type": "text", "text": text}], "structuredContent": json.loads(text),
            "isError": not result.ok}
    return {"jsonrpc": "2.0", "id": rpc_id, "result": body}
