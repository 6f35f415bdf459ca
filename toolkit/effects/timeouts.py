"""Chapter 05: a timeout is a missing answer, not a failure: the effect may or may not have happened.

After a timeout nothing is retried blindly. A retry with the *original* key (same tool, same
arguments) is an *inquiry* into whether the first call took effect; one without it, or with a new
key, is a *new proposal*: a second action in the world. ``classify_retry`` tells them apart;
``course.worlds.issue_tracker`` plays each way of settling a timeout against a stand-in tracker."""
from __future__ import annotations

from enum import Enum
from typing import Any

from toolkit.kernel import ToolCall
from toolkit._json import carried_key, same_arguments


class RetryKind(str, Enum):
    INQUIRY = "inquiry"            # same tool, arguments and key: did the first call take effect?
    NEW_PROPOSAL = "new_proposal"  # no key, or another key: a second action in the world
    CONFLICT = "conflict"          # the original key with another tool or other arguments: refused

    @property
    def phrase(self) -> str:
        """The kind as a sentence says it: "an inquiry", "a new proposal", "a conflict"."""
        return {"inquiry": "an inquiry", "new_proposal": "a new proposal", "conflict": "a conflict"}[self.value]


def classify_retry(original: ToolCall, retry: ToolCall, contract: Any = None) -> RetryKind:
    """A retry without the original key is a new proposal; with it, an inquiry."""
    first, again = carried_key(original, contract), carried_key(retry, contract)
    if not isinstance(first, str) or again != first:
        return RetryKind.NEW_PROPOSAL
    if retry.name != original.name or not same_arguments(retry.arguments, original.arguments):
        return RetryKind.CONFLICT
    return RetryKind.INQUIRY
