"""Chapters 01 and 08: vendor formats: one contract, three wire shapes, and ids that never cross.

Nothing about tool calling is standard across vendors. The same contract is
shown to OpenAI as ``{"type": "function", "function": {...}}``, to Anthropic
as ``{"name", "description", "input_schema"}`` and to an MCP client as a tool
definition with hints. Calls come back in three shapes, and results must go
back in three shapes, each paired with its call by that vendor's id field.

This module keeps those differences at the edge, as pure functions:

* ``openai_tool`` / ``anthropic_tool`` / ``mcp_tool`` render a ``Contract``;
* ``openai_calls`` / ``anthropic_calls`` / ``mcp_call`` read calls out of a
  response (each call becomes a ``ToolCall``, or a ``Refusal`` that never
  reaches an executor);
* ``openai_tool_messages`` / ``anthropic_tool_results`` / ``mcp_response``
  write results back;
* ``check_conversation`` finds calls that got no result (both big vendors
  reject such a conversation) and results that answer no call.

Ids: the toolkit mints its own call ids (``call_1``, ``call_2``, ...) and an
``IdMap`` remembers which vendor id each one answers to. A result is written
back under the vendor's own id; a call moved to another vendor gets an id that
vendor accepts (Anthropic allows only ``^[a-zA-Z0-9_-]+$``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from toolkit.core import CallIds, ToolCall
from toolkit.core import Contract, Retry
from toolkit.core import ToolError
from toolkit.core import FailureClass, Status, ToolResult
from toolkit.core import parse_arguments

VENDORS = ("openai", "anthropic", "mcp")
_SAFE_ID = re.compile(r"[a-zA-Z0-9_-]+")


# ------------------------------------------------------------------ call ids
def id_problem(vendor: str, value: Any) -> str | None:
    """Why ``value`` cannot be a call id for ``vendor``, or None when it can.

    OpenAI wants a non-empty string; Anthropic a string of letters, digits,
    ``_`` and ``-``; MCP (JSON-RPC) a string or an integer.
    """
    if vendor == "mcp":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return "a JSON-RPC id must be a string or an integer"
        return None
    if not isinstance(value, str) or not value:
        return "a call id must be a non-empty string"
    if vendor == "anthropic" and not _SAFE_ID.fullmatch(value):
        return "Anthropic ids may contain only letters, digits, '_' and '-'"
    return None


@dataclass
class IdMap:
    """Internal call ids and the vendor ids they answer to, in both directions.

    ``internal(vendor, vendor_id)`` gives the toolkit's id for a vendor's id
    (minting ``call_1``, ``call_2``, ... on first sight, the same answer every
    time after). ``external(call_id, vendor)`` gives the id to write back: the
    vendor's own id when the call came from that vendor, else the internal id,
    which every vendor accepts.
    """

    prefix: str = "call"
    _ids: CallIds = field(init=False, repr=False)
    _inbound: dict[tuple[str, Any], str] = field(default_factory=dict, init=False, repr=False)
    _origin: dict[str, tuple[str, Any]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _SAFE_ID.fullmatch(self.prefix):
            raise ValueError("an id prefix may contain only letters, digits, '_' and '-'")
        self._ids = CallIds(self.prefix)

    def mint(self) -> str:
        """A fresh internal id that answers to no vendor id."""
        call_id = self._ids.mint()
        self._origin[call_id] = ("", None)
        return call_id

    def internal(self, vendor: str, vendor_id: Any = None) -> str:
        """The internal id for ``vendor_id`` (a fresh one when the vendor gave none)."""
        if vendor_id is None or vendor_id == "" or isinstance(vendor_id, bool):
            return self.mint()
        key = (vendor, _key(vendor_id))
        if key not in self._inbound:
            call_id = self._ids.mint()
            self._inbound[key] = call_id
            self._origin[call_id] = (vendor, vendor_id)
        return self._inbound[key]

    def external(self, call_id: str, vendor: str) -> Any:
        """The id ``vendor`` knows this call by. Raises ``KeyError`` for an id this map never minted."""
        if call_id not in self._origin:
            raise KeyError(f"call id {call_id!r} was not minted by this IdMap")
        origin, vendor_id = self._origin[call_id]
        if origin == vendor:
            return vendor_id
        self._inbound.setdefault((vendor, _key(call_id)), call_id)  # so a reply under this id maps back
        return call_id

    def knows(self, call_id: str) -> bool:
        return call_id in self._origin

    def rows(self) -> list[dict[str, Any]]:
        """The mapping as plain rows: ``{"call_id", "vendor", "vendor_id"}``, in minting order."""
        return [{"call_id": c, "vendor": v or None, "vendor_id": vid} for c, (v, vid) in self._origin.items()]


def _key(vendor_id: Any) -> Any:
    return (type(vendor_id).__name__, vendor_id)  # 1 and "1" are different JSON-RPC ids


# ------------------------------------------------------------------ refusals
@dataclass(frozen=True)
class Refusal:
    """A call that will not reach an executor, and every reason why.

    It still answers its call id: ``result`` is the rejected ``ToolResult`` to
    send back, so the conversation stays complete. ``call_id`` is None only
    when there is no call to answer (a broken stream before any call began, or
    a second call reusing an id that the first one already answers).
    """

    call_id: str | None
    name: str | None
    errors: tuple[ToolError, ...]
    index: int | None = None
    received_chars: int = 0

    @property
    def code(self) -> str:
        return self.errors[0].code if self.errors else "rejected"

    @property
    def result(self) -> ToolResult | None:
        if self.call_id is None:
            return None
        return ToolResult(self.call_id, Status.REJECTED, failure_class=FailureClass.SCHEMA, reason=self.code,
                          errors=self.errors)

    def line(self) -> str:
        """e.g. ``refused read_file #call_2: $: the response stopped at length ...``."""
        who = f"{self.name or '?'} #{self.call_id or '-'}"
        return f"refused {who}: " + "; ".join(e.line() for e in self.errors)


def _invalid(pointer: str, message: str, received: Any = None, hint: str = "") -> ToolError:
    return ToolError("invalid_call", pointer, message, received=_summary_of(received), hint=hint, retryable=True)


def _summary_of(value: Any, limit: int = 60) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 3] + "..."
    if isinstance(value, (dict, list)):
        return type(value).__name__
    return value


def _cut(vendor: str, reason: str) -> ToolError:
    return ToolError("response_incomplete", "$", f"the {vendor} response stopped at {reason!r} before the calls "
                     "were complete", expected="a finished response", received=reason,
                     hint="nothing was run; ask again with a larger token limit or smaller arguments")


def _finish(vendor: str, id_field: str, entries: list[tuple[Any, str | None, Any, list[ToolError]]],
            ids: IdMap, cut: ToolError | None) -> list[ToolCall | Refusal]:
    """Turn (vendor id, name, raw arguments, problems) into calls or refusals, refusing reused ids."""
    seen: dict[Any, int] = {}
    for vendor_id, *_ in entries:
        if vendor_id not in (None, "") and not isinstance(vendor_id, (dict, list)):
            seen[_key(vendor_id)] = seen.get(_key(vendor_id), 0) + 1
    out: list[ToolCall | Refusal] = []
    answered: set[Any] = set()
    for position, (vendor_id, name, raw, problems) in enumerate(entries):
        problems = list(problems)
        usable_id = vendor_id if id_problem(vendor, vendor_id) is None else None
        if vendor_id not in (None, "") and usable_id is None:
            problems.append(_invalid(f"${id_field}", id_problem(vendor, vendor_id) or "bad id", vendor_id))
        duplicate = usable_id is not None and seen.get(_key(usable_id), 0) > 1
        if duplicate:
            problems.append(ToolError("duplicate_call_id", f"${id_field}", f"two calls share the id {usable_id!r}",
                                      expected="one id per call", received=usable_id,
                                      hint="give each call its own id; none of them was run"))
        call_id = ids.internal(vendor, usable_id)
        if duplicate and _key(usable_id) in answered:
            call_id = None  # the first call with this id carries the one result
        elif duplicate:
            answered.add(_key(usable_id))
        arguments = None
        if not problems and cut is None:
            arguments, parse_errors = parse_arguments(raw)
            problems += parse_errors
        if cut is not None:
            problems.insert(0, cut)
        if problems:
            out.append(Refusal(call_id, name if isinstance(name, str) else None, tuple(problems), position))
        else:
            out.append(ToolCall(name, arguments, call_id))  # type: ignore[arg-type]
    return out


# ------------------------------------------------------------- render tools
def openai_tool(contract: Contract, strict: bool = False) -> dict[str, Any]:
    """The contract as an OpenAI Chat Completions tool.

    With ``strict=True`` the tool asks for strict structured outputs, which
    OpenAI allows only when every object closes its properties
    (``additionalProperties: false``) and requires all of them; otherwise
    this raises ``ValueError`` naming the first offending object.
    """
    function: dict[str, Any] = {"name": contract.name, "description": contract.description,
                                "parameters": dict(contract.schema)}
    if strict:
        problems = strict_problems(contract.schema)
        if problems:
            raise ValueError(f"{contract.name} cannot be strict: " + "; ".join(problems))
        function["strict"] = True
    return {"type": "function", "function": function}


def strict_problems(schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """Why a schema cannot be used in OpenAI strict mode (empty when it can)."""
    problems: list[str] = []
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where} must set additionalProperties to false")
        missing = [k for k in schema.get("properties", {}) if k not in schema.get("required", [])]
        if missing:
            problems.append(f"{where} must require every property (missing {', '.join(missing)})")
    for name, sub in schema.get("properties", {}).items():
        if isinstance(sub, Mapping):
            problems += strict_problems(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), Mapping):
        problems += strict_problems(schema["items"], f"{where}[]")
    return problems


def anthropic_tool(contract: Contract) -> dict[str, Any]:
    """The contract as an Anthropic Messages tool: name, description, input_schema."""
    return {"name": contract.name, "description": contract.description, "input_schema": dict(contract.schema)}


def mcp_annotations(contract: Contract) -> dict[str, bool]:
    """MCP hints derived from what the contract declares.

    * ``readOnlyHint``: the contract writes nothing;
    * ``destructiveHint``: it writes, and the write cannot be undone;
    * ``idempotentHint``: the same arguments twice have no extra effect
      (reads, ``Retry.SAFE``, and ``Retry.SAFE_WITH_KEY`` because the key is
      one of the arguments);
    * ``openWorldHint``: only when ``contract.extras["open_world"]`` says so;
      without it the hint is left out and MCP's default (open) applies.

    Hints are descriptions for a client, never permissions: a client must not
    trust them from a server it does not trust.
    """
    read_only = not contract.writes
    hints = {"readOnlyHint": read_only,
             "destructiveHint": (not read_only) and not contract.reversible,
             "idempotentHint": read_only or contract.retry in (Retry.SAFE, Retry.SAFE_WITH_KEY)}
    if "open_world" in contract.extras:
        hints["openWorldHint"] = bool(contract.extras["open_world"])
    return hints


def mcp_tool(contract: Contract) -> dict[str, Any]:
    """The contract as an MCP tool definition (``tools/list`` entry)."""
    tool: dict[str, Any] = {"name": contract.name}
    if contract.extras.get("title"):
        tool["title"] = contract.extras["title"]
    tool.update({"description": contract.description, "inputSchema": dict(contract.schema),
                 "annotations": mcp_annotations(contract)})
    return tool


def tools_for(vendor: str, contracts: Iterable[Contract]) -> list[dict[str, Any]]:
    """Render several contracts for one vendor."""
    render = {"openai": openai_tool, "anthropic": anthropic_tool, "mcp": mcp_tool}.get(vendor)
    if render is None:
        raise ValueError(f"unknown vendor {vendor!r}; choose one of {VENDORS}")
    return [render(c) for c in contracts]


# --------------------------------------------------------------- read calls
def openai_calls(response: Any, ids: IdMap) -> list[ToolCall | Refusal]:
    """Calls from an OpenAI Chat Completions response (or just its assistant message).

    ``function.arguments`` is a JSON string; it is parsed strictly. A response
    that stopped at ``length`` refuses every call in it.
    """
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
    cut = _cut("OpenAI", finish) if finish in ("length", "content_filter") else None
    return _finish("openai", ".tool_calls[].id", entries, ids, cut)


def anthropic_calls(message: Any, ids: IdMap) -> list[ToolCall | Refusal]:
    """Calls from an Anthropic Messages response: its ``tool_use`` content blocks.

    A response that stopped at ``max_tokens`` refuses every call in it.
    """
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
    cut = _cut("Anthropic", stop) if stop in ("max_tokens", "refusal", "model_context_window_exceeded") else None
    return _finish("anthropic", ".content[].id", entries, ids, cut)


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
    return _finish("mcp", ".id", [(request.get("id"), name, params.get("arguments", {}), problems)], ids, None)[0]


# ------------------------------------------------------------ write results
def result_text(result: ToolResult, shown_id: Any = None) -> str:
    """The result as the JSON text a model reads (``ToolResult.to_dict``).

    ``shown_id`` replaces the internal call id with the id the vendor knows,
    so the model never sees two names for one call.
    """
    data = result.to_dict()
    if shown_id is not None:
        data["call_id"] = shown_id
    return json.dumps(data, ensure_ascii=False, default=str)


def openai_assistant_message(calls: Iterable[ToolCall], ids: IdMap) -> dict[str, Any]:
    """The assistant message that carried ``calls``, as it goes back into the history."""
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": ids.external(c.call_id, "openai"), "type": "function",
         "function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, str)
                      else json.dumps(c.arguments, ensure_ascii=False)}}
        for c in calls]}


def openai_tool_messages(results: Iterable[ToolResult], ids: IdMap) -> list[dict[str, Any]]:
    """One ``role: "tool"`` message per result, under the id OpenAI gave the call."""
    out = []
    for r in results:
        vendor_id = ids.external(r.call_id, "openai")
        out.append({"role": "tool", "tool_call_id": vendor_id, "content": result_text(r, vendor_id)})
    return out


def anthropic_assistant_message(calls: Iterable[ToolCall], ids: IdMap) -> dict[str, Any]:
    """The assistant turn that carried ``calls`` (``tool_use`` blocks)."""
    return {"role": "assistant", "content": [
        {"type": "tool_use", "id": ids.external(c.call_id, "anthropic"), "name": c.name,
         "input": parse_arguments(c.arguments)[0] or {}}
        for c in calls]}


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
    """The JSON-RPC response to a ``tools/call`` request.

    A tool that is not declared is a protocol error (JSON-RPC ``-32602``);
    everything else, refusals included, is a tool result with ``isError`` so
    the model can read why and correct itself.
    """
    rpc_id = ids.external(result.call_id, "mcp")
    text = result_text(result, rpc_id)
    if result.reason == "unknown_tool":
        message = result.errors[0].message if result.errors else "unknown tool"
        return {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32602, "message": message,
                                                          "data": json.loads(text)}}
    body = {"content": [{"type": "text", "text": text}], "structuredContent": json.loads(text),
            "isError": not result.ok}
    return {"jsonrpc": "2.0", "id": rpc_id, "result": body}


# ------------------------------------------------------------------ fixtures
_FIXTURE_NAME = re.compile(r"[a-z0-9_]+\.(json|txt)")


def fixture_names() -> list[str]:
    """The recorded example messages shipped in ``toolkit/wire/recordings``."""
    from importlib.resources import files

    return sorted(p.name for p in (files("toolkit.wire") / "recordings").iterdir()
                  if _FIXTURE_NAME.fullmatch(p.name))


def fixture(name: str) -> Any:
    """A recorded example message: parsed JSON for ``*.json``, the raw stream text for ``*.txt``.

    The examples are written in each vendor's documented shape (no network was
    involved): requests, responses, streams and follow-up requests.
    """
    from importlib.resources import files

    if not _FIXTURE_NAME.fullmatch(name):
        raise ValueError(f"not a fixture name: {name!r}")
    text = (files("toolkit.wire") / "recordings" / name).read_text(encoding="utf-8")
    return json.loads(text) if name.endswith(".json") else text


# ------------------------------------------------------- conversation check
def check_conversation(messages: list[Any], vendor: str) -> list[ToolError]:
    """Every call answered exactly once, and every result answering a call.

    ``messages`` is an OpenAI or Anthropic message list, or for MCP a list of
    JSON-RPC messages. Returns ``missing_result``, ``duplicate_result`` and
    ``orphan_result`` errors; an empty list means the conversation is whole.
    """
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
        asked, answered = [_plain(x) for x in asked], [_plain(x) for x in answered]
        for call_id in asked:
            count = answered.count(call_id)
            if count == 0:
                errors.append(ToolError("missing_result", where, f"call {call_id!r} has no result",
                                        expected="exactly one result", received="none",
                                        hint="send a result for every call, rejected and cancelled ones too"))
            elif count > 1:
                errors.append(ToolError("duplicate_result", where, f"call {call_id!r} has {count} results",
                                        expected="exactly one result", received=count))
        for call_id in dict.fromkeys(answered):
            if call_id not in asked:
                errors.append(ToolError("orphan_result", where, f"result for {call_id!r} answers no call",
                                        expected=list(asked), received=call_id))
    return errors


def _plain(call_id: Any) -> Any:
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
