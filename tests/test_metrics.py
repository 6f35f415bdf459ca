"""What to measure: every rate read back from a real log, and the chapter's 6/200 = 3 %."""
import pytest

from course.worlds import CallRow, Rate, measure, rows_from_attempts, rows_from_audit
from course.worlds import MALFORMED, drift, invoice_contract, log_books, simulate_log


@pytest.fixture(scope="module")
def guarded():
    return simulate_log()


@pytest.fixture(scope="module")
def blind():
    return simulate_log(guarded=False)


# ------------------------------------------------------------------ the chapter's example
def test_200_calls_with_6_schema_violations_is_3_percent(guarded):
    report = guarded.report()
    assert report.calls == 200
    assert (report.schema_violations.hits, report.schema_violations.total) == (6, 200)
    assert report.schema_violations.value == 0.03
    assert str(report.schema_violations) == "6/200 = 3.0%"


def test_the_violations_are_read_from_the_log_not_assumed(guarded):
    """The calls the audit log shows rejected for their schema are exactly the malformed proposals."""
    rejected = {e["call_id"] for e in guarded.log.events()
                if e["target"] == "rejected" and "schema" in e["failure"].split(",")}
    assert rejected == {f"call_{i + 1}" for i in guarded.malformed_at}
    kinds = {name for name, _ in MALFORMED}
    assert len(kinds) == 5                                  # five different habits, not one trick repeated


@pytest.mark.parametrize("count", [0, 1, 13])
def test_schema_rate_follows_what_the_log_holds(count):
    report = simulate_log(calls=60, schema_errors=count, seed=2).report()
    assert report.schema_violations == Rate(count, 60)


def test_every_measure_agrees_with_the_world(guarded):
    report, world = guarded.report(), guarded.world
    rows = rows_from_audit(guarded.log)
    # precondition violations: the unapproved orders that were asked for with a well-formed call
    unapproved = {o for o, v in world.orders.items() if not v["approved"]}
    asked = {r.call_id for r in rows if "precondition" in r.failures}
    assert report.precondition_violations.hits == len(asked) == len(
        {f"call_{o.split('-')[1]}" for o in unapproved} - {f"call_{i + 1}" for i in guarded.malformed_at})
    # postcondition success: succeeded over calls that ran
    assert report.postcondition_success.total == sum(r.ran for r in rows) == 200 - 6 - len(asked)
    assert report.postcondition_success.hits == sum(r.final == "succeeded" for r in rows)
    # rollbacks: one voided invoice per rollback
    assert report.rollbacks.hits == len(world.voided) >= 1
    # duplicates: with the controller, no order has two live invoices
    assert report.duplicate_side_effects.hits == 0
    assert all(len(world.live_invoices(o)) <= 1 for o in world.orders)
    assert report.retries >= 1 and guarded.log.verify().ok


def test_blind_retries_make_duplicates_the_controller_prevents(guarded, blind):
    g, b = guarded.report(), blind.report()
    doubled = [o for o in blind.world.orders if len(blind.world.live_invoices(o)) > 1]
    assert b.duplicate_side_effects.hits == len(doubled) > 0 == g.duplicate_side_effects.hits
    assert b.utility_per_call < g.utility_per_call
    assert b.schema_violations == g.schema_violations       # the same model wrote the same calls


def test_simulation_is_deterministic():
    assert simulate_log(calls=50, seed=3).report() == simulate_log(calls=50, seed=3).report()
    assert simulate_log(calls=50, seed=3).log.trail() == simulate_log(calls=50, seed=3).log.trail()


def test_report_lines_and_dict_are_plain_data(guarded):
    report = guarded.report()
    assert report.as_dict()["schema_violations"] == 0.03 and report.as_dict()["calls"] == 200
    assert report.lines()[1].split()[-3:] == ["6/200", "=", "3.0%"]


# ------------------------------------------------------------------ measure on hand-made rows
def test_measure_by_hand():
    rows = [
        CallRow("c1", "rejected", task="t1", failures=("schema",)),
        CallRow("c2", "succeeded", task="t1", ran=True, effects=("order-1",), utility=1.0),
        CallRow("c3", "failed", task="t2", failures=("postcondition",), ran=True, effects=("order-2",),
                rolled_back=True),
        CallRow("c4", "succeeded", task="t2", ran=True, effects=("order-2",), retries=2, utility=1.0),
        CallRow("c5", "rejected", task="t3", failures=("authorization", "precondition")),
    ]
    r = measure(rows)
    assert r.schema_violations == Rate(1, 5) and r.precondition_violations == Rate(1, 5)
    assert r.postcondition_success == Rate(2, 3) and r.rollbacks == Rate(1, 3)
    assert r.duplicate_side_effects == Rate(1, 2)              # order-2 was touched twice
    assert r.progress_after_failure == Rate(2, 3)              # c1 and c3 were followed by a success; c5 not
    assert r.retries == 2 and r.utility_per_call == pytest.approx(0.4)


def test_empty_log_gives_zero_rates_not_errors():
    r = measure([])
    assert r.calls == 0 and r.schema_violations.value == 0.0 and r.utility_per_call == 0.0


# ------------------------------------------------------------------ drift
def test_schema_violation_rate_climbs_as_habits_drift():
    rows = drift()
    rates = [r["rate"] for r in rows]
    assert rates[-1] > 3 * rates[0]
    n = len(rates)
    mean_x, mean_y = (n - 1) / 2, sum(rates) / n
    slope = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(rates)) / sum((i - mean_x) ** 2 for i in range(n))
    assert 0.5 * 0.015 < slope < 2 * 0.015                    # it tracks the habit's growth per window
    assert all(r["rate"] == r["schema_violations"] / r["calls"] for r in rows)


def test_no_drift_no_climb():
    rows = drift(windows=4, growth=0.0, start=0.0)
    assert [r["schema_violations"] for r in rows] == [0, 0, 0, 0]


def test_rows_from_attempts_reads_a_host_log():
    import toolkit as tk

    world = log_books(p_unapproved=0.0, faults={})
    world.open_order("order-1", 10.0)
    host = tk.Host.of([tk.Tool(invoice_contract(), world.issue)],
                      tk.Caller("agent-427", frozenset({"billing.write"})), world)
    good = {"order_id": "order-1", "amount": 10.0, "currency": "EUR", "idempotency_key": "k1"}
    host.execute(tk.request("create_invoice", good, call_id="a"))
    host.execute(tk.request("create_invoice", {**good, "amount": "10"}, call_id="b"))
    rows = rows_from_attempts(host.log)
    assert [(r.call_id, r.final, r.failures, r.ran) for r in rows] == [
        ("a", "succeeded", (), True), ("b", "rejected", ("schema",), False)]
