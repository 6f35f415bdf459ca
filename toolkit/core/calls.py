"""Chapter 01: a tool call is a request, not an action.

The model proposes ``(name, arguments, call id)``; nothing in this module runs
anything. The host decides later whether the request may cross the boundary.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One unexecuted request from a model.

    ``arguments`` is kept exactly as received: a dict, a JSON string, or
    anything else a model produced. Validation decides what it means.
    """

    name: str
    arguments: Any
    call_id: str
    idempotency_key: str | None = None

    def summary(self) -> str:
        """A one-line rendering such as ``read_file({"path": "a.txt"}) #call_1``."""
        import json

        try:
            args = json.dumps(self.arguments, default=repr)   # keys in the order the model sent them
        except (TypeError, ValueError):  # pragma: no cover - default=repr covers it
            args = repr(self.arguments)
        if len(args) > 80:
            args = args[:77] + "..."
        return f"{self.name}({args}) #{self.call_id}"


@dataclass
class CallIds:
    """Mints call ids for calls that arrive without one.

    Ids are deterministic (``call_1``, ``call_2``, ...) so that notebooks print
    the same thing every run, and they match every vendor's id rules
    (letters, digits, ``_`` and ``-``).
    """

    prefix: str = "call"
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)

    def mint(self) -> str:
        return f"{self.prefix}_{next(self._counter)}"


def request(name: str, arguments: Any, call_id: str | None = None, ids: CallIds | None = None,
            idempotency_key: str | None = None) -> ToolCall:
    """Build a ``ToolCall``, minting a call id when the model gave none."""
    if not call_id:
        call_id = (ids or _DEFAULT_IDS).mint()
    return ToolCall(name=name, arguments=arguments, call_id=call_id, idempotency_key=idempotency_key)


_DEFAULT_IDS = CallIds()
