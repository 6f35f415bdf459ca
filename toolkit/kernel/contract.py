"""Chapter 02: a tool contract: the small written agreement a tool makes with its callers.

    contract(f) = (schema, permissions, Pre, Post, cost, risk, retry, reads, writes)

Written before a model may call the tool: what it needs and promises, what it costs and risks, whether a retry
is safe, which resources it reads and writes. ``toolkit.kernel.legality.check`` enforces the writing.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Callable, Mapping

from toolkit.kernel.call import ToolError


class ContractError(ValueError):
    """A contract that cannot be enforced as written (a pattern no ECMA-262 engine compiles), raised when declared."""


class Retry(str, Enum):
    """Retry semantics: is running the same call again harmless?"""

    SAFE = "safe"                        # reading a file: ten tries read the same thing
    SAFE_WITH_KEY = "safe with same key"  # creating an invoice: only with the original idempotency key
    UNSAFE = "unsafe"                    # sending a message: a retry is a second act


@dataclass(frozen=True)
class Condition:
    """A named test over a call, ``predicate(arguments, world)`` (guards, preconditions) or ``predicate(arguments,
    output, world)`` (postconditions): True passes; False fails with its own text, a ToolError with that error."""

    name: str
    description: str
    predicate: Callable[..., bool | ToolError]
    field: str = ""   # the argument the condition is about, so a failure points at it


@dataclass(frozen=True)
class Contract:
    """Everything the host knows about one tool before it runs. ``schema`` is a JSON Schema (2020-12) object;
    ``permissions`` and ``guards`` form the permission layer, ``preconditions`` and ``needs_approval`` the business
    layer; ``reads``/``writes`` are templates such as ``"file:{path}"``, filled from the arguments."""

    name: str
    description: str
    schema: Mapping[str, Any]
    permissions: tuple[str, ...] = ()
    guards: tuple[Condition, ...] = ()
    preconditions: tuple[Condition, ...] = ()
    postconditions: tuple[Condition, ...] = ()
    cost: float = 0.0
    risk: float = 0.0
    reversible: bool = True
    retry: Retry = Retry.SAFE
    risk_category: str = "none"
    evidence: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    secret_fields: tuple[str, ...] = ()
    needs_approval: bool = False
    idempotency_field: str = ""   # the argument that carries the idempotency key, if any
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:   # a schema no ECMA-262 engine can enforce is refused when declared
        from toolkit._schema import declaration_problems   # refs leaving it, patterns that stall
        if problems := declaration_problems(self.schema):
            raise ContractError(f"contract {self.name!r}: " + "; ".join(problems))

    @cached_property
    def validator(self) -> Any:
        """The compiled schema validator, built once per contract."""
        from toolkit._schema import compile_schema
        return compile_schema(self.schema)

    @property
    def parameters(self) -> list[str]:
        """The declared argument names, in schema order."""
        return list(self.schema.get("properties", {}))

    def resources(self, arguments: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
        """The concrete resources this call reads and writes, e.g. ``{"file:a.txt"}`` (a missing field reads ``?``)."""
        values = defaultdict(lambda: "?", arguments)
        return frozenset(t.format_map(values) for t in self.reads), frozenset(t.format_map(values) for t in self.writes)

    def card(self) -> str:
        """The contract written out as a short card, in the chapter's layout."""
        from toolkit._printed import contract_card
        return contract_card(self)

    @classmethod
    def from_model(cls, model: type, **fields: Any) -> "Contract":
        """A contract whose schema is a pydantic model's JSON Schema, validated strictly (``"12"`` is no integer)."""
        fields.setdefault("description", (model.__doc__ or "").strip())
        return cls(schema={k: v for k, v in model.model_json_schema().items() if k != "title"}, **fields)

    @classmethod
    def from_function(cls, function: Callable[..., Any], name: str | None = None, description: str | None = None,
                      **fields: Any) -> "Contract":
        """A contract whose schema is read off ``function``'s type hints (strict, closed, required unless
        defaulted); what the schema cannot describe is refused here, when it is declared."""
        from toolkit._declare import function_fields
        return cls(**function_fields(function, name, description, fields))
