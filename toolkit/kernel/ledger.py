"""Chapter 05: the ledger rule: retries are unavoidable; duplicate side effects are optional.

    invoke(f, x, k, L) = (L, L[k])               if k in dom(L)
                         (L ∪ {k ↦ y}, y)         if k not in dom(L), y = f_k(x)

``invoke`` is the rule over a dict; both ledgers run every call through it (``invoke_effect``),
with what a real ledger adds: the same key with another tool or other arguments is a *conflict*,
a key still in flight is *in progress*, an effect that did not happen frees its key, one whose
outcome is unknown keeps its claim. ``toolkit.effects.durable_ledger`` gives the same answers from
a database. Nothing here raises on bad input. Hardening, one function each: ``check_call``
(``toolkit._json``), ``run_effect`` (``toolkit._outcomes``), ``ledger_refusal``
(``toolkit._refusals``); the result a model is shown is ``toolkit._answers``'.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Protocol, TypeVar, runtime_checkable

from toolkit.kernel.call import ToolError, ToolResult
from toolkit._answers import answer_result
from toolkit._json import check_call
from toolkit._outcomes import run_effect
from toolkit._refusals import ledger_refusal
from toolkit._show import shorten

Y = TypeVar("Y")


def invoke(f: Callable[[Any], Y], x: Any, k: str, L: Mapping[str, Y]) -> tuple[dict[str, Y], Y]:
    """The chapter's two branches, literally: replay a known key, or run once and record."""
    if k in L:
        return dict(L), L[k]
    y = f(x)
    return {**L, k: y}, y


class LedgerStatus(str, Enum):
    """What the ledger did with one call."""

    RAN = "ran"                  # new key: the effect ran once and its result is recorded
    REPLAYED = "replayed"        # finished key: the stored result; nothing ran
    RECONCILED = "reconciled"    # a pending key was settled from the downstream system's record
    CONFLICT = "conflict"        # the key was used before with another tool or other arguments
    IN_PROGRESS = "in_progress"  # the key is claimed and unfinished: wait, or reconcile
    PENDING = "pending"          # this call's outcome is unknown; its claim stays for reconciliation
    FAILED = "failed"            # the effect did not happen; nothing recorded, the key is free again
    INVALID = "invalid"          # bad key or arguments; nothing was touched


@dataclass(frozen=True)
class Answer:
    """The ledger's answer to one call: a status, the (stored) result, or the reason it refused."""

    status: LedgerStatus
    key: str
    result: Any = None
    error: ToolError | None = None

    @property
    def ok(self) -> bool:
        """True when ``result`` is the outcome of the key (first run, replay, or reconciliation)."""
        return self.status in (LedgerStatus.RAN, LedgerStatus.REPLAYED, LedgerStatus.RECONCILED)

    def line(self) -> str:
        """One printable line, ``invoice-431: replayed -> {"invoice_id": "INV-9"}``, or the refusal."""
        if not self.ok:
            return f"{self.key}: {self.status.value} ({self.error.line() if self.error else ''})"
        shown = self.result.to_dict() if isinstance(self.result, ToolResult) else self.result
        text = json.dumps(shown, sort_keys=True, default=str)
        return f"{self.key}: {self.status.value} -> {text}"

    def to_dict(self) -> dict[str, Any]:
        result = self.result.to_dict() if isinstance(self.result, ToolResult) else self.result
        return {"status": self.status.value, "key": self.key, "result": result,
                "error": self.error.to_dict() if self.error else None}

    def to_result(self, call_id: str) -> ToolResult:
        """The ``ToolResult`` a model is shown for this answer, paired with ``call_id`` (``toolkit._answers``)."""
        return answer_result(self, call_id)

    # -- the refusals every ledger gives, worded once in ``toolkit._refusals`` ------
    @classmethod
    def refusal(cls, kind: str, key: str, message: str = "", result: Any = None, **details: Any) -> Answer:
        """``conflict`` / ``lost`` (another call owns the key), ``in_progress``, ``unknown`` or ``failed``."""
        status, error = ledger_refusal(kind, message, **details)
        return cls(LedgerStatus(status), key, result, error)

    @classmethod
    def invalid(cls, key: Any, error: ToolError) -> Answer:
        return cls(LedgerStatus.INVALID, key if isinstance(key, str) else shorten(repr(key)), error=error)


@runtime_checkable
class Ledger(Protocol):
    """What the interpreter needs from a ledger, durable or not."""

    def invoke(self, key: str, effect: Callable[[Any], Any], arguments: Any) -> Any: ...
    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "", secret_fields: Iterable[str] = ()) -> Answer: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: object) -> bool: ...


class MemoryLedger:
    """The ledger rule with state, built on ``invoke``. Not durable: a crash forgets every key."""

    def __init__(self) -> None:
        self.entries: dict[Any, Any] = {}                 # key (or (principal, key)) -> result: L
        self._claims: dict[Any, tuple[str, str]] = {}     # same slots -> (tool, fingerprint)
        self._unknown: set[Any] = set()                   # claims whose call ended with an unknown outcome

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def invoke(self, key: str, effect: Callable[[Any], Y], arguments: Any) -> Y:
        """The rule as written, whatever the arguments: a known key returns its stored result."""
        self.entries, result = invoke(effect, arguments, key, self.entries)
        return result

    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "", secret_fields: Iterable[str] = ()) -> Answer:
        """``invoke``, after a real ledger's checks: bad input, a conflict or a key in flight never runs."""
        error, x, digest = check_call(key, arguments, tool, principal)   # x: the arguments, parsed once
        k = key if not principal else (principal, key)
        refused = Answer.invalid(key, error) if error else self._refused(k, key, tool, digest)
        if refused:
            return refused
        new = k not in self.entries
        if new:
            self._claims[k] = (tool, digest)                              # claimed before the effect runs
        self.entries, verdict, y, error = invoke_effect(effect, x, k, self.entries, secret_fields)
        if verdict != "done":                           # nothing to record (see _unrecorded)
            return self._unrecorded(k, key, verdict, y, error)
        return Answer(LedgerStatus.RAN if new else LedgerStatus.REPLAYED, key, y)

    def _refused(self, k: Any, key: str, tool: str, digest: str) -> Answer | None:
        """A claimed key answers for itself unless it is the same call: another tool or fingerprint, or in flight."""
        if k not in self._claims:
            return None
        before_tool, before = self._claims[k]
        if before_tool != tool:
            return Answer.refusal("conflict", key, what="tool", before=before_tool, now=tool)
        if before != digest:
            return Answer.refusal("conflict", key, what="arguments", before=before[:12], now=digest[:12])
        if k not in self.entries:
            return Answer.refusal("in_progress", key, dead="its call ended with an unknown outcome" if k in self._unknown else "")
        return None

    def _unrecorded(self, k: Any, key: str, verdict: str, value: Any, error: ToolError | None) -> Answer:
        """The effect did not happen (the key is free again), or nobody knows (the claim stays)."""
        if verdict == "release":
            del self._claims[k]
            return Answer(LedgerStatus.FAILED, key, value, error)
        self._unknown.add(k)
        return Answer.refusal("unknown", key, error.message if error else "the effect timed out; its outcome is unknown",
                              value)

    def pending(self) -> list[Any]:
        """Keys claimed but not finished (kept until the process ends: memory has nothing to reconcile with)."""
        return [slot for slot in self._claims if slot not in self.entries]


def invoke_effect(effect: Callable[[Any], Any], x: Any, k: str, L: Mapping[str, Any],
                  secret_fields: Iterable[str] = ()) -> tuple[dict, str, Any, ToolError | None]:
    """``invoke`` with a real effect: ``(L', verdict, y, error)``. Only a done effect is recorded in ``L'``;
    one that did not happen (``release``) or whose outcome is unknown (``pending``) leaves ``L`` as it was."""
    try:
        L, y = invoke(lambda x: _recorded(effect, x, secret_fields), x, k, L)
    except _NotRecorded as outcome:
        return dict(L), *outcome.args
    return L, "done", y, None


def _recorded(effect: Callable[[Any], Any], x: Any, secret_fields: Iterable[str]) -> Any:
    """f_k for ``invoke``: the effect's value when it is done; otherwise nothing may be recorded."""
    verdict, value, error = run_effect(effect, x, secret_fields)
    if verdict != "done":
        raise _NotRecorded(verdict, value, error)
    return value


class _NotRecorded(Exception):
    """The effect left nothing to record: ``args`` are ``run_effect``'s (verdict, value, error)."""
