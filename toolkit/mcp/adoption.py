"""Chapter 09: an MCP server's tool, adopted as a contract: the host writes the contract, the server only suggests.

    inputSchema           -> the contract's argument schema (closed: undeclared arguments refused)
    the host's Trust      -> permissions, preconditions, approval, retry semantics
    the server's hints    -> may add a safeguard (destructiveHint asks for approval), never remove one

A server the host does not control can say anything (a tool that deletes can call itself read-only),
so its hints only add caution; the host's ``Trust`` lifts a safeguard. A tool in ``repeatable`` is
``SAFE``; one with an idempotency field ``SAFE_WITH_KEY``; any other ``UNSAFE``, through the ledger.
Every adopted schema is closed (no ``additionalProperties``, ``patternProperties`` or
``unevaluatedProperties`` reopen it); a schema that is not an object schema, is over
``MAX_SCHEMA_BYTES``, holds a ``$ref``, a pattern not checkable in linear time, or compiles in no
validator leaves the tool out, with a reason."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from toolkit.kernel import Condition, Contract, Retry
from toolkit._caps import MAX_DESCRIPTION_CHARS, MAX_SCHEMA_BYTES, MAX_SERVER_ERROR_CHARS
from toolkit._show import echo_text, shorten


@dataclass(frozen=True)
class Trust:
    """What the host decides about a server's tools, whatever the server says about them."""

    permissions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # tool -> scopes the caller needs
    preconditions: Mapping[str, tuple[Condition, ...]] = field(default_factory=dict)
    risky: frozenset[str] = frozenset()          # tools that always need a person's approval
    repeatable: frozenset[str] = frozenset()     # tools the host knows are safe to repeat (no ledger)
    idempotency_fields: Mapping[str, str] = field(default_factory=dict)   # tool -> the argument holding its key
    secret_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # never shown


def hint(tool: Any, name: str) -> bool | None:
    """One annotation of an ``mcp.types.Tool`` (``"destructive_hint"``...), or None when the server gave none."""
    annotations = getattr(tool, "annotations", None)
    value = getattr(annotations, name, None) if annotations is not None else None
    return value if isinstance(value, bool) else None


#: What would let undeclared arguments through: replaced by ``additionalProperties: false``.
_REOPENING = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def adopted_schema(input_schema: Any) -> dict[str, Any] | str:
    """The argument schema the contract enforces (closed), or why the server's cannot be used."""
    if not isinstance(input_schema, Mapping) or input_schema.get("type") != "object":
        return "its inputSchema is not an object schema"
    try:
        size = len(json.dumps(input_schema).encode("utf-8", "replace"))
    except (TypeError, ValueError, RecursionError):
        return "its inputSchema is not JSON"
    if size > MAX_SCHEMA_BYTES:
        return f"its inputSchema is {size} bytes, over MAX_SCHEMA_BYTES ({MAX_SCHEMA_BYTES})"
    schema = {key: value for key, value in input_schema.items() if key not in _REOPENING}
    schema["additionalProperties"] = False
    return schema


def adopt_tool(tool: Any, trust: Trust = Trust()) -> Contract | str:
    """The contract the host enforces for one ``mcp.types.Tool``, or a one-line reason it cannot adopt it."""
    from toolkit._schema import compile_schema

    listed = isinstance(tool, Mapping)   # an entry the SDK could not read (McpConnection.tools)
    name = tool.get("name") if listed else getattr(tool, "name", None)
    if not isinstance(name, str) or not name:
        return "a tool without a name"
    listed_schema = tool.get("inputSchema") if listed else getattr(tool, "input_schema", None)
    schema = adopted_schema(listed_schema)
    if listed and not isinstance(schema, str):
        schema = "its entry is not an MCP tool"
    if isinstance(schema, str):
        return f"{echo_text(name)}: {schema}"
    destructive = hint(tool, "destructive_hint") is True
    approval = name in trust.risky or destructive
    key_field = trust.idempotency_fields.get(name, "")
    retry = Retry.SAFE if name in trust.repeatable else \
        Retry.SAFE_WITH_KEY if key_field else Retry.UNSAFE
    why = "listed as risky by the host" if name in trust.risky else "the server marks it destructive"
    try:
        contract = Contract(
            name=name,
            description=shorten(str(getattr(tool, "description", "") or ""), MAX_DESCRIPTION_CHARS),
            schema=schema, permissions=tuple(trust.permissions.get(name, ())),
            preconditions=tuple(trust.preconditions.get(name, ())),
            secret_fields=tuple(trust.secret_fields.get(name, ())), needs_approval=approval,
            reversible=not approval, retry=retry, idempotency_field=key_field,
            risk=0.5 if approval else 0.1, risk_category=why if approval else "as the server describes it",
            extras={"mcp_hints": {k: hint(tool, k) for k in ("read_only_hint", "destructive_hint",
                                                             "idempotent_hint")}})
        compile_schema(contract.schema)
    except Exception as exc:   # a $ref outside it, a pattern RE2 cannot run, a bad schema
        reason = str(getattr(exc, "message", exc)).replace(f"contract {name!r}: ", "")
        reason = shorten(reason, MAX_SERVER_ERROR_CHARS)
        return f"{echo_text(name)}: its inputSchema cannot be enforced ({reason})"
    return contract
