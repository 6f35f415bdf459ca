"""Chapter 09: a tool declared from a typed Python function, with its permissions and risk written beside it.

The MCP SDK and pydantic-ai let a function become a tool with one decorator.
The course's version keeps the contract in view: the decorator asks for the
permissions, the risk and the retry rule explicitly (defaults are the safe,
read-only ones), and still produces a strict schema::

    @contract_tool(permissions=("notes.read",), risk_category="none")
    def word_count(path: str, min_length: int = 1) -> dict:
        "Count the words in a note."

* every parameter is declared from its type hint (``str``, ``int``,
  ``float``, ``bool``, ``list[str]``, ``Literal[...]``, ...); a parameter
  without a hint, ``*args``, ``**kwargs``, an object or a model is refused when
  the tool is declared, never when a call arrives;
* ``additionalProperties`` is false and every parameter is required unless
  it has a default;
* the result is a ``toolkit.kernel.Tool``: the host checks every call against
  its contract before the function runs, and the function is called with
  the validated arguments as keywords.
"""
from __future__ import annotations

import inspect
import typing
from typing import Any, Callable

from toolkit.kernel import Contract, Retry, Tool


def parameter_schema(annotation: Any, where: str) -> dict[str, Any]:
    """The JSON Schema for one annotated parameter (pydantic's, titles removed); refuses nested models."""
    from pydantic import TypeAdapter

    try:
        schema = TypeAdapter(annotation).json_schema()
    except Exception as exc:          # pydantic raises several kinds for types it cannot describe
        raise TypeError(f"{where}: cannot describe {annotation!r} as JSON Schema ({type(exc).__name__})") from None
    if "$defs" in schema or "$ref" in schema or schema.get("type") == "object":
        raise TypeError(f"{where}: objects and nested models need a written Contract, not a decorator")
    schema.pop("title", None)
    return schema


def function_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """A strict object schema for ``function``'s parameters (closed; required unless defaulted)."""
    try:
        hints = typing.get_type_hints(function)
    except Exception as exc:          # a hint naming something the function's module cannot see
        raise TypeError(f"{function.__name__}: cannot read its type hints ({type(exc).__name__})") from None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        where = f"{function.__name__}({name})"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise TypeError(f"{where}: a tool takes named arguments only")
        if name not in hints:
            raise TypeError(f"{where}: every parameter needs a type hint")
        properties[name] = parameter_schema(hints[name], where)
        if parameter.default is parameter.empty:
            required.append(name)
        else:
            properties[name]["default"] = parameter.default
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def contract_tool(*, permissions: tuple[str, ...] = (), risk: float = 0.0, risk_category: str = "none",
                  retry: Retry = Retry.SAFE, reversible: bool = True, reads: tuple[str, ...] = (),
                  writes: tuple[str, ...] = (), secret_fields: tuple[str, ...] = (), idempotency_field: str = "",
                  needs_approval: bool = False, name: str | None = None, description: str | None = None
                  ) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a ``Tool`` from a typed function; permissions, risk and retry are explicit arguments."""
    def declare(function: Callable[..., Any]) -> Tool:
        schema = function_schema(function)
        if idempotency_field and idempotency_field not in schema["properties"]:
            raise TypeError(f"{function.__name__}: idempotency_field {idempotency_field!r} is not a parameter")
        text = description if description is not None else inspect.getdoc(function) or ""
        contract = Contract(name=name or function.__name__, description=text.split("\n\n")[0].strip(),
                            schema=schema, permissions=tuple(permissions), risk=risk, risk_category=risk_category,
                            retry=retry, reversible=reversible, reads=tuple(reads), writes=tuple(writes),
                            secret_fields=tuple(secret_fields), idempotency_field=idempotency_field,
                            needs_approval=needs_approval)

        def run(arguments: dict, world: Any) -> Any:
            return function(**arguments)

        run.__name__ = run.__qualname__ = function.__name__
        return Tool(contract, run)
    return declare


__all__ = ["contract_tool", "function_schema", "parameter_schema"]
