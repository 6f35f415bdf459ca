"""Chapters 01 and 08: call ids: refusals for hostile ids and names, one id rule per round, and the id table.

Whatever a model puts where a call goes, the host never raises and never echoes past the caps.
``round_refusals`` is every runner's id rule (calls sharing an id are all refused);
``request_problem`` is what ``check`` turns away untested; ``IdMap`` maps vendor ids to ours."""
from __future__ import annotations

import difflib
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from toolkit._caps import MAX_CALL_ID_CHARS, MAX_NAME_CHARS, MAX_OPEN_CALLS
from toolkit._show import SURROGATE, echo_text, echo_value
from toolkit._stream_guards import over_cap
from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolError, ToolResult

#: What every vendor accepts as a call id (Anthropic allows only these characters).
SAFE_ID = re.compile(r"[a-zA-Z0-9_-]+")


@dataclass
class CallIds:
    """Mints deterministic call ids (``call_1``, ``call_2``, ...) that every vendor's id rules accept."""

    prefix: str = "call"
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)

    def mint(self) -> str:
        return f"{self.prefix}_{next(self._counter)}"


_DEFAULT_IDS = CallIds()


def mint_call_id(ids: CallIds | None = None) -> str:
    """A fresh call id from ``ids``, or from the one default counter (what ``request`` uses)."""
    return (ids or _DEFAULT_IDS).mint()


def call_id_problem(call_id: Any) -> str | None:
    """Why ``call_id`` cannot pair a result with its request, or ``None`` when it can."""
    if not isinstance(call_id, str):
        return f"a call id must be text, not {type(call_id).__name__ if call_id is not None else 'null'}"
    if not call_id:
        return "a call id must not be empty"
    if len(call_id) > MAX_CALL_ID_CHARS:
        return f"a call id of {len(call_id)} characters is over the {MAX_CALL_ID_CHARS} character cap"
    if SURROGATE.search(call_id):
        return "a call id must be Unicode text (it holds a lone surrogate)"
    return None


def shown_call_id(call_id: Any) -> str:
    """The id a result may carry for ``call_id``: the id itself when valid, else a short, safe echo (or ``?``)."""
    if call_id_problem(call_id) is None:
        return call_id
    return echo_text(call_id) if isinstance(call_id, str) and call_id else "?"


def shown_name(name: Any) -> str:
    """The tool name a record may show: the name when short, encodable text, else a safe echo."""
    if isinstance(name, str) and len(name) <= MAX_NAME_CHARS and not SURROGATE.search(name):
        return name
    return echo_text(name)


def call_id_error(call_id: Any) -> ToolError | None:
    """The refusal for a call whose id cannot pair its result, or ``None`` when the id is fine."""
    problem = call_id_problem(call_id)
    if problem is None:
        return None
    return ToolError("invalid_call", "$.call_id", problem,
                     expected=f"a call id: non-empty text of at most {MAX_CALL_ID_CHARS} characters",
                     received=echo_text(call_id), hint="send the call again with the id the model gave it")


def duplicate_call_id_error(call_id: Any, pointer: str = "$.call_id") -> ToolError:
    """The refusal for every call of a round whose id another call of the same round also sends."""
    shown = echo_value(call_id)
    return ToolError("duplicate_call_id", pointer, f"two calls in this round share the id {shown!r}",
                     expected="one id per call", received=shown,
                     hint="results are paired by id, so calls sharing one cannot be told apart; none of them was run")


def round_refusals(items: Sequence[Any]) -> tuple[list[str], dict[int, ToolError]]:
    """The round's id rule, for every runner: the id each item is answered under, and why items may
    not run. Refused, by position: items over ``MAX_OPEN_CALLS``, non-calls, unusable ids, and
    *every* call whose id another also sends; an unusable id is answered under a placeholder
    (``?3``), so results still pair one to one with the items."""
    items = list(items)
    ids = [getattr(item, "call_id", None) for item in items]
    usable = [call_id_problem(call_id) is None for call_id in ids]
    count: dict[str, int] = {}
    for call_id, ok in zip(ids, usable):
        if ok:
            count[call_id] = count.get(call_id, 0) + 1
    taken, answer = set(count), []
    for position, (item, call_id, ok) in enumerate(zip(items, ids, usable)):
        if ok and (isinstance(item, ToolCall) or count[call_id] == 1):
            answer.append(call_id)
            continue
        placeholder = f"?{position}"
        while placeholder in taken:
            placeholder = "?" + placeholder
        taken.add(placeholder)
        answer.append(placeholder)
    if len(items) > MAX_OPEN_CALLS:
        error = over_cap("$", "the calls in this round", "MAX_OPEN_CALLS", MAX_OPEN_CALLS, "calls",
                         "nothing was run; ask for fewer calls in one round")
        return answer, {position: error for position in range(len(items))}
    refusals: dict[int, ToolError] = {}
    for position, (item, call_id, ok) in enumerate(zip(items, ids, usable)):
        if not isinstance(item, ToolCall):
            refusals[position] = not_a_call_error(item)
        elif not ok:
            refusals[position] = call_id_error(call_id)
        elif count[call_id] > 1:
            refusals[position] = duplicate_call_id_error(call_id)
    return answer, refusals


def shared_ids(vendor_ids: Iterable[Any]) -> set[Any]:
    """The ids (compared by ``id_key``) that more than one call sent; ``None`` (no id yet) is never shared."""
    counts: dict[Any, int] = {}
    for vendor_id in vendor_ids:
        if vendor_id is not None:
            counts[id_key(vendor_id)] = counts.get(id_key(vendor_id), 0) + 1
    return {key for key, n in counts.items() if n > 1}


def refusal_result(call_id: str, error: ToolError) -> ToolResult:
    """The result answering a call the round's id rule refused: rejected, never run."""
    return ToolResult(call_id, Status.REJECTED, failure_class=FailureClass.SCHEMA, reason=error.code,
                      errors=(error,))


def not_a_call_error(obj: Any) -> ToolError:
    """The refusal for something handed to a checker or an executor that is not a ``ToolCall``."""
    kind = type(obj).__name__
    return ToolError("not_a_call", "$", f"a {kind} is not a ToolCall; only a complete, parsed call may run",
                     expected="ToolCall", received=kind,
                     hint="wait for the completion signal and execute the ToolCall it produces", retryable=False)


def not_a_call(obj: Any) -> ToolResult:
    """The result for something handed to an executor that is not a ``ToolCall`` (a ``Preview``, a dict...)."""
    return refusal_result(shown_call_id(getattr(obj, "call_id", None)), not_a_call_error(obj))


def unknown_tool_error(name: Any, declared: Iterable[str]) -> ToolError:
    """The refusal for an undeclared tool name, the nearest declared names as a hint."""
    names = sorted(declared)
    shown = echo_text(name)
    if not isinstance(name, str):
        message, near = f"a tool name must be text, not {shown}", []
    elif len(name) > MAX_NAME_CHARS:
        message, near = f"a tool name of {len(name)} characters is over the {MAX_NAME_CHARS} character cap", []
    else:
        message = f"no tool named {shown!r} is declared"
        near = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    return ToolError("unknown_tool", "$.name", message, expected=names, received=shown,
                     hint=f"did you mean {', '.join(near)}?" if near else "choose one of the declared tools")


@dataclass
class IdMap:
    """Internal call ids (``call_1``, minted on first sight) and the vendor ids they answer to."""

    prefix: str = "call"
    _ids: CallIds = field(init=False, repr=False)
    _inbound: dict[tuple[str, Any], str] = field(default_factory=dict, init=False, repr=False)
    _origin: dict[str, tuple[str, Any]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not SAFE_ID.fullmatch(self.prefix):
            raise ValueError("an id prefix may contain only letters, digits, '_' and '-'")
        self._ids = CallIds(self.prefix)

    def mint(self) -> str:
        """A fresh internal id that answers to no vendor id."""
        call_id = self._ids.mint()
        self._origin[call_id] = ("", None)
        return call_id

    def internal(self, vendor: str, vendor_id: Any = None) -> str:
        """The internal id for ``vendor_id`` (a fresh one when the vendor gave none)."""
        if vendor_id is None or vendor_id == "" or isinstance(vendor_id, bool):
            return self.mint()
        key = (vendor, id_key(vendor_id))
        if key not in self._inbound:
            call_id = self._ids.mint()
            self._inbound[key] = call_id
            self._origin[call_id] = (vendor, vendor_id)
        return self._inbound[key]

    def external(self, call_id: str, vendor: str) -> Any:
        """The id ``vendor`` knows this call by. Raises ``KeyError`` for an id this map never minted."""
        if call_id not in self._origin:
            raise KeyError(f"call id {call_id!r} was not minted by this IdMap")
        origin, vendor_id = self._origin[call_id]
        if origin == vendor:
            return vendor_id
        self._inbound.setdefault((vendor, id_key(call_id)), call_id)  # so a reply under this id maps back
        return call_id

    def knows(self, call_id: str) -> bool:
        return call_id in self._origin

    def rows(self) -> list[dict[str, Any]]:
        """The mapping as plain rows: ``{"call_id", "vendor", "vendor_id"}``, in minting order."""
        return [{"call_id": c, "vendor": v or None, "vendor_id": vid} for c, (v, vid) in self._origin.items()]


def id_key(vendor_id: Any) -> Any:
    """How an id is compared: by type and value, so 1 and "1" are different JSON-RPC ids."""
    return (type(vendor_id).__name__, vendor_id)


def request_problem(call: Any, contract: Any, declared: Iterable[str]) -> ToolError | None:
    """Why ``call`` cannot even be tested (not a call, an unusable id, undeclared), or ``None``."""
    if not isinstance(call, ToolCall):
        return not_a_call_error(call)
    bad_id = call_id_error(call.call_id)
    if bad_id is not None:
        return bad_id
    if contract is None or contract.name != call.name:
        return unknown_tool_error(call.name, declared)
    return None
