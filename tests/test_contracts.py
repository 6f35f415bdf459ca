"""Contracts written from a pydantic model or a typed function keep the course's one strict meaning of "valid"."""
import pytest
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


def test_a_contract_is_declared_from_a_typed_function():
    def word_count(path: str, min_length: int = 1) -> dict:
        """Count the words in a note.

        Longer notes take longer."""
        return {}

    contract = tk.Contract.from_function(word_count, permissions=("notes.read",))
    assert contract.name == "word_count" and contract.description == "Count the words in a note."
    assert contract.schema["required"] == ["path"] and contract.schema["additionalProperties"] is False
    assert contract.permissions == ("notes.read",)
    call = tk.request("word_count", {"path": "a.md", "min_length": "2"}, call_id="c1")
    assert [e.code for e in tk.check(call, contract, tk.Caller(scopes=frozenset({"notes.read"}))).errors] == \
        ["wrong_type"]                                                        # strict, as every contract is


def test_a_function_the_schema_cannot_describe_is_refused_when_declared():
    def untyped(path, count: int = 1) -> None: ...

    def keyed(order_id: str) -> None: ...

    with pytest.raises(TypeError, match="type hint"):
        tk.Contract.from_function(untyped)
    with pytest.raises(TypeError, match="not a parameter"):
        tk.Contract.from_function(keyed, idempotency_field="key")
