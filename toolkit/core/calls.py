"""Chapter 01: a tool call is a request, not an action.

The model proposes ``(name, arguments, call id)``; nothing in this module runs
anything. The host decides later whether the request may cross the boundary.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass(frozen=True, repr=False)
class ToolCall:
    """One unexecuted request from a model.

    ``arguments`` is kept exactly as received: a dict, a JSON string, or
    anything else a model produced. Validation decides what it means.
    """

    name: str
    arguments: Any
    call_id: str
    idempotency_key: str | None = None

    def __repr__(self) -> str:   # what a notebook cell or a log shows: secret-looking fields masked, as in summary()
        from toolkit.core.redaction import redact_arguments

        return (f"ToolCall(name={self.name!r}, arguments={redact_arguments(self.arguments)!r}, "
                f"call_id={self.call_id!r}, idempotency_key={self.idempotency_key!r})")

    def summary(self, secret_fields: Iterable[str] = ()) -> str:
        """A one-line rendering such as ``read_file({"path": "a.txt"}) #call_1``.

        Secret-looking fields (and ``secret_fields``, the contract's, where the caller knows them) are
        masked before the arguments are cut to 80 characters, so no fragment of a secret is printed.
        """
        from toolkit.core.hostile import shown_call_id, shown_name
        from toolkit.core.redaction import redact_arguments

        shown = redact_arguments(self.arguments, secret_fields)
        try:
            args = json.dumps(shown, default=repr)   # keys in the order the model sent them
        except (TypeError, ValueError, RecursionError):  # an integer too long to print, a cycle
            args = f"<{type(shown).__name__}>"
        if len(args) > 80:
            args = args[:77] + "..."
        return f"{shown_name(self.name)}({args}) #{shown_call_id(self.call_id)}"


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
