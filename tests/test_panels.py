"""The chapter widgets, driven from plain Python: set a value, read what the panel shows."""
import toolkit as tk
from toolkit.worlds import CREATE_INVOICE, Books
from toolkit.present.legality_panel import LegalityPanel
from toolkit.present.scoring_panel import ScoringPanel

GOOD = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", "idempotency_key": "k"}


def scenario(amount_is_number, holds_scope, approved):
    world = Books(orders={"order-431": {"approved": approved}})
    caller = tk.Caller("a", frozenset({"billing.write"} if holds_scope else set()))
    args = {**GOOD, "amount": 120.0 if amount_is_number else "120"}
    return tk.check(tk.request("create_invoice", args, call_id="c"), CREATE_INVOICE, caller, world)


def test_legality_panel_follows_each_box():
    panel = LegalityPanel(scenario, ("schema", "auth", "pre"))
    assert "legal = 1 x 1 x 1 = 1" in panel.text() and "allowed" in panel.text()
    shown = panel.set(schema=False)
    assert "legal = 0" in shown and "blocked by: schema_ok" in shown and "$.amount" in shown
    shown = panel.set(schema=True, auth=False)
    assert "blocked by: auth_ok" in shown and "caller lacks billing.write" in shown
    shown = panel.set(auth=True, pre=False)
    assert "blocked by: Pre" in shown and "order_approved not met (requires: order is approved)" in shown
    panel.boxes[2].value = True          # a click on the widget itself, not through .set
    assert "legal = 1 x 1 x 1 = 1" in panel.text()
    assert "legal = 1" in panel.view.value   # the HTML the browser renders says the same


def test_scoring_panel_flips_with_the_price_of_risk():
    read, edit = tk.Option("read", 8, 1, 1), tk.Option("edit", 11, 2, 6)
    panel = ScoringPanel([read, edit])
    assert panel.text().endswith("chosen: read")
    assert panel.set(lam_r=0.25).endswith("chosen: edit")
    panel.lam_r.value = 1.0
    assert panel.text().endswith("chosen: read") and "chosen: read" in panel.view.value
