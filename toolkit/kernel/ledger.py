"""Chapter 05: the ledger rule: retries are unavoidable; duplicate side effects are optional.

    invoke(f, x, k, L) = (L, L[k])               if k in dom(L)
                         (L ∪ {k ↦ y}, y)         if k not in dom(L), y = f_k(x)

``invoke`` is the rule as a pure function over a dict. ``MemoryLedger`` is the
same rule as an object with state, for the first explanation; its ``call``
adds what a real ledger needs, and ``toolkit.effects.sqlite_ledger`` keeps
the same answers on a file on disk, so a key survives a crash:

* a key is claimed together with the tool, the principal and a fingerprint of
  the arguments (``toolkit._fingerprints``); the same key with
  different arguments is a *conflict*, never a silent replay of someone
  else's result;
* a finished key *replays* its stored result; a key still in flight answers
  *in progress* instead of running twice. While its owner may still finish,
  that answer says "ask again"; once nobody will (the owner gave up, or its
  lease ran out: ``toolkit.effects.leases``) it says "do not wait: settle it".

Every answer is an ``Answer``: plain data with a status, the result, and a
structured ``ToolError`` when the ledger refused. A tool's failure message is
scrubbed of the call's secret values before an answer carries it or a ledger
stores it. Nothing here raises on bad keys or arguments.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Protocol, TypeVar, runtime_checkable

from toolkit.kernel.call import FailureClass, Status, ToolError, ToolFailure, ToolResult
from toolkit._schema import parse_arguments
from toolkit._show import scrub, secret_values
from toolkit._fingerprints import check_key, checked_fingerprint

Y = TypeVar("Y")


def invoke(f: Callable[[Any], Y], x: Any, k: str, L: Mapping[str, Y]) -> tuple[dict[str, Y], Y]:
    """The chapter's two branches, literally: replay a known key, or run once and record."""
    if k in L:
        return dict(L), L[k]
    y = f(x)
    return {**L, k: y}, y


@runtime_checkable
class Ledger(Protocol):
    """What the interpreter needs from a ledger, durable or not."""

    def invoke(self, key: str, effect: Callable[[Any], Any], arguments: Any) -> Any:
        """The ledger rule: the effect's result, run at most once per key."""
        ...

    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "", secret_fields: Iterable[str] = ()) -> Answer:
        """The rule with fingerprints: run, replay, or refuse, as an ``Answer``."""
        ...

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...


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


_RESULT_STATUS = {
    LedgerStatus.CONFLICT: (Status.REJECTED, FailureClass.PRECONDITION),
    LedgerStatus.INVALID: (Status.REJECTED, FailureClass.SCHEMA),
    LedgerStatus.IN_PROGRESS: (Status.RECOVERABLE_FAILURE, FailureClass.EXECUTION),
    LedgerStatus.PENDING: (Status.TIMEOUT, FailureClass.TIMEOUT),
    LedgerStatus.FAILED: (Status.FAILED, FailureClass.EXECUTION),
}


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
        """One printable line, e.g. ``invoice-431: replayed -> {"invoice_id":"INV-9"}``."""
        if self.ok:
            shown = self.result.to_dict() if isinstance(self.result, ToolResult) else self.result
            return f"{self.key}: {self.status.value} -> {json.dumps(shown, sort_keys=True, default=str)}"
        return f"{self.key}: {self.status.value} ({self.error.line() if self.error else ''})"

    def to_dict(self) -> dict[str, Any]:
        result = self.result.to_dict() if isinstance(self.result, ToolResult) else self.result
        return {"status": self.status.value, "key": self.key, "result": result,
                "error": self.error.to_dict() if self.error else None}

    def to_result(self, call_id: str) -> ToolResult:
        """The ``ToolResult`` a model is shown for this answer, paired with ``call_id``."""
        if isinstance(self.result, ToolResult):  # the tool's own result says it best
            return replace(self.result, call_id=call_id)
        if self.ok:
            return ToolResult(call_id, Status.SUCCEEDED, output=self.result,
                              evidence={"idempotency_key": self.key, "ledger": self.status.value})
        status, failure_class = _RESULT_STATUS[self.status]
        if self.status is LedgerStatus.FAILED and self.error is not None and self.error.retryable:
            status = Status.RECOVERABLE_FAILURE
        if self.status is LedgerStatus.IN_PROGRESS and self.error is not None and not self.error.retryable:
            status, failure_class = Status.TIMEOUT, FailureClass.TIMEOUT   # nobody will finish it: unknown
        errors = (self.error,) if self.error else ()
        return ToolResult(call_id, status, failure_class=failure_class,
                          reason=self.error.code if self.error else self.status.value, errors=errors)

    # -- the refusals every ledger gives, worded once ----------------------------
    @classmethod
    def conflict(cls, key: str, what: str, before: str, now: str) -> Answer:
        return cls(LedgerStatus.CONFLICT, key, error=ToolError(
            "idempotency_conflict", "$.idempotency_key",
            "key already used for another tool" if what == "tool" else "key already used with other arguments",
            expected=before, received=now,
            hint="repeat the original call to ask about it, or use a new key for a new action", retryable=False))

    @classmethod
    def in_progress(cls, key: str, dead: str = "") -> Answer:
        """The key is claimed and unfinished. ``dead`` says why nobody will finish it (then: do not wait)."""
        if not dead:
            return cls(LedgerStatus.IN_PROGRESS, key, error=ToolError(
                "in_progress", "$.idempotency_key", "an earlier call with this key has not finished",
                hint="wait and ask again with the same key; a key that stays pending needs reconciliation",
                retryable=True))
        return cls(LedgerStatus.IN_PROGRESS, key, error=ToolError(
            "in_progress", "$.idempotency_key", "an earlier call with this key has not finished",
            expected="a claim whose owner is still working", received=dead,
            hint="nobody is finishing it: settle the key from the downstream record (reconcile), "
                 "never by running the effect again", retryable=False))

    @classmethod
    def lost(cls, key: str) -> Answer:
        """A late owner's answer: its claim ran out and the key was settled or retaken by another caller."""
        return cls(LedgerStatus.CONFLICT, key, error=ToolError(
            "idempotency_conflict", "$.idempotency_key",
            "this call lost its claim on the key (its lease ran out and another caller settled or retook the "
            "key), so its result was not recorded", expected="the claim this call took",
            received="a claim settled or held by another caller",
            hint="ask again with the same key for the key's recorded outcome; this call's effect may be a "
                 "second one, so check the downstream record", retryable=False))

    @classmethod
    def unknown(cls, key: str, why: str, result: Any = None) -> Answer:
        return cls(LedgerStatus.PENDING, key, result, error=ToolError(
            "outcome_unknown", "$.idempotency_key", why,
            hint="do not re-run: check the downstream record for this key, or ask a human", retryable=False))

    @classmethod
    def failed(cls, key: str, code: str, message: str, retryable: bool) -> Answer:
        return cls(LedgerStatus.FAILED, key, error=ToolError(
            code, "$.idempotency_key", message,
            hint="nothing was recorded; the same key may be used again" if retryable else "", retryable=retryable))


class MemoryLedger:
    """The ledger rule with state. Not durable: a crash forgets every key.

    ``invoke`` is the ledger rule exactly (a known key replays, whatever the
    arguments). ``call`` adds the fingerprint check and the in-progress answer
    the durable ledger gives, so both can be compared cell by cell.
    """

    def __init__(self) -> None:
        self.entries: dict[Any, Any] = {}                 # key (or (principal, key)) -> result
        self._claims: dict[Any, tuple[str, str]] = {}     # same slots -> (tool, fingerprint)
        self._unknown: set[Any] = set()                   # claims whose call ended with an unknown outcome

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def invoke(self, key: str, effect: Callable[[Any], Y], arguments: Any) -> Y:
        """The rule as written: a known key returns its stored result; a new one runs once and is recorded."""
        self.entries, result = invoke(effect, arguments, key, self.entries)
        return result

    def call(self, key: str, effect: Callable[[Any], Any], arguments: Any, *,
             tool: str = "", principal: str = "", secret_fields: Iterable[str] = ()) -> Answer:
        """Run, replay, or refuse: the same key with other arguments is a conflict, never a replay."""
        refused, digest = check_call(key, arguments, tool, principal)
        if refused:
            return refused
        arguments = json_value(arguments)   # JSON text of an object: the parsed object
        slot: Any = key if not principal else (principal, key)
        if slot in self._claims:
            before_tool, before = self._claims[slot]
            if before_tool != tool:
                return Answer.conflict(key, "tool", before_tool, tool)
            if before != digest:
                return Answer.conflict(key, "arguments", before[:12], digest[:12])
            if slot in self.entries:
                return Answer(LedgerStatus.REPLAYED, key, self.entries[slot])
            return Answer.in_progress(key, "its call ended with an unknown outcome" if slot in self._unknown else "")
        if slot in self.entries:  # recorded by ``invoke``, which keeps no fingerprint
            return Answer(LedgerStatus.REPLAYED, key, self.entries[slot])
        self._claims[slot] = (tool, digest)
        verdict, value, error = run_effect(effect, arguments, secret_fields)
        if verdict == "done":
            self.entries[slot] = value
            return Answer(LedgerStatus.RAN, key, value)
        if verdict == "release":
            del self._claims[slot]
            return Answer(LedgerStatus.FAILED, key, value, error)
        self._unknown.add(slot)
        return Answer.unknown(key, error.message if error else "the effect timed out; its outcome is unknown", value)

    def pending(self) -> list[Any]:
        """Keys claimed but not finished (kept until the process ends: memory has nothing to reconcile with)."""
        return [slot for slot in self._claims if slot not in self.entries]


# --------------------------------------------------------------------------- shared by every ledger
# (``check_call``, ``json_value`` and ``run_effect`` serve the durable ledger too; not exported.)

def check_call(key: Any, arguments: Any, tool: Any, principal: Any) -> tuple[Answer | None, str]:
    """Check the input every ledger call shares and fingerprint the arguments (one pass).

    Arguments given as JSON text of an object are fingerprinted as the parsed
    object, so text and dict name the same call. Returns ``(refusal, "")``
    for bad input (an INVALID answer; nothing is touched), else ``(None, digest)``.
    """
    shown = key if isinstance(key, str) else repr(key)[:40]
    for name, value in (("tool", tool), ("principal", principal)):
        if not isinstance(value, str):
            return Answer(LedgerStatus.INVALID, shown, error=ToolError(
                "wrong_type", f"$.{name}", f"{name} must be a string", expected="string",
                received=type(value).__name__, retryable=False)), ""
    error = check_key(key)
    if error is None:
        error, digest = checked_fingerprint(json_value(arguments))
    if error:
        return Answer(LedgerStatus.INVALID, shown, error=error), ""
    return None, digest


def json_value(arguments: Any) -> Any:
    """The arguments as the ledger fingerprints them: JSON text of an object parsed, anything else as given."""
    if isinstance(arguments, (str, bytes, bytearray)) and arguments.lstrip()[:1] in ("{", b"{"):
        parsed, errors = parse_arguments(arguments)
        if not errors:
            return parsed
    return arguments


def run_effect(effect: Callable[[Any], Any], arguments: Any,
               secret_fields: Iterable[str] = ()) -> tuple[str, Any, ToolError | None]:
    """Run an external effect once and say what the ledger should do: ``done``, ``release`` or ``pending``.

    A returned value is done, except a ``ToolResult`` that says nothing happened
    (rejected, recoverable failure: release) or that nobody knows (timeout:
    pending). A raised ``ToolFailure`` is the tool's own word; any other
    exception leaves the outcome unknown. Failure text (a raised failure's, a
    returned result's errors) is scrubbed of the call's secret values.
    """
    try:
        value = effect(arguments)
    except ToolFailure as failure:
        secrets = secret_values(json_value(arguments), secret_fields)
        error = _mask_error(ToolError(failure.reason, "$.idempotency_key", failure.message,
                                      retryable=failure.status is Status.RECOVERABLE_FAILURE), secrets)
        return ("pending" if failure.status is Status.TIMEOUT else "release"), None, error
    except Exception as exc:  # the effect may or may not have happened
        return "pending", None, ToolError("outcome_unknown", "$.idempotency_key",
                                          f"the effect raised {type(exc).__name__}; its outcome is unknown",
                                          retryable=False)
    if isinstance(value, ToolResult):
        if value.errors or value.reason:
            secrets = secret_values(json_value(arguments), secret_fields)
            reason = scrub(value.reason, secrets) if isinstance(value.reason, str) else value.reason
            errors = tuple(_mask_error(e, secrets) if isinstance(e, ToolError) else e for e in value.errors)
            value = replace(value, reason=reason, errors=errors)
        if value.status is Status.TIMEOUT:
            return "pending", value, None
        if value.status in (Status.REJECTED, Status.RECOVERABLE_FAILURE, Status.CANCELLED):
            return "release", value, None
    return "done", value, None


def _mask_error(error: ToolError, secrets: Iterable[str]) -> ToolError:
    """``error`` with every secret value (and credential-shaped text) masked in its free-text fields."""
    values = tuple(secrets)
    cleaned = {name: scrub(getattr(error, name), values)
               for name in ("code", "message", "expected", "received", "hint") if isinstance(getattr(error, name), str)}
    return replace(error, **cleaned)


__all__ = ["Answer", "Ledger", "LedgerStatus", "MemoryLedger", "invoke"]
