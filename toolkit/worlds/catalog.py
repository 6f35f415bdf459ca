"""Chapter 02: contracts used across the chapters, written out in full.

``create_invoice`` is the chapter's example contract. Its preconditions and
postcondition read a *world*: any object with ``order(order_id)`` and
``invoices_with_key(key)``. ``Books`` is the smallest such world.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit.core import Condition, Contract, Retry


@dataclass
class Books:
    """A tiny in-memory billing world: orders, and invoices numbered INV-9, INV-10, ..."""

    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    invoices: list[dict[str, Any]] = field(default_factory=list)
    next_number: int = 9

    def order(self, order_id: str) -> dict[str, Any] | None:
        return self.orders.get(order_id)

    def invoices_with_key(self, key: str) -> list[dict[str, Any]]:
        return [i for i in self.invoices if i["idempotency_key"] == key]

    def issue(self, arguments: dict, _world: Any = None) -> dict[str, Any]:
        """Create one invoice (no idempotency of its own: that is the ledger's job)."""
        invoice = {"invoice_id": f"INV-{self.next_number}", **arguments}
        self.next_number += 1
        self.invoices.append(invoice)
        return {"invoice_id": invoice["invoice_id"],
                "evidence": {"invoice_id": invoice["invoice_id"], "ledger_entry": arguments["idempotency_key"]}}


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
