"""Chapter 06: reading a failure: what each failed status means and what each failure class points at.

The chapter's failure-type table, as data; ``NEXT_STEP`` is the rule's (``toolkit.kernel.call``)."""
from __future__ import annotations

from toolkit.kernel.call import FailureClass, Status

#: What each failed status means (the chapter's failure-type table, first column).
MEANING: dict[Status, str] = {
    Status.RECOVERABLE_FAILURE: "a transient fault (a lock, a rate limit)",
    Status.REJECTED: "permissions, the path or the state do not allow it",
    Status.TIMEOUT: "the remote state is unknown",
    Status.CANCELLED: "an outside signal stopped it",
    Status.FAILED: "it ran and did not keep its promise",
}

#: Which part of the machine each failure class points at (reading failures through the contract).
POINTS_AT: dict[FailureClass, str] = {
    FailureClass.SCHEMA: "the model formed the wrong expression",
    FailureClass.AUTHORIZATION: "the transition lies outside the caller's role",
    FailureClass.PRECONDITION: "the state was not ready",
    FailureClass.POSTCONDITION: "execution did not establish what the tool promised",
    FailureClass.TIMEOUT: "the agent is unsure of the external state",
    FailureClass.EXECUTION: "the tool or the service hit trouble while running",
}
