"""Chapter 02: a contract written out as a short card, in the chapter's layout.

    tool name(parameters) / requires / ensures / retry / risk / evidence
"""
from __future__ import annotations

from typing import Any


def contract_card(contract: Any) -> str:
    """The card for ``contract``: what it requires, ensures, how a retry behaves, its risk and its evidence."""
    requires = [f"caller has {p}" for p in contract.permissions]
    requires += [c.description for c in contract.guards + contract.preconditions]
    if contract.needs_approval:
        requires.append("a person approved this call")
    retry = contract.retry.value
    if retry == "safe with same key":
        retry = f"safe with same {contract.idempotency_field or 'idempotency key'}"
    lines = [f"tool {contract.name}({', '.join(contract.parameters)})",
             f"  requires: {'; '.join(requires) or 'nothing'}",
             f"  ensures: {'; '.join(c.description for c in contract.postconditions) or 'nothing'}",
             f"  retry: {retry}",
             f"  risk: {contract.risk_category}",
             f"  evidence: {' and '.join(contract.evidence) or 'none'}"]
    return "\n".join(lines)
