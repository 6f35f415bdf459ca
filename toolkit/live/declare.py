"""Chapter 09: a tool declared from a typed Python function, with its permissions and risk written beside it.

The MCP SDK and pydantic-ai let a function become a tool with one decorator.
The course's version keeps the contract in view: the decorator asks for the
permissions, the risk and the retry rule explicitly (defaults are the safe,
read-only ones), and the contract itself comes from ``Contract.from_function``
(``toolkit/kernel/contract.py``), which reads a strict schema off the type hints::

    @contract_tool(permissions=("notes.read",), risk_category="none")
    def word_count(path: str, min_length: int = 1) -> dict:
        "Count the words in a note."

The result is a ``toolkit.kernel.Tool``: the host checks every call against its contract before the function
runs, and the function is called with the validated arguments as keywords.
"""
from __future__ import annotations

from typing import Any, Callable

from toolkit.kernel import Contract, Retry, Tool


def contract_tool(*, permissions: tuple[str, ...] = (), risk: float = 0.0, risk_category: str = "none",
                  retry: Retry = Retry.SAFE, reversible: bool = True, reads: tuple[str, ...] = (),
                  writes: tuple[str, ...] = (), secret_fields: tuple[str, ...] = (), idempotency_field: str = "",
                  needs_approval: bool = False, name: str | None = None, description: str | None = None
                  ) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a ``Tool`` from a typed function; permissions, risk and retry are explicit arguments."""
    def declare(function: Callable[..., Any]) -> Tool:
        contract = Contract.from_function(function, name=name, description=description,
                                          permissions=tuple(permissions), risk=risk, risk_category=risk_category,
                                          retry=retry, reversible=reversible, reads=tuple(reads),
                                          writes=tuple(writes), secret_fields=tuple(secret_fields),
                                          idempotency_field=idempotency_field, needs_approval=needs_approval)

        def run(arguments: dict, world: Any) -> Any:
            return function(**arguments)

        run.__name__ = run.__qualname__ = function.__name__
        return Tool(contract, run)
    return declare


__all__ = ["contract_tool"]
