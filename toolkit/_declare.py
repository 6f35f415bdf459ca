"""Chapter 02: a contract's argument schema read off a typed Python function (``Contract.from_function``).

Every parameter needs a type hint; ``*args``, ``**kwargs``, objects and models are refused when the
contract is declared. The schema is closed; a parameter without a default is required."""
from __future__ import annotations

import inspect
import typing
from typing import Any, Callable


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


def function_fields(function: Callable[..., Any], name: str | None, description: str | None,
                    fields: dict[str, Any]) -> dict[str, Any]:
    """``Contract.from_function``'s fields: the schema off the hints, the name, the description."""
    schema = function_schema(function)
    key = fields.get("idempotency_field", "")
    if key and key not in schema["properties"]:
        raise TypeError(f"{function.__name__}: idempotency_field {key!r} is not a parameter")
    text = description if description is not None else inspect.getdoc(function) or ""
    return {"name": name or function.__name__, "description": text.split("\n\n")[0].strip(), "schema": schema,
            **fields}
