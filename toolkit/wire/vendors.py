"""Chapters 01 and 08: vendor formats: one contract, three tool declarations.

The same ``Contract`` rendered, as pure functions, for OpenAI (``openai_tool``, strict mode
checked by ``strict_problems``), Anthropic (``anthropic_tool``) and MCP (``mcp_tool`` with
``mcp_annotations``); ``tools_for`` picks by vendor."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from toolkit.kernel import Contract, Retry
from toolkit.wire import VENDORS


def openai_tool(contract: Contract, strict: bool = False) -> dict[str, Any]:
    """The contract as an OpenAI tool (``strict=True``: ``ValueError`` where strict mode cannot)."""
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


#: MCP's tool annotations, the one table of them: each hint is read off what the contract declares.
#: ``idempotentHint`` counts ``Retry.SAFE_WITH_KEY`` (the key is one of the arguments, so the same
#: arguments twice have no extra effect); ``destructiveHint`` means something only for a tool that writes.
MCP_HINTS: dict[str, Callable[[Contract], bool]] = {
    "readOnlyHint": lambda contract: not contract.writes,
    "destructiveHint": lambda contract: bool(contract.writes) and not contract.reversible,
    "idempotentHint": lambda contract: not contract.writes or contract.retry in (Retry.SAFE, Retry.SAFE_WITH_KEY),
}


def mcp_annotations(contract: Contract) -> dict[str, bool]:
    """The contract's MCP hints (``MCP_HINTS``): descriptions for a client, never permissions."""
    hints = {name: rule(contract) for name, rule in MCP_HINTS.items()}
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
