"""Chapter 02: contracts used across the chapters, written out in full.

``create_invoice`` is the chapter's example contract. Its preconditions and
postcondition read a *world*: any object with ``order(order_id)`` and
``invoices_with_key(key)``; ``course.worlds.books.Books`` is one.
``invoice_contract()`` is the same contract with chapter 07's extra promise
(the invoice bills the amount asked for), which also reads ``invoice(id)``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from toolkit.kernel import Condition, Contract, Retry


def _order_approved(arguments: dict, world: Any) -> bool:
    order = world.order(arguments["order_id"]) if world is not None else None
    return bool(order and order.get("approved"))


def _one_invoice_per_key(arguments: dict, output: Any, world: Any) -> bool:
    return len(world.invoices_with_key(arguments["idempotency_key"])) == 1


CREATE_INVOICE = Contract(
    name="create_invoice",
    description="Create one invoice for an approved order. Retry only with the same idempotency_key.",
    schema={
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "pattern": r"^order-\d+$"},
            "amount": {"type": "number"},
            "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
            "idempotency_key": {"type": "string", "minLength": 1},
        },
        "required": ["order_id", "amount", "currency", "idempotency_key"],
        "additionalProperties": False,
    },
    permissions=("billing.write",),
    preconditions=(
        Condition("order_approved", "order is approved", _order_approved, field="order_id"),
        Condition("amount_positive", "amount > 0", lambda a, w: a["amount"] > 0, field="amount"),
    ),
    postconditions=(
        Condition("one_invoice_per_key", "exactly one invoice is durably associated with idempotency_key",
                  _one_invoice_per_key),
    ),
    cost=2.0,
    risk=1.0,
    reversible=False,
    retry=Retry.SAFE_WITH_KEY,
    idempotency_field="idempotency_key",
    risk_category="external financial record",
    evidence=("invoice id", "ledger entry"),
    writes=("order:{order_id}",),
)


def _amount_matches(arguments: dict, output: Any, world: Any) -> bool:
    invoice = world.invoice(output.get("invoice_id")) if isinstance(output, dict) else None
    return invoice is not None and invoice["amount"] == arguments["amount"]


def invoice_contract() -> Contract:
    """``create_invoice`` with one more promise: the invoice bills the amount asked for."""
    return replace(CREATE_INVOICE, postconditions=CREATE_INVOICE.postconditions + (
        Condition("amount_matches", "the invoice bills the requested amount", _amount_matches),))


__all__ = ["CREATE_INVOICE", "invoice_contract"]
