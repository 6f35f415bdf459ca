"""Chapter 06: after a timeout, a retry under another key is a second action (the host's helpers).

    retry_slot(call) = ((the tool, its arguments without the key), the key)  if not safe to repeat
    second_action(call, first, key) = the refusal while ``first``'s outcome is unknown

``toolkit.kernel.Host.execute`` keeps the rule: it remembers the slot of a keyed call that timed
out and refuses the same slot under another key until the original key brings an answer."""
from __future__ import annotations

from typing import Any

from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolError, ToolResult
from toolkit.kernel.contract import Retry
from toolkit._json import carried_key, checked_fingerprint
from toolkit._show import shorten


def retry_slot(call: ToolCall, contract: Any,
               arguments: Any) -> tuple[tuple[str, str] | None, str | None]:
    """(tool and arguments but the key, the key or None) for a call not safe to repeat."""
    if contract is None or contract.retry is Retry.SAFE or not isinstance(arguments, dict):
        return None, None
    key = carried_key(call, contract, arguments)
    key = key if isinstance(key, str) else None
    rest = {name: value for name, value in arguments.items() if key is None or value != key}
    error, digest = checked_fingerprint(rest)
    return ((call.name, digest) if error is None else None), key


def second_action(call: ToolCall, first: tuple[str, str], key: str | None) -> ToolResult:
    """The refusal for a retry under another key while the first call's outcome is unknown."""
    error = ToolError("outcome_unknown", "$.idempotency_key",
                      f"call {shorten(first[1])} timed out, so its outcome is unknown; under "
                      "another key this call would be a second action", expected=shorten(first[0]),
                      received=shorten(str(key)), hint="retry under the original key to ask "
                      "whether it happened, check the record, or ask a person", retryable=False)
    return ToolResult(call.call_id, Status.REJECTED, reason="new_proposal_while_unknown",
                      failure_class=FailureClass.PRECONDITION, errors=(error,))
