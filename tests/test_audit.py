"""The audit log: append-only in SQLite, tamper-evident, answers the chapter's question, leaks nothing."""
import sqlite3

import pytest

import toolkit as tk
from toolkit.effects import AuditLog, run_audited
from toolkit.kernel import RetryController, RetryPolicy
from course.worlds import CREATE_INVOICE
from toolkit.kernel import Contract, Retry
from toolkit.kernel import FailureClass, Status, ToolFailure
from toolkit._show import secret_values
from toolkit.effects import RecordState

KEY = "invoice:order-431:v1"
ARGS = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": KEY}
BILLING = tk.Caller("agent-427", frozenset({"billing.write"}))


class Books:
    """Invoices keyed by idempotency key; fails transiently ``failures`` times first."""

    def __init__(self, failures=0, approved=True):
        self.failures, self.approved, self.invoices = failures, approved, {}

    def order(self, order_id):
        return {"approved": self.approved}

    def invoices_with_key(self, key):
        return [self.invoices[key]] if key in self.invoices else []

    def run(self, args, world):
        if self.failures:
            self.failures -= 1
            raise ToolFailure(Status.RECOVERABLE_FAILURE, "rate_limited")
        self.invoices.setdefault(args["idempotency_key"], f"INV-{len(self.invoices) + 9}")
        return {"invoice_id": self.invoices[args["idempotency_key"]]}


def billing_host(books, caller=BILLING):
    return tk.Host.of([tk.Tool(CREATE_INVOICE, books.run)], caller, books)


# ------------------------------------------------------------------ the chapter's question
def test_story_answers_who_when_how_many_retries_where_it_stopped():
    log = AuditLog()
    books = Books(failures=2)
    record = run_audited(billing_host(books), tk.request("create_invoice", ARGS, call_id="call_1"), log,
                         "agent-427", RetryController(RetryPolicy(d0=1, beta=2, n_max=4)))
    story = log.story("call_1")
    assert (story.initiator, story.started_at, story.retries, story.stopped_at) == ("agent-427", 0, 2, "succeeded")
    assert story.path == ("requested", "approved", "running", "failed", "running", "failed", "running",
                          "succeeded")
    assert story.path == tuple(record.path()) and story.ended_at == record.transitions[-1].at
    assert story.line() == ("call_1: create_invoice initiated by agent-427 at t=0; 2 retries; "
                            "stopped at succeeded (t=7)")


def test_replay_prints_the_trail(capsys):
    log = AuditLog()
    run_audited(billing_host(Books(failures=1)), tk.request("create_invoice", ARGS, call_id="call_1"), log,
                "agent-427", RetryController(RetryPolicy()))
    lines = log.replay("call_1")
    printed = capsys.readouterr().out.splitlines()
    assert printed == lines and len(lines) == len(log.events("call_1"))
    assert "call_1 create_invoice requested by agent-427" in lines[0]
    assert "running -> failed  (execution: rate_limited)" in lines[3]
    assert "failed -> running  (retry 1 after 1s)" in lines[4]


def test_rejection_logs_every_failing_test():
    log = AuditLog()
    intern = tk.Caller("intern")
    record = run_audited(billing_host(Books(approved=False), intern),
                         tk.request("create_invoice", ARGS, call_id="call_1"), log, "intern")
    assert record.state is RecordState.REJECTED
    assert log.events("call_1")[-1]["failure"] == "authorization,precondition"


def test_escalation_and_refusal_are_logged():
    log = AuditLog()
    run_audited(billing_host(Books(failures=9)), tk.request("create_invoice", ARGS, call_id="call_1"), log,
                "agent-427", RetryController(RetryPolicy(n_max=1)))
    assert log.story("call_1").stopped_at == "awaiting_human"
    send = Contract("send_message", "Send.", {"type": "object"}, retry=Retry.UNSAFE)

    def flaky(args, world):
        raise ToolFailure(Status.RECOVERABLE_FAILURE, "busy")
    run_audited(tk.Host.of([tk.Tool(send, flaky)]), tk.request("send_message", {}, call_id="m1"), log, "agent-427",
                RetryController(RetryPolicy()))
    assert log.story("m1").stopped_at == "awaiting_human" and log.story("m1").retries == 0


def test_without_a_controller_a_failure_is_final():
    log = AuditLog()
    record = run_audited(billing_host(Books(failures=1)), tk.request("create_invoice", ARGS, call_id="c"), log,
                         "agent-427")
    assert record.state is RecordState.FAILED and record.retries == 0


def test_unknown_call_id_has_no_story():
    log = AuditLog()
    assert log.story("nope") is None and log.trail("nope") == []


def test_clock_is_injectable_and_trails_are_deterministic():
    def trail():
        log = AuditLog()
        run_audited(billing_host(Books(failures=2)), tk.request("create_invoice", ARGS, call_id="c"), log,
                    "agent-427", RetryController(RetryPolicy()))
        return log.trail()
    assert trail() == trail()
    times = iter([100.0, 100.5, 101.0])
    log = AuditLog(clock=lambda: next(times))
    r = log.track(tk.request("read_file", {"path": "a"}, call_id="r1"), "agent-427")
    r.move("approved")
    r.move("cancelled")
    assert [e["at"] for e in log.events()] == [100.0, 100.5, 101.0]


# ------------------------------------------------------------------ append-only
def filled(db=":memory:"):
    log = AuditLog(db)
    run_audited(billing_host(Books(failures=1)), tk.request("create_invoice", ARGS, call_id="c1"), log,
                "agent-427", RetryController(RetryPolicy()))
    return log


@pytest.mark.parametrize("sql", [
    "UPDATE audit_events SET initiator = 'someone else'",
    "UPDATE audit_events SET target = 'succeeded' WHERE seq = 4",
    "DELETE FROM audit_events",
    "DELETE FROM audit_events WHERE seq = 1",
    "INSERT OR REPLACE INTO audit_events SELECT * FROM audit_events WHERE seq = 1",
    "REPLACE INTO audit_events SELECT * FROM audit_events WHERE seq = (SELECT MAX(seq) FROM audit_events)",
])
def test_database_refuses_to_rewrite_history(sql):
    log = filled()
    before = log.events()
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.conn.execute(sql)
    assert log.events() == before and log.verify().ok


def test_class_offers_no_way_to_change_a_row():
    names = [n for n in dir(AuditLog) if not n.startswith("__")]
    assert not [n for n in names if any(w in n.lower() for w in ("update", "delete", "remove", "clear", "edit",
                                                                 "truncate", "drop"))]


def test_digest_chain_detects_an_edit_behind_the_triggers_back():
    log = filled()
    assert log.verify().ok and log.verify().rows == len(log.events())
    log.conn.execute("DROP TRIGGER audit_events_no_update")
    log.conn.execute("UPDATE audit_events SET initiator = 'someone else' WHERE seq = 1")
    check = log.verify()
    assert not check.ok and check.broken_at == 1


# ------------------------------------------------------------------ sharing a database with a ledger
def test_shares_a_file_and_a_transaction_with_another_module(tmp_path):
    db = tmp_path / "course.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE ledger_entries (key TEXT PRIMARY KEY, result TEXT)")
    log = AuditLog(conn)
    conn.execute("BEGIN IMMEDIATE")                       # effect and audit commit together ...
    conn.execute("INSERT INTO ledger_entries VALUES ('k1', 'INV-9')")
    log.track(tk.request("create_invoice", ARGS, call_id="c1"), "agent-427").move("approved")
    conn.execute("ROLLBACK")                              # ... or not at all
    assert log.events() == [] and conn.execute("SELECT COUNT(*) FROM ledger_entries").fetchone()[0] == 0
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO ledger_entries VALUES ('k1', 'INV-9')")
    log.track(tk.request("create_invoice", ARGS, call_id="c1"), "agent-427").move("approved")
    conn.execute("COMMIT")
    log.close()                                          # not ours to close: the connection stays open
    assert conn.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0] == 2
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}
    assert {n for n in names if not n.startswith("ledger_")} and all(
        n.startswith(("audit_", "ledger_")) for n in names)
    conn.close()
    reopened = AuditLog(db)                               # a second open finds the same rows
    assert reopened.story("c1").stopped_at == "approved" and reopened.verify().ok
    reopened.close()


def test_a_path_is_opened_the_way_a_ledger_opens_its_file(tmp_path):
    """One SQLite setup for every user (``toolkit.effects.database.connect``): WAL, 10 s busy timeout."""
    with AuditLog(tmp_path / "audit.db") as log:
        assert log.conn.isolation_level is None
        assert log.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert log.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
        assert log.conn.execute("PRAGMA synchronous").fetchone()[0] == 2          # FULL


def test_a_refused_row_rolls_back_its_own_transaction(tmp_path):
    with AuditLog(tmp_path / "audit.db") as log:
        record = log.track(tk.request("create_invoice", ARGS, call_id="c1"), "agent-427")
        log.conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'no'); END")
        with pytest.raises(sqlite3.IntegrityError):
            record.move("approved")
        assert not log.conn.in_transaction and len(log.events()) == 1


# ------------------------------------------------------------------ canary secrets
CANARIES = {"api_key": "sk-CANARY-123", "token": "tok-CANARY-456", "account_number": "CANARY-ACCT-789"}
SECRET_TOOL = Contract(
    "call_partner", "Call the partner API.",
    {"type": "object",
     "properties": {"q": {"type": "string"}, "api_key": {"type": "string"}, "token": {"type": "string"},
                    "account_number": {"type": "string"}, "retries": {"type": "integer"}},
     "required": ["q"], "additionalProperties": False},
    retry=Retry.SAFE, secret_fields=("account_number",))


def leaky_tool(args, world):
    """A careless implementation that puts the credential into its failure reason."""
    raise ToolFailure(Status.RECOVERABLE_FAILURE, f"bad credential {args.get('api_key')}",
                      f"partner refused {args.get('token')}", FailureClass.EXECUTION)


def test_canary_secrets_reach_no_byte_of_the_file_no_log_line_and_no_feedback(tmp_path, capsys):
    db = tmp_path / "audit.db"
    log = AuditLog(db)
    host = tk.Host.of([tk.Tool(SECRET_TOOL, leaky_tool)])
    calls = [
        tk.request("call_partner", {"q": "status", **CANARIES}, call_id="c1"),
        tk.request("call_partner", '{"q": "status", "api_key": "sk-CANARY-123", "token": "tok-CANARY-456"}',
                   call_id="c2"),
        tk.request("call_partner", '{"q": "status", "api_key": "sk-CANARY-123"', call_id="c3"),   # cut JSON
        tk.request("call_partner", {"q": 7, **CANARIES}, call_id="c4"),                          # rejected
        tk.request("call_partner", {"q": "s", "nested": {"token": "tok-CANARY-456"}}, call_id="c5"),
    ]
    for call in calls:
        record = run_audited(host, call, log, "agent-427", RetryController(RetryPolicy(n_max=2)))
        log.mark(record, "note", note=f"the model said it used {CANARIES['api_key']}")
    log.replay()
    printed = capsys.readouterr().out
    stories = [log.story(c.call_id).line() for c in calls]
    log.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())           # the db and any journal beside it
    for canary in CANARIES.values():
        assert canary.encode() not in raw, f"{canary} reached the database file"
        assert canary not in printed and canary not in " ".join(stories)
    assert b"status" in raw and b"[redacted]" in raw                     # the useful part is still there


def honest_tool(args, world):
    raise ToolFailure(Status.RECOVERABLE_FAILURE, "partner_busy", "the partner API is busy")


@pytest.mark.parametrize("arguments", [
    {"q": "status", **CANARIES},                                          # runs, fails, is retried
    {"q": 7, **CANARIES},                                                 # rejected by the schema
    {"q": "status", "api_key": 12345, "token": "tok-CANARY-456"},         # rejected: wrong type of a secret
    '{"q": "status", "api_key": "sk-CANARY-123", "token": "tok-CANARY-456", "account_number": "CANARY-ACCT-789"}',
])
def test_canary_secrets_never_reach_the_models_feedback(arguments):
    host = tk.Host.of([tk.Tool(SECRET_TOOL, honest_tool)])
    run_audited(host, tk.request("call_partner", arguments, call_id="c1"), AuditLog(), "agent-427",
                RetryController(RetryPolicy(n_max=2)))
    feedback = " ".join(str(a.result.to_dict()) for a in host.log)
    assert len(host.log) >= 1
    for canary in CANARIES.values():
        assert canary not in feedback, f"{canary} reached the model's feedback"


def test_a_careless_tool_cannot_leak_a_secret_into_feedback():
    host = tk.Host.of([tk.Tool(SECRET_TOOL, leaky_tool)])
    result = host.execute(tk.request("call_partner", {"q": "status", **CANARIES}, call_id="c1"))
    assert not any(canary in str(result.to_dict()) for canary in CANARIES.values())


def test_secret_values_are_found_at_any_depth():
    found = secret_values({"a": {"token": {"inner": "tok-CANARY-456"}}, "account_number": "CANARY-ACCT-789",
                           "list": [{"api_key": "sk-CANARY-123"}], "plain": "keep-me"}, ("account_number",))
    assert found == {"tok-CANARY-456", "CANARY-ACCT-789", "sk-CANARY-123"}
