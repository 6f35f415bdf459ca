"""Chapter 09: a tool declared from a typed Python function, with its permissions and risk written beside it.

The MCP SDK and pydantic-ai make a function a tool with one decorator; the course's keeps the
contract in view: the decorator takes the contract's fields (``Contract``'s safe defaults) and the
schema comes from ``Contract.from_function``. The host checks every call before the function runs::

    @contract_tool(permissions=("notes.read",), risk_category="none")
    def word_count(path: str, min_length: int = 1) -> dict:
        "Count the words in a note."
"""
from __future__ import annotations

from typing import Any, Callable

from toolkit.kernel import Contract, Tool


def contract_tool(*, name: str | None = None, description: str | None = None,
                  **fields: Any) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a ``Tool`` from a typed function; ``fields`` are the contract's, by keyword."""
    def declare(function: Callable[..., Any]) -> Tool:
        contract = Contract.from_function(function, name=name, description=description, **fields)

        def run(arguments: dict, world: Any) -> Any:
            return function(**arguments)

        run.__name__ = run.__qualname__ = function.__name__
        return Tool(contract, run)
    return declare
