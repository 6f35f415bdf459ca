"""Chapters 01 and 02: the host holds when what it is handed lies, not only when a model does.

A model sends JSON; code in the same process can hand ``Host.check`` and ``Host.execute`` a mapping
whose methods raise (``items()`` first of all), at the top or nested. Neither raises: the call is
refused (or, when the schema never looks inside, run with a plain copy), and the log keeps a
safe copy. A field name of 10 million characters is judged secret without being searched, so its
value is hidden and the check costs no more than a short name's.
"""
from __future__ import annotations

import collections.abc
import json
import re

import pytest
from test_host_properties import assert_small_and_safe, make_host

import toolkit as tk
import toolkit._show as show

ORDER = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "inv:431:v1"}
METHODS = ("items", "keys", "values", "get", "__iter__", "__getitem__", "__contains__", "__len__",
           "__eq__")


def boom(*args, **kwargs):
    raise RuntimeError("a method that raises")


class Unreadable(collections.abc.Mapping):
    """Not even a dict: every way to read it raises."""
    __getitem__ = __iter__ = __len__ = items = keys = boom


def lying(method):
    """A dict holding a real order, whose ``method`` raises."""
    return type(f"Raises_{method.strip('_')}", (dict,), {method: boom})(ORDER)


@pytest.mark.parametrize("name", ["create_invoice", "call_partner", "no_such_tool"])
@pytest.mark.parametrize("where", ["top", "nested"])
@pytest.mark.parametrize("method", METHODS + ("a Mapping",))
def test_a_mapping_whose_methods_raise_never_makes_the_host_raise(method, where, name):
    mapping = Unreadable() if method == "a Mapping" else lying(method)
    arguments = mapping if where == "top" else {"q": "status", "more": mapping}
    host = make_host()
    verdict = host.check(tk.ToolCall(name, arguments, "c1"))          # neither raises
    result = host.execute(tk.ToolCall(name, arguments, "c1"))
    assert_small_and_safe(result, set(), host)
    assert len(host.log) == 1 and json.dumps(repr(host.log))
    if not verdict.legal:
        assert result.status is tk.Status.REJECTED and result.errors == verdict.errors


def test_items_that_raise_are_refused_at_the_schema_layer_and_logged_safely():
    host = make_host()
    call = tk.ToolCall("create_invoice", lying("items"), "c1")
    verdict, result = host.check(call), host.execute(call)
    assert not verdict.legal and verdict.errors[0].code == "not_serializable"
    assert result.status is tk.Status.REJECTED and result.errors == verdict.errors
    assert host.log[-1].call.arguments == "<Raises_items that cannot be read>"
    assert not host.world.invoices


def test_a_dict_whose_other_methods_raise_runs_as_a_plain_copy():
    host = make_host()
    result = host.execute(tk.ToolCall("create_invoice", lying("__len__"), "c1"))
    assert result.ok, result.errors                # the schema read it once, through items()
    assert type(host.log[-1].verdict.arguments) is dict


class Spy:
    """SECRET_NAME, recording the length of every name it searches."""

    def __init__(self, pattern: re.Pattern):
        self.pattern, self.lengths = pattern, []

    def search(self, text):
        self.lengths.append(len(text))
        return self.pattern.search(text)


@pytest.mark.parametrize("key", ["k" * 10_000_000, "é" * 10_000_000, "x" * 201])
def test_a_field_name_too_long_to_read_is_secret_unread(monkeypatch, key):
    spy = Spy(show.SECRET_NAME)
    monkeypatch.setattr(show, "SECRET_NAME", spy)
    show._looks_secret.cache_clear()
    host = make_host()
    result = host.execute(tk.ToolCall("call_partner", {"q": "status", key: "hunter2-xyzzy"}, "c1"))
    assert result.status is tk.Status.REJECTED
    assert max(spy.lengths, default=0) <= 200          # the long name was never searched
    assert show.is_secret_name(key)
    assert "hunter2-xyzzy" not in repr(host.log) + json.dumps(result.to_dict())
