"""Chapter 05: the ledger's refusals, worded once: a conflict, a key in progress, a lost claim, an unknown outcome.

Every ledger refuses with these words, so a model reads the same sentence whichever
ledger answered."""
from __future__ import annotations

from toolkit.kernel.call import ToolError

_KEY = "$.idempotency_key"


def ledger_refusal(kind: str, message: str = "", *, what: str = "", before: str = "", now: str = "",
                   dead: str = "", retryable: bool = False, code: str = "") -> tuple[str, ToolError]:
    """``(status, error)`` for ``kind``: ``conflict``, ``in_progress``, ``lost``, ``unknown`` or ``failed``."""
    if kind == "conflict":
        return "conflict", ToolError("idempotency_conflict", _KEY,
                         "key already used for another tool" if what == "tool" else "key already used with other arguments",
                         expected=before, received=now,
                         hint="repeat the original call to ask about it, or use a new key for a new action",
                         retryable=False)
    if kind == "in_progress" and not dead:
        return "in_progress", ToolError("in_progress", _KEY, "an earlier call with this key has not finished",
                         hint="wait and ask again with the same key; a key that stays pending needs reconciliation",
                         retryable=True)
    if kind == "in_progress":
        return "in_progress", ToolError("in_progress", _KEY, "an earlier call with this key has not finished",
                         expected="a claim whose owner is still working", received=dead,
                         hint="nobody is finishing it: settle the key from the downstream record (reconcile), "
                              "never by running the effect again", retryable=False)
    if kind == "lost":
        return "conflict", ToolError("idempotency_conflict", _KEY,
                         "this call lost its claim on the key (its lease ran out and another caller settled or "
                         "retook the key), so its result was not recorded", expected="the claim this call took",
                         received="a claim settled or held by another caller",
                         hint="ask again with the same key for the key's recorded outcome; this call's effect may "
                              "be a second one, so check the downstream record", retryable=False)
    if kind == "unknown":
        return "pending", ToolError("outcome_unknown", _KEY, message,
                         hint="do not re-run: check the downstream record for this key, or ask a human",
                         retryable=False)
    if kind == "failed":
        return "failed", ToolError(code, _KEY, message,
                         hint="nothing was recorded; the same key may be used again" if retryable else "",
                         retryable=retryable)
    raise ValueError(f"no ledger refusal is called {kind!r}")
