"""Chapter 07: the scenery of the audited calls: a billing service with scripted faults, two callers, a clock.

``AuditScene`` is what chapter 07 audits, set up in one line so the chapter can
spend its cells on the record and the log:

* ``billing``: a ``ScriptedBooks``, the course's billing world (``Books``) that
  honours idempotency keys and plays a fixed script of faults per order:
  order 431 meets a busy service twice, order 432's answer is lost after its
  invoice was made, order 433 meets a service that never recovers, and order
  500 is not approved;
* ``host(initiator)``: the ``create_invoice`` host for Agent-427 (who may bill)
  or for the intern (who may not);
* ``calls()``: the chapter's four calls, with who initiates each;
* ``clock``: simulated time, so every timestamp in the log is the same on
  every run: each logged event takes a quarter of a second, and a wait the
  retry controller grants passes in full (``clock.sleep``);
* ``folder``: a temporary folder for the SQLite files, removed by ``close()``
  (or by leaving a ``with`` block); ``copy_of(file, name)`` copies a log there,
  as an attacker who can read the file would.

``LOOKUP_CUSTOMER`` is the contract of the canary section: a CRM lookup whose
``api_key`` is secret by its name and whose ``account_number`` the contract
marks secret.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from toolkit.kernel import Caller, Contract, Host, Retry, Tool, ToolCall, request
from course.worlds import Books
from course.worlds import CREATE_INVOICE
from course.worlds import ScratchFolder

#: Per order, the fault each attempt meets ("ok" once the script runs out).
FAULT_SCRIPT: dict[str, tuple[str, ...]] = {
    "order-431": ("rate_limited",) * 2,
    "order-432": ("timeout_after_effect",),
    "order-433": ("rate_limited",) * 9,
}

#: The four audited calls: (initiator, order).
AUDITED_ORDERS: tuple[tuple[str, str], ...] = (
    ("agent-427", "order-431"), ("agent-427", "order-432"), ("intern", "order-500"), ("agent-427", "order-433"))

LOOKUP_CUSTOMER = Contract(
    "lookup_customer", "Look a customer up in the partner CRM.",
    {"type": "object",
     "properties": {"customer": {"type": "string"}, "api_key": {"type": "string"},
                    "account_number": {"type": "string"}},
     "required": ["customer", "api_key"], "additionalProperties": False},
    retry=Retry.SAFE, secret_fields=("account_number",))


@dataclass
class ScriptedBooks(Books):
    """``Books`` that honour keys and play ``script`` (order -> the fault of each attempt) instead of dice.

    The script's faults are ``Books``' own (``rate_limited``, ``timeout_after_effect``, ``wrong_amount``);
    an attempt past the end of its order's script meets none.
    """

    honour_keys: bool = True
    script: dict[str, Sequence[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.faults:     # naming the script's faults turns fault drawing on; ``fault`` alone decides
            self.faults = dict.fromkeys((name for plays in self.script.values() for name in plays), 0.0)

    def fault(self, order_id: str, attempt: int) -> str:
        plays = self.script.get(order_id, ())
        return plays[attempt - 1] if attempt <= len(plays) else "ok"


class SimulatedClock:
    """Deterministic time: each reading (one logged event) takes 0.25 s; ``sleep`` lets a granted wait pass."""

    def __init__(self, step: float = 0.25):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now - self.step

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def invoice_arguments(order_id: str) -> dict[str, Any]:
    """The chapter's invoice for ``order_id``: 120 EUR under the key ``invoice:<order>:v1``."""
    return {"order_id": order_id, "amount": 120.0, "currency": "EUR", "idempotency_key": f"invoice:{order_id}:v1"}


class AuditScene(ScratchFolder):
    """The billing world, its two callers, a simulated clock and a temporary folder (see the module docstring)."""

    def __init__(self) -> None:
        self.billing = ScriptedBooks(orders={"order-431": {"approved": True}, "order-432": {"approved": True},
                                             "order-433": {"approved": True}, "order-500": {"approved": False}},
                                     script={k: list(v) for k, v in FAULT_SCRIPT.items()})
        self.clock = SimulatedClock()
        super().__init__("chapter07-")
        self.folder = self.base
        tool = Tool(CREATE_INVOICE, self.billing.issue)
        self._hosts = {"agent-427": Host.of([tool], Caller("agent-427", frozenset({"billing.write"})), self.billing),
                       "intern": Host.of([tool], Caller("intern"), self.billing)}

    def host(self, initiator: str) -> Host:
        return self._hosts[initiator]

    def calls(self) -> list[tuple[str, ToolCall]]:
        """The four calls, ``call_1`` ... ``call_4``, each with the caller who initiates it."""
        return [(who, request("create_invoice", invoice_arguments(order), call_id=f"call_{n}"))
                for n, (who, order) in enumerate(AUDITED_ORDERS, 1)]

    def invoices(self) -> dict[str, str]:
        """Live invoices by order: ``{"order-431": "INV-9", ...}``."""
        return {i["order_id"]: i["invoice_id"] for i in self.billing.invoices
                if i["invoice_id"] not in self.billing.voided}

    def copy_of(self, log_file: Path, name: str) -> Path:
        """A copy of an SQLite file in the scene's folder, as whoever can read the file would take it.

        SQLite's backup API copies what the database holds, rows still waiting in its write-ahead log included
        (a plain file copy of a database in use can miss those).
        """
        target = self.folder / name
        target.unlink(missing_ok=True)
        source, copy = sqlite3.connect(log_file), sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
        return target



__all__ = ["AUDITED_ORDERS", "AuditScene", "FAULT_SCRIPT", "LOOKUP_CUSTOMER", "ScriptedBooks", "SimulatedClock",
           "invoice_arguments"]
