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
from toolkit.kernel import RetryPolicy, RetryController
from course.worlds import LOOKUP_CUSTOMER, AuditScene, invoice_arguments
from course.worlds.deploy import HEALTHY
from course.worlds import compare_adapters, run_deploy_episode, rushed_versions
from course.worlds import Rate
from course.worlds import MALFORMED, drift, simulate_log
from toolkit.effects import FINAL, TRANSITIONS, IllegalTransition, RecordState, open_record

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "07_records_audit_measuring.ipynb"
CANARY, ACCOUNT = "sk-CANARY-7f3a91", "ACCT-CANARY-55120"


# ------------------------------------------------------------------ the state machine
def test_record_follows_the_table_and_refuses_everything_else():
    record = open_record(tk.request("create_invoice", invoice_arguments("order-431"), call_id="call_1"), "agent-427")
    for target in ("approved", "running", "succeeded"):
        assert record.can(target)
        record.move(target)
    assert record.path() == ["requested", "approved", "running", "succeeded"] and record.final
    with pytest.raises(IllegalTransition, match="cannot go from succeeded to running .*succeeded is final"):
        record.move("running")
    fresh = open_record(tk.request("create_invoice", invoice_arguments("order-431"), call_id="call_2"), "agent-427")
    with pytest.raises(IllegalTransition, match="cannot go from requested to succeeded"):
        fresh.move("succeeded")
    assert len(record.transitions) == 4 and fresh.state is RecordState.REQUESTED
    assert FINAL == {s for s, nxt in TRANSITIONS.items() if not nxt}


# ------------------------------------------------------------------ the chapter's audited calls
def careless_lookup_tool():
    """The canary section's tool: its first failure message quotes the key and the account number."""
    failures = iter(["busy"])

    def run(args, world):
        if next(failures, None):
            raise tk.ToolFailure(tk.Status.RECOVERABLE_FAILURE, "partner_busy",
                                 f"partner refused key {args['api_key']} for {args['account_number']}")
        return {"customer": args["customer"]}
    return tk.Tool(LOOKUP_CUSTOMER, run)


@pytest.fixture()
def chapter_log(tmp_path):
    """The chapter's five calls, audited into a file; returns (db path, the scene, crm host)."""
    crm = tk.Host.of([careless_lookup_tool()])
    controller = RetryController(RetryPolicy(d0=1, beta=2, n_max=4))
    db = tmp_path / "audit.sqlite"
    with AuditScene() as scene:
        calls = [(scene.host(who), who, call) for who, call in scene.calls()]
        calls.append((crm, "agent-427", tk.request("lookup_customer", {"customer": "ACME", "api_key": CANARY,
                                                                       "account_number": ACCOUNT}, call_id="call_5")))
        with AuditLog(db, clock=scene.clock) as log:
            for host, who, call in calls:
                run_audited(host, call, log, who, controller, sleep=scene.clock.sleep)
        yield db, scene, crm                           # the log is closed: the file alone holds the story


def test_reopened_log_answers_who_when_how_many_retries_where_it_stopped(chapter_log):
    db, scene, _ = chapter_log
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
    assert scene.invoices() == {"order-431": "INV-9", "order-432": "INV-10"}   # call_2's retry billed nothing new
    assert [i["idempotency_key"] for i in scene.billing.invoices] == ["invoice:order-431:v1", "invoice:order-432:v1"]


def test_the_scene_plays_its_script_and_its_copy_holds_every_row(tmp_path):
    with AuditScene() as scene:
        books = scene.billing
        assert [books.fault("order-431", n) for n in (1, 2, 3)] == ["rate_limited", "rate_limited", "ok"]
        assert books.fault("order-432", 1) == "timeout_after_effect" and books.fault("order-500", 1) == "ok"
        assert [who for who, _ in scene.calls()] == ["agent-427", "agent-427", "intern", "agent-427"]
        assert not scene.host("intern").check(scene.calls()[2][1]).legal
        clock = scene.clock
        assert (clock(), clock(), clock.sleep(4), clock()) == (0.0, 0.25, None, 4.5)
        db = scene.folder / "live.sqlite"
        with AuditLog(db) as log:                      # still open: recent rows may sit in the write-ahead log
            log.track(tk.request("create_invoice", invoice_arguments("order-431"), call_id="c1"), "x").move("rejected")
            copy = scene.copy_of(db, "copy.sqlite")
            assert copy.parent == scene.folder and verify_audit_file(copy, log.anchor).ok
        folder = scene.folder
    assert not folder.exists()                         # leaving the block removed the folder


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


# ------------------------------------------------------------------ the stored notebook shows the toolkit's numbers
@pytest.mark.skipif(not NOTEBOOK.exists(), reason="chapter 7 notebook not written yet")
def test_notebook_prints_what_the_toolkit_computes(simulation, chapter_log):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "\n".join(simulation.report().lines()) in text
    assert "rate = 6/200 = 3%" in text
    versions = rushed_versions(12)
    for g, r in zip(run_deploy_episode(False, versions), run_deploy_episode(True, versions)):
        assert f"{g['version']:<8} {g['live']:<13} {g['status']:<14} {r['status']}\n" in text
    for name, numbers in compare_adapters(calls=12).items():
        assert f"{name:<22} " + ", ".join(f"{k}={v}" for k, v in numbers.items()) in text
    assert "canary in the printed trail or the model's feedback: False" in text
    assert "canary in any byte of the database folder: False" in text
    assert CANARY not in text and ACCOUNT not in text
    assert "IllegalTransition: call_1: cannot go from succeeded to running" in text
    with AuditLog(chapter_log[0]) as audit:            # the same calls, audited afresh by this test
        for call_id in audit.calls():
            assert audit.story(call_id).line() in text
        for call_id in ("call_2", "call_3", "call_4"):
            assert "\n".join(audit.trail(call_id)) in text
        assert audit.trail("call_5")[0] in text and "[redacted]" in audit.trail("call_5")[0]
        waits = [float(e["note"].rsplit(" after ", 1)[1].rstrip("s")) for e in audit.events("call_4")
                 if e["note"].startswith("retry ")]
        before_call_5 = Anchor(29, audit.events()[28]["digest"])      # the notebook prints it after four calls
        anchor = audit.anchor                                        # and keeps this one after the fifth
    for r in drift(windows=8, calls_per_window=100, seed=5):
        assert f"window {r['window']}: {r['schema_violations']:>2}/{r['calls']} = {r['rate']:>5.1%}" in text
    assert f"backing off: {' + '.join(f'{w:g}' for w in waits)} = {sum(waits):g} seconds" in text
    assert "backing off: 1 + 2 + 4 + 8 = 15 seconds" in text
    copy = chapter_log[0].parent / "copy.sqlite"
    tamper(chapter_log[0], copy)
    with AuditLog(copy) as edited:
        assert f"the copy's chain:  {edited.verify().line()}" in text and "NOT ok at row" in text
        assert f"the copy now says: {edited.story('call_3').line()}" in text
    assert f"anchor kept by the host: {before_call_5.line()}" in text
    rewritten = chapter_log[0].parent / "rewritten.sqlite"
    rewrite_and_recompute(chapter_log[0], rewritten)
    assert f"with the anchor:   {verify_audit_file(rewritten, anchor).line()}" in text
    assert "the last digest is not the anchor's head: history was rewritten" in text
    assert "the copy alone:    ok:" in text and "recomputed without the key: NOT ok at row 1" in text
    assert "the log still matches the host's anchor: ok: 35 rows" in text


@pytest.mark.skipif(not NOTEBOOK.exists(), reason="chapter 7 notebook not written yet")
def test_notebook_opens_with_its_plan_and_keeps_its_setup_in_the_scenery():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    title = nb.cells[0].source
    assert title.startswith("# 07 · ") and "**In this chapter you will**" in title and "\n**Time:** " in title
    dives = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## Deep dives")]
    assert len(dives) == 1
    core = nb.cells[:dives[0]]
    assert max(len(c.source.splitlines()) for c in core if c.cell_type == "code") <= 25
    assert any("AuditScene()" in c.source for c in core if c.cell_type == "code")
    assert not any("class " in c.source for c in nb.cells if c.cell_type == "code")   # no setup classes on screen
