"""Chapter 02: why a refusal goes back to the model: each common error's usual cause, and what the model can do.

A refusal the model never sees teaches it nothing. ``cause_of`` looks an error code up; codes
without a row get the general answer."""
from __future__ import annotations

from dataclasses import dataclass

from toolkit.kernel import ToolError


@dataclass(frozen=True)
class Cause:
    """Why an error usually happens, and what the model can do once it is told."""

    usually: str
    model_can: str


#: The usual cause of each common refusal, by error code, in layer order.
CAUSES: dict[str, Cause] = {
    "missing_required": Cause("the task did not give the model the value",
                              "ask the user for it, or look it up with another tool"),
    "wrong_type": Cause("the model filled a field with the wrong kind of value (a list for a string)",
                        "send the same value in the declared type"),
    "enum": Cause("the model guessed a value that sounds right but is not on the list",
                  "pick one of the allowed values the error lists"),
    "unexpected_property": Cause("the model used field names from another tool or an older version",
                                 "rename the fields to the declared ones"),
    "invalid_json": Cause("the output was cut short or is not JSON at all",
                          "send the whole call again as one JSON object"),
    "unknown_tool": Cause("the model named a tool the host never declared",
                          "choose among the declared tools, or say in words that none fits"),
    "not_authorized": Cause("the call lies outside the caller's role",
                            "stop, or ask someone who holds the scope"),
    "path_refused": Cause("the path leads outside the area the tool may touch",
                          "use a path inside the workspace"),
    "precondition_failed": Cause("the world is not ready, or an unclear description led the model to a tool "
                                 "that cannot do this job",
                                 "wait, fix the state first, or switch tools"),
    "approval_required": Cause("nobody has yet said this call is what they want",
                               "ask the user to confirm this exact call"),
}

#: What a model can do with any other refusal.
GENERAL = Cause("something the layers checked did not hold", "read the error, then change the call or give up")


def cause_of(error: ToolError) -> Cause:
    """The usual cause of ``error`` and the model's next move (the general answer for an unlisted code)."""
    return CAUSES.get(error.code, GENERAL)
