"""Chapters 02, 05 and 07: the billing world in memory: orders, and invoices numbered INV-9, INV-10, ...

``Books(orders={...})`` is the plain world of chapters 02 and 05: ``issue``
creates one invoice per call and keeps no idempotency of its own (that is the
ledger's job). The same class, with its options turned on, is the seeded
billing service of chapter 07's invoice log:

* ``honour_keys``: a key already used returns the invoice made for it;
* ``faults``: per (order, attempt), drawn from ``seed``, the service may fail
  transiently (``rate_limited``, nothing created), time out *after* creating
  the invoice (``timeout_after_effect``: the answer is lost, the effect is
  not), or bill a wrong amount (``wrong_amount``, later voided);
* ``open_order`` approves an order unless a seeded draw falls under
  ``p_unapproved``.

The contracts that read this world (``create_invoice``) live in ``catalog``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Mapping

from toolkit.kernel import FailureClass, Status, ToolFailure

#: The faults of chapter 07's billing service, with the chance of each per attempt.
LOG_FAULTS: Mapping[str, float] = {"rate_limited": 0.05, "timeout_after_effect": 0.03, "wrong_amount": 0.02}


@dataclass
class Books:
    """A billing world in memory; every option is off unless asked for (see the module docstring)."""

    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    invoices: list[dict[str, Any]] = field(default_factory=list)
    next_number: int = 9
    honour_keys: bool = False
    faults: Mapping[str, float] = field(default_factory=dict)
    seed: int = 7
    p_unapproved: float = 0.0
    attempts: dict[str, int] = field(default_factory=dict)      # order id -> attempts that reached the service
    voided: set[str] = field(default_factory=set)               # invoice ids taken back

    def order(self, order_id: str) -> dict[str, Any] | None:
        return self.orders.get(order_id)

    def invoice(self, invoice_id: str) -> dict[str, Any] | None:
        return next((i for i in self.invoices if i["invoice_id"] == invoice_id), None)

    def invoices_with_key(self, key: str) -> list[dict[str, Any]]:
        """The live (not voided) invoices recorded under ``key``."""
        return [i for i in self.invoices if i["idempotency_key"] == key and i["invoice_id"] not in self.voided]

    def live_invoices(self, order_id: str) -> list[dict[str, Any]]:
        return [i for i in self.invoices if i["order_id"] == order_id and i["invoice_id"] not in self.voided]

    def issue(self, arguments: dict, _world: Any = None) -> dict[str, Any]:
        """Create one invoice (or, honouring keys, return the one already made for this key)."""
        key = arguments["idempotency_key"]
        known = self.invoices_with_key(key) if self.honour_keys else []
        if known:                                       # the service recognises the key
            return {"invoice_id": known[0]["invoice_id"], "replayed": True}
        fault = self._draw(arguments["order_id"]) if self.faults else "ok"
        if fault == "rate_limited":
            raise ToolFailure(Status.RECOVERABLE_FAILURE, "rate_limited", "try again shortly")
        invoice = {"invoice_id": f"INV-{self.next_number}", **arguments}
        if fault == "wrong_amount":
            invoice["amount"] = arguments["amount"] * 10
        self.next_number += 1
        self.invoices.append(invoice)
        if fault == "timeout_after_effect":
            raise ToolFailure(Status.TIMEOUT, "no_answer", "the service did not answer in time",
                              FailureClass.TIMEOUT)
        return {"invoice_id": invoice["invoice_id"],
                "evidence": {"invoice_id": invoice["invoice_id"], "ledger_entry": key}}

    def void(self, invoice_id: str) -> None:
        """Take an invoice back: it stays in ``invoices`` but no longer counts as live."""
        self.voided.add(invoice_id)

    # ------------------------------------------------------------ seeded options
    def open_order(self, order_id: str, amount: float) -> None:
        """Open an order; it is approved unless a draw seeded by (seed, order) falls under ``p_unapproved``."""
        approved = random.Random(f"{self.seed}:approve:{order_id}").random() >= self.p_unapproved
        self.orders[order_id] = {"approved": approved, "amount": amount}

    def fault(self, order_id: str, attempt: int) -> str:
        """The fault drawn for the ``attempt``-th request about ``order_id`` (``"ok"``: none)."""
        draw = random.Random(f"{self.seed}:fault:{order_id}:{attempt}").random()
        for name, p in self.faults.items():
            if draw < p:
                return name
            draw -= p
        return "ok"

    def _draw(self, order_id: str) -> str:
        attempt = self.attempts[order_id] = self.attempts.get(order_id, 0) + 1
        return self.fault(order_id, attempt)


__all__ = ["Books", "LOG_FAULTS"]
