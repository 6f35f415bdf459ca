"""Chapter 7, records, audit and measuring: the state machine, the replayed SQLite trail, the canary secret,
the auditor's question, the HTTP 202 trap and its repair, and the measures read back from a log."""
import shutil
import sqlite3
from pathlib import Path

import matplotlib
import nbformat
import pytest

import toolkit as tk
from toolkit.effects import GENESIS, Anchor, AuditLog, chain_digest, run_audited, verify_audit_file
from toolkit.effects import RetryPolicy, RetryController
from toolkit.worlds import CREATE_INVOICE
from toolkit.worlds.deploy import HEALTHY, compare_adapters, run_deploy_episode, rushed_versions, table
from toolkit.effects import Rate
from toolkit.worlds import MALFORMED, drift, simulate_log
from toolkit.present.retry_plots import drift_plot, gaming_plot
from toolkit.effects import FINAL, TRANSITIONS, IllegalTransition, RecordState, open_record

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "07_records_audit_measuring.ipynb"
CANARY, ACCOUNT = "sk-CANARY-7f3a91", "ACCT-CANARY-55120"


# ------------------------------------------------------------------ the state machine
def invoice(order_id):
    return {"order_id": order_id, "amount": 120.0, "currency": "EUR", "idempotency_key": f"invoice:{order_id}:v1"}


def test_record_follows_the_table_and_refuses_everything_else():
    record = open_record(tk.request("create_invoice", invoice("order-431"), call_id="call_1"), "agent-427")
    for target in ("approved", "running", "succeeded"):
        assert record.can(target)
        record.move(target)
    assert record.path() == ["requested", "approved", "running", "succeeded"] and record.final
    with pytest.raises(IllegalTransition, match="cannot go from succeeded to running .*succeeded is final"):
        record.move("running")
    fresh = open_record(tk.request("create_invoice", invoice("order-431"), call_id="call_2"), "agent-427")
    with pytest.raises(IllegalTransition, match="cannot go from requested to succeeded"):
        fresh.move("succeeded")
    assert len(record.transitions) == 4 and fresh.state is RecordState.REQUESTED
    assert FINAL == {s for s, nxt in TRANSITIONS.items() if not nxt}


# ------------------------------------------------------------------ the chapter's audited calls
class Billing:
    def __init__(self, faults):
        self.faults = {o: list(s) for o, s in faults.items()}
        self.orders = {"order-431": {"approved": True}, "order-432": {"approved": True},
                       "order-433": {"approved": True}, "order-500": {"approved": False}}
        self.invoices = {}

    def order(self, order_id):
        return self.orders.get(order_id)

    def invoices_with_key(self, key):
        return [self.invoices[key]] if key in self.invoices else []

    def create(self, args, world=None):
        script = self.faults.get(args["order_id"], [])
        fault = script.pop(0) if script else "ok"
        if fault == "rate_limited":
            raise tk.ToolFailure(tk.Status.RECOVERABLE_FAILURE, "rate_limited", "the billing API is busy")
        invoice_id = self.invoices.setdefault(args["idempotency_key"], f"INV-{len(self.invoices) + 9}")
        if fault == "no_answer":
            raise tk.ToolFailure(tk.Status.TIMEOUT, "no_answer", "no answer", tk.FailureClass.TIMEOUT)
        return {"invoice_id": invoice_id}


class SimulatedClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 0.25
        return self.now - 0.25

    def sleep(self, seconds):
        self.now += seconds


def careless_lookup_tool():
    lookup = tk.Contract(
        "lookup_customer", "Look a customer up.",
        {"type": "object", "properties": {"customer": {"type": "string"}, "api_key": {"type": "string"},
                                          "account_number": {"type": "string"}},
         "required": ["customer", "api_key"], "additionalProperties": False},
        retry=tk.Retry.SAFE, secret_fields=("account_number",))
    failures = iter(["busy"])

    def run(args, world):
        if next(failures, None):
            raise tk.ToolFailure(tk.Status.RECOVERABLE_FAILURE, "partner_busy",
                                 f"partner refused key {args['api_key']} for {args['account_number']}")
        return {"customer": args["customer"]}
    return tk.Tool(lookup, run)


@pytest.fixture()
def chapter_log(tmp_path):
    """The chapter's five calls, audited into a file; returns (db path, billing world, crm host)."""
    billing = Billing({"order-431": ["rate_limited"] * 2, "order-432": ["no_answer"],
                       "order-433": ["rate_limited"] * 9})
    agent = tk.Host.of([tk.Tool(CREATE_INVOICE, billing.create)],
                       tk.Caller("agent-427", frozenset({"billing.write"})), billing)
    intern = tk.Host.of([tk.Tool(CREATE_INVOICE, billing.create)], tk.Caller("intern"), billing)
    crm = tk.Host.of([careless_lookup_tool()])
    clock, controller = SimulatedClock(), RetryController(RetryPolicy(d0=1, beta=2, n_max=4))
    db = tmp_path / "audit.sqlite"
    with AuditLog(db, clock=clock) as log:
        for host, who, call in [
            (agent, "agent-427", tk.request("create_invoice", invoice("order-431"), call_id="call_1")),
            (agent, "agent-427", tk.request("create_invoice", invoice("order-432"), call_id="call_2")),
            (intern, "intern", tk.request("create_invoice", invoice("order-500"), call_id="call_3")),
            (agent, "agent-427", tk.request("create_invoice", invoice("order-433"), call_id="call_4")),
            (crm, "agent-427", tk.request("lookup_customer", {"customer": "ACME", "api_key": CANARY,
                                                              "account_number": ACCOUNT}, call_id="call_5")),
        ]:
            run_audited(host, call, log, who, controller, sleep=clock.sleep)
    return db, billing, crm


def test_reopened_log_answers_who_when_how_many_retries_where_it_stopped(chapter_log):
    db, billing, _ = chapter_log
    with AuditLog(db) as audit:                      # a fresh connection: the answer is in the file
        stories = {c: audit.story(c) for c in audit.calls()}
        assert list(stories) == ["call_1", "call_2", "call_3", "call_4", "call_5"]
        got = {c: (s.initiator, s.started_at, s.retries, s.stopped_at) for c, s in stories.items()}
        assert got["call_1"] == ("agent-427", 0, 2, "succeeded")
        assert got["call_2"][2:] == (1, "succeeded") and "timeout" in stories["call_2"].path
        assert got["call_3"][0] == "intern" and got["call_3"][2:] == (0, "rejected")
        assert audit.events("call_3")[-1]["failure"] == "authorization,precondition"
        assert got["call_4"][2:] == (4, "awaiting_human")
        waits = [float(e["note"].split("after ")[1].rstrip("s")) for e in audit.events("call_4")
                 if e["note"].startswith("retry ")]
        assert waits == [1, 2, 4, 8]                 # the controller's waits, written in the trail
        assert stories["call_4"].ended_at - stories["call_4"].started_at == sum(waits) + 0.25 * 12
        assert audit.verify().ok
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            audit.conn.execute("UPDATE audit_events SET initiator = 'someone else' WHERE call_id = 'call_3'")
    assert billing.invoices == {"invoice:order-431:v1": "INV-9", "invoice:order-432:v1": "INV-10"}


def tamper(db: Path, copy: Path) -> list[str]:
    """The notebook's edit behind the log's back: on a copy, drop the triggers and rewrite who initiated call_3."""
    shutil.copyfile(db, copy)
    raw = sqlite3.connect(copy)
    triggers = [n for (n,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")]
    for name in triggers:
        raw.execute(f"DROP TRIGGER {name}")
    raw.execute("UPDATE audit_events SET initiator = 'agent-427' WHERE call_id = 'call_3'")
    raw.commit()
    raw.close()
    return triggers


def test_an_edit_behind_the_triggers_breaks_the_chain_of_the_copy_only(chapter_log, tmp_path):
    db, _, _ = chapter_log
    copy = tmp_path / "audit-copy.sqlite"
    assert tamper(db, copy) == ["audit_events_in_order", "audit_events_no_delete", "audit_events_no_update"]
    with AuditLog(db) as original, AuditLog(copy) as edited:
        first_edited = original.events("call_3")[0]["seq"]
        assert edited.story("call_3").initiator == "agent-427"         # the edit went through...
        assert original.story("call_3").initiator == "intern"
        check = edited.verify()                                       # ...and the chain says where
        assert (check.ok, check.broken_at, check.rows) == (False, first_edited, first_edited)
        assert original.verify().ok


def rewrite_and_recompute(db: Path, copy: Path) -> None:
    """The notebook's stronger attacker: call_3's initiator rewritten, every digest recomputed, triggers back."""
    shutil.copyfile(db, copy)
    raw = sqlite3.connect(copy, isolation_level=None)
    triggers = raw.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    for name, _ in triggers:
        raw.execute(f"DROP TRIGGER {name}")
    columns = [c[1] for c in raw.execute("PRAGMA table_info(audit_events)")]
    prev = GENESIS
    for values in raw.execute("SELECT * FROM audit_events ORDER BY seq").fetchall():
        row = dict(zip(columns, values))
        row["initiator"] = "agent-427" if row["call_id"] == "call_3" else row["initiator"]
        row["prev"], row["digest"] = prev, chain_digest({**row, "prev": prev})
        prev = row["digest"]
        raw.execute("UPDATE audit_events SET initiator = ?, prev = ?, digest = ? WHERE seq = ?",
                    (row["initiator"], row["prev"], row["digest"], row["seq"]))
    for _, sql in triggers:
        raw.execute(sql)
    raw.close()


def test_a_rewrite_that_recomputes_every_digest_is_caught_by_the_anchor_only(chapter_log, tmp_path):
    db = chapter_log[0]
    with AuditLog(db) as audit:
        anchor = audit.anchor                                      # the host's copy, taken as it wrote
    copy = tmp_path / "rewritten.sqlite"
    rewrite_and_recompute(db, copy)
    with AuditLog(copy) as edited:
        assert edited.story("call_3").initiator == "agent-427" and edited.verify().ok   # a perfect chain ...
    check = verify_audit_file(copy, anchor)                        # ... that ends in the wrong place
    assert not check.ok and "anchor" in check.reason
    assert verify_audit_file(db, anchor).ok


def test_canary_reaches_no_trail_line_no_feedback_and_no_byte(chapter_log, capsys):
    db, _, crm = chapter_log
    with AuditLog(db) as audit:
        lines = audit.replay()
        stories = " ".join(audit.story(c).line() for c in audit.calls())
    printed = capsys.readouterr().out + stories + " ".join(str(a.result.to_dict()) for a in crm.log)
    raw = b"".join(p.read_bytes() for p in db.parent.iterdir())
    for secret in (CANARY, ACCOUNT):
        assert secret not in printed and secret.encode() not in raw
    first = next(line for line in lines if "call_5 lookup_customer requested" in line)
    assert '"customer": "ACME"' in first and first.count("[redacted]") == 2   # useful kept, secrets masked


# ------------------------------------------------------------------ the HTTP 202 trap
def test_the_metric_rises_while_settled_health_fails_and_the_repair_tells_the_truth():
    versions = rushed_versions(12)
    gamed, repaired = run_deploy_episode(False, versions), run_deploy_episode(True, versions)
    assert [r["successful_calls"] for r in gamed] == list(range(1, 13))
    truth = gamed[-1]["settled_healthy"]
    assert truth < 12 / 2 and gamed[-1]["live"] != HEALTHY
    assert all(r["successful_calls"] == r["settled_healthy"] for r in repaired)
    assert [r["settled_healthy"] for r in repaired] == [r["settled_healthy"] for r in gamed]
    summary = compare_adapters(12)
    assert summary["accepted_is_success"]["successful_calls"] == 12
    assert summary["settled_postcondition"]["successful_calls"] == truth
    assert summary["settled_postcondition"]["timeouts"] >= 1           # never settled: an explicit unknown


# ------------------------------------------------------------------ measures from a log
@pytest.fixture(scope="module")
def simulation():
    return simulate_log(calls=200, schema_errors=6, seed=7)


def test_6_schema_violations_in_200_calls_is_3_percent(simulation):
    report = simulation.report()
    assert report.schema_violations == Rate(6, 200) and report.schema_violations.value == 0.03
    assert str(report.schema_violations) == "6/200 = 3.0%"
    rejected = {e["call_id"] for e in simulation.log.events()
                if e["target"] == "rejected" and "schema" in e["failure"].split(",")}
    assert rejected == {f"call_{i + 1}" for i in simulation.malformed_at}
    assert len({MALFORMED[k % len(MALFORMED)][0] for k in range(6)}) == len(MALFORMED)


def test_utility_counts_orders_billed_exactly_once_per_call_requested(simulation):
    report = simulation.report()
    world = simulation.world
    orders = {i["order_id"] for i in world.invoices}
    live = [len(world.live_invoices(o)) for o in orders]
    assert max(live) == 1                                             # the controller never bills twice
    assert report.utility == sum(n == 1 for n in live) and report.calls == 200
    assert report.utility_per_call == report.utility / 200
    blind = simulate_log(calls=200, schema_errors=6, seed=7, guarded=False)
    blind_live = [len(blind.world.live_invoices(o)) for o in {i["order_id"] for i in blind.world.invoices}]
    assert max(blind_live) == 2                                        # some orders billed twice...
    assert blind.report().utility == sum(n == 1 for n in blind_live)   # ...and those earn nothing
    assert report.utility - blind.report().utility == blind.report().duplicate_side_effects.hits


def test_blind_retries_show_up_as_duplicates(simulation):
    guarded, blind = simulation.report(), simulate_log(calls=200, schema_errors=6, seed=7, guarded=False).report()
    assert guarded.duplicate_side_effects.hits == 0 < blind.duplicate_side_effects.hits
    assert blind.schema_violations == guarded.schema_violations
    assert blind.utility_per_call < guarded.utility_per_call


def test_drift_climbs_past_3_percent():
    rows = drift(windows=8, calls_per_window=200, seed=5)
    rates = [r["rate"] for r in rows]
    assert rates[0] < 0.03 < rates[-1] and rates[-1] > 3 * rates[0]
    assert all(r["rate"] == r["schema_violations"] / r["calls"] for r in rows)


def test_plots_draw_their_series():
    import matplotlib.pyplot as plt

    rows = [{"window": w, "calls": 10, "schema_violations": w, "rate": w / 10, "habit": w / 12} for w in (1, 2, 3)]
    fig = drift_plot(rows, reference=0.03)
    ax = fig.axes[0]
    assert [list(line.get_ydata()) for line in ax.lines[:2]] == [[10, 20, 30], [100 * r["habit"] for r in rows]]
    assert list(ax.lines[2].get_ydata()) == [3, 3]
    plt.close(fig)
    gamed, repaired = run_deploy_episode(False, rushed_versions(4)), run_deploy_episode(True, rushed_versions(4))
    fig = gaming_plot(gamed, repaired)
    assert [list(line.get_ydata()) for line in fig.axes[0].lines] == [
        [r["successful_calls"] for r in gamed], [r["settled_healthy"] for r in gamed],
        [r["successful_calls"] for r in repaired]]
    plt.close(fig)


# ------------------------------------------------------------------ the stored notebook shows the toolkit's numbers
@pytest.mark.skipif(not NOTEBOOK.exists(), reason="chapter 7 notebook not written yet")
def test_notebook_prints_what_the_toolkit_computes(simulation, chapter_log):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "\n".join(simulation.report().lines()) in text
    assert "rate = 6/200 = 3%" in text
    assert "\n".join(table(run_deploy_episode(False, rushed_versions(12)))) in text
    assert "\n".join(table(run_deploy_episode(True, rushed_versions(12)))) in text
    assert "canary in the printed trail or the model's feedback: False" in text
    assert "canary in any byte of the database folder: False" in text
    assert CANARY not in text and ACCOUNT not in text
    assert "IllegalTransition: call_1: cannot go from succeeded to running" in text
    with AuditLog(chapter_log[0]) as audit:            # the same calls, audited afresh by this test
        for call_id in audit.calls():
            assert audit.story(call_id).line() in text
        for call_id in ("call_1", "call_2", "call_3", "call_4", "call_5"):
            assert "\n".join(audit.trail(call_id)) in text
    for r in drift(windows=8, calls_per_window=200, seed=5):
        assert f"window {r['window']}: {r['schema_violations']:>2}/{r['calls']} = {r['rate']:.1%}" in text
    with AuditLog(chapter_log[0]) as audit:
        waits = [float(e["note"].rsplit(" after ", 1)[1].rstrip("s")) for e in audit.events("call_4")
                 if e["note"].startswith("retry ")]
    assert f"backing off: {' + '.join(f'{w:g}' for w in waits)} = {sum(waits):g} seconds" in text
    copy = chapter_log[0].parent / "copy.sqlite"
    tamper(chapter_log[0], copy)
    with AuditLog(copy) as edited:
        assert f"the copy's chain:  {edited.verify().line()}" in text and "NOT ok at row" in text
        assert f"the copy now says: {edited.story('call_3').line()}" in text
    with AuditLog(chapter_log[0]) as audit:
        before_call_5 = Anchor(29, audit.events()[28]["digest"])      # the notebook keeps it after four calls
    assert f"anchor kept by the host: {before_call_5.line()}" in text
    assert ("with the anchor:   NOT ok at row 29: the last digest is not the anchor's head: history was rewritten"
            in text)
    assert "the copy alone:    ok:" in text and "recomputed without the key: NOT ok at row 1" in text
    assert "the log still matches the host's anchor: ok: 35 rows" in text
    report = simulation.report()
    assert f"utility: {report.utility:g} units over {report.calls} calls = {report.utility_per_call:.3f}" in text
