"""Chapter 05: the chapter's setting, so that its cells show the ledger at work and not the stage around it.

* ``new_books()``: order-431 (and order-432) approved, no invoice yet; the
  first invoice will be ``INV-9``;
* ``deliver(times, ledger)``: the same ``create_invoice`` request delivered
  ``times`` times, straight to billing or through a ledger; how many invoices
  exist afterwards;
* ``LostAnswer``: a billing service that creates the invoice and then loses
  its answer (a timeout: the outcome is unknown), with the record one can ask
  about a key afterwards;
* ``retry_variants()``: the same call sent again with the same key, a fresh
  key, no key, and the same key with another amount.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit.kernel import FailureClass, Status, ToolCall, ToolFailure, request
from toolkit.kernel import Ledger
from course.worlds import Books
from course.worlds import ORDER

#: The second order of the chapter, with its own key (the lost answer bills it).
ORDER_432: dict[str, Any] = {**ORDER, "order_id": "order-432", "idempotency_key": "invoice:order-432:v1"}


def new_books() -> Books:
    """A fresh billing world: order-431 and order-432 approved, no invoices yet (the first will be INV-9)."""
    return Books(orders={"order-431": {"approved": True}, "order-432": {"approved": True}})


def deliver(times: int, ledger: Ledger | None = None) -> int:
    """Deliver order-431's request ``times`` times, straight to billing or through ``ledger``; count invoices."""
    books = new_books()
    for _ in range(times):
        if ledger is None:
            books.issue(ORDER)
        else:
            ledger.invoke(ORDER["idempotency_key"], books.issue, ORDER)
    return len(books.invoices)


@dataclass
class LostAnswer:
    """Billing that makes the invoice and then loses the answer on the way back; ``record`` asks it afterwards."""

    books: Books = field(default_factory=new_books)

    def send(self, arguments: dict) -> dict:
        """Create the invoice, then time out: the caller never hears of it."""
        self.books.issue(arguments)
        raise ToolFailure(Status.TIMEOUT, "no_answer", "no answer within 5 s", FailureClass.TIMEOUT)

    def record(self, arguments: dict) -> dict | None:
        """What billing holds under the arguments' key: ``{"invoice_id": ...}``, or None."""
        found = self.books.invoices_with_key(arguments["idempotency_key"])
        return {"invoice_id": found[0]["invoice_id"]} if found else None

    @property
    def invoice_ids(self) -> list[str]:
        return [invoice["invoice_id"] for invoice in self.books.invoices]


def retry_variants(call_id: str = "call_2") -> dict[str, ToolCall]:
    """Order-431's call sent again: with the same key, a fresh key, no key, and the same key for another amount."""
    no_key = {name: value for name, value in ORDER.items() if name != "idempotency_key"}
    return {
        "same call, same key": request("create_invoice", ORDER, call_id=call_id),
        "same call, a fresh key": request("create_invoice", {**ORDER, "idempotency_key": "invoice:order-431:v2"},
                                          call_id=call_id),
        "same call, no key": request("create_invoice", no_key, call_id=call_id),
        "same key, other amount": request("create_invoice", {**ORDER, "amount": 99.0}, call_id=call_id),
    }


__all__ = ["LostAnswer", "ORDER_432", "deliver", "new_books", "retry_variants"]
