"""Contracts written from a pydantic model keep the course's one strict meaning of "valid"."""
from pydantic import BaseModel, ConfigDict, Field

import toolkit as tk


class SendEmail(BaseModel):
    """Send one email to an allowed recipient."""

    model_config = ConfigDict(extra="forbid")
    to: str
    subject: str
    priority: int = Field(default=1, ge=1, le=5)


CONTRACT = tk.Contract.from_model(SendEmail, name="send_email", permissions=("mail.send",),
                                  retry=tk.Retry.UNSAFE, reversible=False)
CALLER = tk.Caller(scopes=frozenset({"mail.send"}))


def codes(arguments):
    return [(e.code, e.pointer) for e in tk.check(tk.request("send_email", arguments), CONTRACT, CALLER).errors]


def test_schema_and_description_come_from_the_model():
    assert CONTRACT.parameters == ["to", "subject", "priority"]
    assert CONTRACT.description == "Send one email to an allowed recipient."
    assert CONTRACT.schema["additionalProperties"] is False and CONTRACT.schema["required"] == ["to", "subject"]


def test_json_schema_meaning_not_pydantic_lax_mode():
    assert SendEmail.model_validate({"to": "a", "subject": "b", "priority": "3"}).priority == 3   # pydantic: lax
    assert codes({"to": "a", "subject": "b", "priority": "3"}) == [("wrong_type", "$.priority")]   # toolkit: strict
    assert codes({"to": "a", "subject": "b", "priority": 9}) == [("range", "$.priority")]
    assert sorted(codes({"to": "a", "bcc": "x"})) == [("missing_required", "$.subject"),
                                                      ("unexpected_property", "$.bcc")]
    assert codes({"to": "a", "subject": "b"}) == []
