"""The ledger rule, in memory and on disk: replay, conflict, in progress, pending, crash-safe reopen."""
import datetime
import json
import sqlite3

import pytest

import toolkit as tk
from course.worlds import ScriptedPolicy
from toolkit._codes import CODES
from course.worlds import billing_service
from course.worlds import CREATE_INVOICE, Books
from course.worlds import race
from toolkit._caps import MAX_DEPTH
from toolkit.kernel import Answer, Ledger, LedgerStatus, MemoryLedger, invoke
from toolkit.effects import DurableLedger, connect, decode_result, encode_result, transaction
from toolkit._json import canonical_json, fingerprint

ARGS = {"order_id": "order-431", "amount": 100, "currency": "EUR", "idempotency_key": "invoice-431"}


@pytest.fixture
def books():
    return Books(orders={"order-431": {"approved": True}})


@pytest.fixture
def db(tmp_path):
    with DurableLedger(tmp_path / "ledger.db") as ledger:
        yield ledger


def issue_in_db(conn, arguments):
    return billing_service.issue_invoice(conn, arguments, honour_keys=False)


def count_invoices(ledger):
    return ledger.conn.execute("SELECT count(*) FROM invoices").fetchone()[0]


# --------------------------------------------------------------------------- the chapter's numbers

def test_pure_rule_leaves_the_old_ledger_alone(books):
    empty = {}
    after, first = invoke(books.issue, ARGS, "invoice-431", empty)
    assert empty == {} and len(after) == 1 and first["invoice_id"] == "INV-9"
    again, second = invoke(books.issue, ARGS, "invoice-431", after)
    assert len(again) == 1 and second == first and len(books.invoices) == 1


def test_memory_ledger_numbers(books):
    ledger = MemoryLedger()
    assert len(ledger) == 0
    first = ledger.invoke("invoice-431", books.issue, ARGS)
    assert len(ledger) == 1 and len(books.invoices) == 1
    retry = ledger.invoke("invoice-431", books.issue, ARGS)
    assert retry == first
    assert len(ledger) == 1 and len(books.invoices) == 1, "a retry must not grow the ledger or the invoices"


@pytest.mark.parametrize("make", ["memory", "sqlite"])
def test_call_numbers_on_both_ledgers(make, books, tmp_path):
    ledger = MemoryLedger() if make == "memory" else DurableLedger(tmp_path / "l.db")
    assert len(ledger) == 0
    first = ledger.call("invoice-431", books.issue, ARGS, tool="create_invoice")
    assert first.status is LedgerStatus.RAN and len(ledger) == 1 and len(books.invoices) == 1
    retry = ledger.call("invoice-431", books.issue, ARGS, tool="create_invoice")
    assert retry.status is LedgerStatus.REPLAYED and retry.result == first.result
    assert len(ledger) == 1 and len(books.invoices) == 1
    assert "invoice-431" in ledger and "invoice-999" not in ledger


def test_both_ledgers_share_one_interface(db):
    assert isinstance(MemoryLedger(), Ledger) and isinstance(db, Ledger)


def test_atomic_numbers_and_invoice_in_same_database(db):
    with billing_service.transaction(db.conn):
        db.conn.execute(billing_service.INVOICES_SCHEMA)
    assert len(db) == 0
    first = db.call_atomic("invoice-431", issue_in_db, ARGS, tool="create_invoice")
    retry = db.call_atomic("invoice-431", issue_in_db, ARGS, tool="create_invoice")
    assert first.status is LedgerStatus.RAN and first.result["invoice_id"] == "INV-9"
    assert retry.status is LedgerStatus.REPLAYED and retry.result == first.result
    assert len(db) == 1 and count_invoices(db) == 1


# --------------------------------------------------------------------------- fingerprints and conflicts

def test_canonical_json_equal_values_equal_text():
    assert canonical_json({"b": 1, "a": 100.0}) == canonical_json({"a": 100, "b": 1.0}) == '{"a":100,"b":1}'
    assert fingerprint({"a": [1, 2]}) == fingerprint({"a": (1, 2)})
    assert fingerprint({"a": True}) != fingerprint({"a": 1}), "true and 1 are different JSON values"


@pytest.mark.parametrize("make", ["memory", "sqlite"])
def test_same_key_other_arguments_is_a_conflict(make, books, tmp_path):
    ledger = MemoryLedger() if make == "memory" else DurableLedger(tmp_path / "l.db")
    ledger.call("invoice-431", books.issue, ARGS, tool="create_invoice")
    answer = ledger.call("invoice-431", books.issue, {**ARGS, "amount": 5}, tool="create_invoice")
    assert answer.status is LedgerStatus.CONFLICT and not answer.ok
    assert (answer.error.code, answer.error.pointer, answer.error.retryable) == \
        ("idempotency_conflict", "$.idempotency_key", False)
    result = answer.to_result("call_7")
    assert result.status is tk.Status.REJECTED and result.call_id == "call_7"
    assert result.reason == "idempotency_conflict"
    other_tool = ledger.call("invoice-431", books.issue, ARGS, tool="refund")
    assert other_tool.status is LedgerStatus.CONFLICT and "another tool" in other_tool.error.message
    same_value = ledger.call("invoice-431", books.issue, {**ARGS, "amount": 100.0}, tool="create_invoice")
    assert same_value.status is LedgerStatus.REPLAYED, "100 and 100.0 are the same JSON number"
    assert len(books.invoices) == 1


def test_principals_do_not_share_keys(db, books):
    a = db.call("invoice-431", books.issue, ARGS, principal="agent-427")
    b = db.call("invoice-431", books.issue, ARGS, principal="agent-428")
    assert a.status is b.status is LedgerStatus.RAN and len(books.invoices) == 2


# --------------------------------------------------------------------------- in flight, pending, reconcile

def test_in_progress_key_is_not_run_twice(db, tmp_path):
    seen = []

    def effect(arguments):
        with DurableLedger(tmp_path / "ledger.db") as other:   # a second process's view of the file
            seen.append(other.call("invoice-431", effect, arguments))
        return {"invoice_id": "INV-9"}

    first = db.call("invoice-431", effect, ARGS)
    assert first.status is LedgerStatus.RAN
    assert [a.status for a in seen] == [LedgerStatus.IN_PROGRESS], "the inner call must not run the effect"
    assert seen[0].error.code == "in_progress" and seen[0].error.retryable
    assert seen[0].to_result("c2").status is tk.Status.RECOVERABLE_FAILURE


def test_memory_ledger_in_progress():
    ledger, inner = MemoryLedger(), []

    def effect(arguments):
        inner.append(ledger.call("k", effect, arguments).status)
        return 1

    assert ledger.call("k", effect, {}).status is LedgerStatus.RAN and inner == [LedgerStatus.IN_PROGRESS]


def test_unknown_outcome_leaves_a_visible_pending_entry(db):
    runs = []

    def flaky(arguments):
        runs.append(1)
        raise ConnectionResetError("peer went away")

    answer = db.call("invoice-431", flaky, ARGS)
    assert answer.status is LedgerStatus.PENDING and answer.error.code == "outcome_unknown"
    assert answer.to_result("c1").status is tk.Status.TIMEOUT
    assert [e["state"] for e in db.pending()] == ["pending"] and len(db) == 0
    again = db.call("invoice-431", flaky, ARGS)
    assert again.status is LedgerStatus.IN_PROGRESS and runs == [1], "a pending key must never be re-run blindly"


def test_reconcile_found_absent_and_unknown(db):
    db.call("found", lambda a: 1 / 0, ARGS)
    settled = db.reconcile("found", ARGS, lambda a: {"invoice_id": "INV-9"})
    assert settled.status is LedgerStatus.RECONCILED and db.lookup("found")["state"] == "done"
    assert db.call("found", lambda a: 1 / 0, ARGS).result == {"invoice_id": "INV-9"}

    db.call("absent", lambda a: 1 / 0, ARGS)
    released = db.reconcile("absent", ARGS, lambda a: None)
    assert released.status is LedgerStatus.FAILED and released.error.code == "not_applied"
    assert db.lookup("absent") is None
    assert db.call("absent", lambda a: {"invoice_id": "INV-10"}, ARGS).status is LedgerStatus.RAN

    db.call("dark", lambda a: 1 / 0, ARGS)

    def unreachable(arguments):
        raise TimeoutError

    still = db.reconcile("dark", ARGS, unreachable)
    assert still.status is LedgerStatus.PENDING and db.lookup("dark")["state"] == "pending"


def test_timeout_result_and_rejections_from_the_effect(db):
    timeout = tk.ToolResult("c1", tk.Status.TIMEOUT, failure_class=tk.FailureClass.TIMEOUT, reason="timeout")
    assert db.call("t", lambda a: timeout, {}).status is LedgerStatus.PENDING
    transient = tk.ToolResult("c2", tk.Status.RECOVERABLE_FAILURE, reason="locked")
    answer = db.call("r", lambda a: transient, {})
    assert answer.status is LedgerStatus.FAILED and db.lookup("r") is None, "nothing happened: the key is free"
    assert answer.to_result("c3").reason == "locked" and answer.to_result("c3").call_id == "c3"


# --------------------------------------------------------------------------- durability and atomicity

def test_replay_after_reopening_the_file(tmp_path, books):
    path = tmp_path / "ledger.db"
    with DurableLedger(path) as ledger:
        first = ledger.call("invoice-431", books.issue, ARGS, tool="create_invoice")
    with DurableLedger(path) as reopened:
        again = reopened.call("invoice-431", books.issue, ARGS, tool="create_invoice")
        assert again.status is LedgerStatus.REPLAYED and again.result == first.result
        assert len(reopened) == 1
    assert len(books.invoices) == 1


def test_connection_settings(db):
    assert db.conn.isolation_level is None
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 2          # FULL
    assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000


def test_transaction_commits_or_rolls_back_everything(tmp_path):
    conn = connect(tmp_path / "t.db")
    conn.execute("CREATE TABLE t (x INTEGER)")
    with transaction(conn):
        conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(RuntimeError):
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (2)")
            raise RuntimeError("boom")
    with pytest.raises(RuntimeError):                   # already rolled back inside: the error still shows
        with transaction(conn):
            conn.execute("ROLLBACK")
            raise RuntimeError("boom")
    assert conn.execute("SELECT x FROM t").fetchall() == [(1,)] and not conn.in_transaction
    conn.close()


def test_argument_nesting_cap_is_the_schema_layers(db):
    ok = current = {}
    for _ in range(MAX_DEPTH - 1):
        current["a"] = {}
        current = current["a"]
    assert db.call("deep", lambda a: 1, ok).ok
    current["a"] = {"b": {}}
    assert db.call("deeper", lambda a: 1, ok).error.code == "not_serializable"


def test_atomic_effect_failure_rolls_back_both(db):
    with billing_service.transaction(db.conn):
        db.conn.execute(billing_service.INVOICES_SCHEMA)

    def half_done(conn, arguments):
        issue_in_db(conn, arguments)
        raise RuntimeError("crash after the invoice row")

    answer = db.call_atomic("invoice-431", half_done, ARGS)
    assert answer.status is LedgerStatus.FAILED and answer.error.code == "execution_failed"
    assert count_invoices(db) == 0 and len(db) == 0 and db.lookup("invoice-431") is None
    assert db.call_atomic("invoice-431", issue_in_db, ARGS).result["invoice_id"] == "INV-9"

    unstorable = db.call_atomic("other", lambda conn, a: (issue_in_db(conn, a), object()), {**ARGS})
    assert unstorable.status is LedgerStatus.FAILED and unstorable.error.code == "not_serializable"
    assert count_invoices(db) == 1, "a result JSON cannot hold rolls back the effect too"


def test_tool_results_round_trip_through_json(db):
    error = tk.ToolError("precondition_failed", "$.amount", "amount > 0", expected="> 0", received=-5)
    result = tk.ToolResult("c1", tk.Status.FAILED, output={"x": [1, 2]}, failure_class=tk.FailureClass.POSTCONDITION,
                           reason="postcondition_failed", errors=(error,), evidence={"invoice_id": "INV-9"})
    assert decode_result(encode_result(result)) == result
    first = db.invoke("k", lambda a: result, {})
    assert first == result and db.invoke("k", lambda a: 1 / 0, {}) == result


def test_interpreter_loop_with_the_durable_ledger(tmp_path, books):
    host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], tk.Caller("agent-427", frozenset({"billing.write"})),
                      books)
    call = tk.request("create_invoice", {**ARGS, "idempotency_key": "invoice:order-431:v1"}, call_id="c1",
                      idempotency_key="invoice:order-431:v1")
    retry = tk.request("create_invoice", call.arguments, call_id="c2", idempotency_key=call.idempotency_key)
    with DurableLedger(tmp_path / "l.db") as ledger:
        state = tk.evaluate(tk.State("invoice order-431"), ScriptedPolicy([call, retry]), host, ledger)
        assert len(ledger) == 1
    assert len(books.invoices) == 1
    assert [o.result.output["invoice_id"] for o in state.observations] == ["INV-9", "INV-9"]


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("key, arguments, code, pointer", [
    ("", ARGS, "invalid_key", "$.idempotency_key"),
    ("   ", ARGS, "invalid_key", "$.idempotency_key"),
    (None, ARGS, "invalid_key", "$.idempotency_key"),
    ("k\n", ARGS, "invalid_key", "$.idempotency_key"),
    ("k" * 500, ARGS, "invalid_key", "$.idempotency_key"),
    ("k", {"when": datetime.date(2024, 1, 1)}, "not_serializable", "$.when"),
    ("k", {"lines": [{"qty": float("nan")}]}, "not_serializable", "$.lines[0].qty"),
    ("k", {1: "x"}, "not_serializable", "$"),
    ("k", {"s": {1, 2}}, "not_serializable", "$.s"),
])
@pytest.mark.parametrize("make", ["memory", "sqlite"])
def test_bad_input_is_refused_and_touches_nothing(make, key, arguments, code, pointer, tmp_path):
    ledger = MemoryLedger() if make == "memory" else DurableLedger(tmp_path / "l.db")
    runs = []
    answer = ledger.call(key, lambda a: runs.append(1), arguments)
    assert isinstance(answer, Answer) and answer.status is LedgerStatus.INVALID
    assert (answer.error.code, answer.error.pointer) == (code, pointer)
    assert runs == [] and len(ledger) == 0
    assert answer.to_result("c9").status is tk.Status.REJECTED
    if make == "sqlite":
        assert ledger.entries() == []
        assert ledger.call_atomic(key, lambda c, a: runs.append(1), arguments).status is LedgerStatus.INVALID
        assert runs == []


def test_wrong_types_for_tool_and_principal(db):
    assert db.call("k", lambda a: 1, {}, tool=3).error.pointer == "$.tool"
    assert db.call("k", lambda a: 1, {}, principal=None).error.pointer == "$.principal"


def test_too_deep_arguments_are_refused(db):
    deep = current = {}
    for _ in range(40):
        current["a"] = {}
        current = current["a"]
    assert db.call("k", lambda a: 1, deep).error.code == "not_serializable"


def test_locked_database_is_a_structured_answer(tmp_path):
    path = tmp_path / "l.db"
    holder, waiter = DurableLedger(path), DurableLedger(path, busy_timeout_ms=50)
    holder.conn.execute("BEGIN IMMEDIATE")                   # another writer holds the lock
    try:
        answer = waiter.call_atomic("k", lambda c, a: 1, {})
        assert answer.status is LedgerStatus.FAILED and answer.error.code == "busy" and answer.error.retryable
        assert waiter.call("k", lambda a: 1, {}).error.code == "busy"
    finally:
        holder.conn.execute("ROLLBACK")
        holder.close()
        waiter.close()
    with DurableLedger(path) as after:
        assert after.entries() == [], "a refused call under lock must leave nothing behind"


# --------------------------------------------------------------------------- many processes

@pytest.mark.parametrize("mode", ["atomic", "external"])
def test_racing_processes_get_one_effect_per_key(mode):
    outcome = race(processes=4, keys=12, mode=mode)
    assert outcome["exit_codes"] == [0, 0, 0, 0]
    assert outcome["effects_per_key"] == [1], f"some key ran more or less than once: {outcome}"
    assert outcome["effects"] == 12 and outcome["calls"] == 48
    assert outcome["answers"] == {"ran": 12, "replayed": 36}


# --------------------------------------------------------------------------- SQLite failures are answers

def _with_deferred_child_table(ledger):
    """An effect table whose foreign key is checked only at COMMIT: the commit itself fails."""
    with transaction(ledger.conn):
        ledger.conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        ledger.conn.execute("CREATE TABLE child (id INTEGER, parent_id INTEGER REFERENCES parent(id) "
                            "DEFERRABLE INITIALLY DEFERRED)")
    ledger.conn.execute("PRAGMA foreign_keys = ON")          # per connection, outside any transaction


def test_a_failed_commit_rolls_back_and_says_so(tmp_path):
    conn = connect(tmp_path / "t.db")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE child (parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
    with pytest.raises(sqlite3.IntegrityError):
        with transaction(conn):
            conn.execute("INSERT INTO child VALUES (7)")        # accepted now, refused at COMMIT
    assert not conn.in_transaction, "a failed COMMIT must not leave the transaction open"
    assert conn.execute("SELECT count(*) FROM child").fetchone()[0] == 0
    with transaction(conn):                                    # the connection is usable again
        conn.execute("INSERT INTO parent VALUES (7)")
    conn.close()


def test_call_atomic_whose_commit_fails_is_rolled_back_for_real(db):
    _with_deferred_child_table(db)

    def orphan_row(conn, arguments):
        conn.execute("INSERT INTO child VALUES (1, 99)")     # no parent 99: the COMMIT fails
        return {"child": 1}

    answer = db.call_atomic("k", orphan_row, {"a": 1}, tool="t")
    assert isinstance(answer, Answer) and answer.status is LedgerStatus.FAILED and "rolled back" in answer.error.message
    assert not db.conn.in_transaction
    assert db.lookup("k") is None and db.conn.execute("SELECT count(*) FROM child").fetchone()[0] == 0
    fixed = db.call_atomic("k", lambda conn, a: {"ok": True}, {"a": 1}, tool="t")
    assert fixed.status is LedgerStatus.RAN, "after the rollback the key is free and the connection works"


def test_sqlite_errors_never_escape_the_ledger(tmp_path):
    """The module promises answers, not exceptions: a broken table is a structured refusal too."""
    with DurableLedger(tmp_path / "l.db") as ledger:
        ledger.conn.execute("CREATE TRIGGER no_claims BEFORE INSERT ON ledger "
                            "BEGIN SELECT RAISE(ABORT, 'claims are frozen'); END")
        runs = []
        for answer in (ledger.call("k", lambda a: runs.append(1), {}),
                       ledger.call_atomic("k", lambda c, a: {"x": 1}, {}),
                       ledger.record("k", {}, {"x": 1})):
            assert isinstance(answer, Answer) and answer.status is LedgerStatus.FAILED and not answer.ok
            assert answer.error.code in CODES and not answer.error.retryable
            assert "claims are frozen" in answer.error.message
        assert runs == [], "a claim that could not be written runs nothing"
        assert ledger.entries() == [] and not ledger.conn.in_transaction
        ledger.conn.execute("DROP TABLE ledger")
        for answer in (ledger.call("k", lambda a: runs.append(1), {}),
                       ledger.call_atomic("k", lambda c, a: runs.append(1), {}),
                       ledger.reconcile("k", {}, lambda a: None), *ledger.reap(lambda key: None)):
            assert isinstance(answer, Answer) and not answer.ok and answer.error.code in CODES
        assert runs == [] and ledger.release("k") is False


def test_an_outcome_that_cannot_be_recorded_is_unknown_not_ran(db):
    def effect(arguments):
        db.conn.execute("CREATE TRIGGER no_done BEFORE UPDATE ON ledger BEGIN SELECT RAISE(ABORT, 'x'); END")
        return {"invoice_id": "INV-9"}

    answer = db.call("k", effect, {"a": 1})
    assert answer.status is LedgerStatus.PENDING and answer.error.code == "outcome_unknown"
    assert db.lookup("k")["state"] == "pending"


# --------------------------------------------------------------------------- threads

def test_the_sqlite_ledger_works_from_the_schedulers_threads(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    from toolkit.wire import run_plan
    from toolkit.kernel import schedule

    books = Books(orders={f"order-{i}": {"approved": True} for i in range(12)})
    host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], tk.Caller("agent", frozenset({"billing.write"})), books)
    calls = [tk.request("create_invoice", {**ARGS, "order_id": f"order-{i}", "idempotency_key": f"inv-{i}"}, f"c{i}")
             for i in range(12)]
    with DurableLedger(tmp_path / "l.db") as ledger:
        report = run_plan(schedule(calls, {"create_invoice": CREATE_INVOICE}),
                          lambda call: tk.invoke_with_ledger(host, call, ledger), max_workers=6)
        assert [r.status for r in report.results] == [tk.Status.SUCCEEDED] * 12, report.summary()
        effects = []

        def call(key):
            return ledger.call(key, lambda a: effects.append(key) or {"k": key}, {"key": key}).status

        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(call, [f"k{i % 10}" for i in range(80)]))
        assert len(ledger) == 22 and sorted(effects) == sorted(f"k{i}" for i in range(10))
        assert set(answers) <= {LedgerStatus.RAN, LedgerStatus.REPLAYED, LedgerStatus.IN_PROGRESS}
    assert len(books.invoices) == 12


# --------------------------------------------------------------------------- secrets in failure messages

SECRET = "hunter2-CANARY-correct-horse"
TOKEN = "sk-CANARY-0123456789abcdef"


@pytest.mark.parametrize("make", ["memory", "sqlite"])
def test_failure_messages_are_scrubbed_in_answers_and_on_disk(make, tmp_path):
    ledger = MemoryLedger() if make == "memory" else DurableLedger(tmp_path / "ledger.db")
    arguments = {"user": "ann", "password": SECRET, "nested": {"api_key": TOKEN}, "signing": "s1gn-CANARY-value"}

    def refuses(args):
        raise tk.ToolFailure(tk.Status.RECOVERABLE_FAILURE, "locked",
                             f"login {args['password']} / {args['nested']['api_key']} / {args['signing']} refused")

    def times_out(args):
        raise tk.ToolFailure(tk.Status.TIMEOUT, "timeout", f"no answer for {args['password']}")

    answers = [ledger.call("a", refuses, arguments, secret_fields=("signing",)),
               ledger.call("b", times_out, arguments, secret_fields=("signing",))]
    if make == "sqlite":
        answers.append(ledger.call_atomic("c", lambda c, a: refuses(a), arguments, secret_fields=("signing",)))
    shown = repr(answers) + "".join(repr(a.to_dict()) + repr(a.to_result("x").to_dict()) + a.line() for a in answers)
    if make == "sqlite":
        ledger.close()
        shown += "".join(p.read_bytes().decode("latin-1") for p in tmp_path.iterdir())
    assert [a.status for a in answers[:2]] == [LedgerStatus.FAILED, LedgerStatus.PENDING]
    for secret in (SECRET, TOKEN, "s1gn-CANARY-value"):
        assert secret not in shown
    assert "[redacted]" in answers[0].error.message


@pytest.mark.parametrize("make", ["memory", "sqlite"])
def test_json_text_and_a_dict_are_one_call_to_the_ledger(make, books, tmp_path):
    import json

    ledger = MemoryLedger() if make == "memory" else DurableLedger(tmp_path / "l.db")
    first = ledger.call("invoice-431", books.issue, json.dumps(ARGS), tool="create_invoice")
    again = ledger.call("invoice-431", books.issue, {**ARGS, "amount": 100.0}, tool="create_invoice")
    respaced = ledger.call("invoice-431", books.issue, json.dumps(ARGS, indent=2), tool="create_invoice")
    assert first.status is LedgerStatus.RAN and again.status is respaced.status is LedgerStatus.REPLAYED
    other = ledger.call("invoice-431", books.issue, json.dumps({**ARGS, "amount": 5}), tool="create_invoice")
    assert other.status is LedgerStatus.CONFLICT


def test_a_result_with_keys_of_mixed_types_is_recorded_not_raised(tmp_path):
    """JSON cannot sort {1: ..., "b": ...}; the ledger still records the result and replays it."""
    mixed = {1: "x", "b": 2}
    assert json.loads(encode_result(mixed)) == {"1": "x", "b": 2}
    with DurableLedger(tmp_path / "l.db") as ledger:
        first = ledger.call("k-mixed", lambda _: mixed, {"n": 1}, tool="t")
        again = ledger.call("k-mixed", lambda _: pytest.fail("a replay must not run the effect"), {"n": 1}, tool="t")
    assert first.status is LedgerStatus.RAN and again.status is LedgerStatus.REPLAYED
    assert again.result == {"1": "x", "b": 2}


# ------------------------------------------------------------------ one rule under both ledgers

@pytest.mark.parametrize("make", [lambda path: MemoryLedger(),
                                  lambda path: DurableLedger(path / "s.db")],
                         ids=["memory", "sqlite"])
def test_both_ledgers_run_a_new_key_through_the_kernels_invoke(make, tmp_path, monkeypatch):
    """``call`` reaches the effect only through ``toolkit.kernel.ledger.invoke``."""
    import toolkit.kernel.ledger as rule

    seen, ran = [], []
    real = rule.invoke

    def spy(f, x, k, L):
        seen.append((k, dict(L)))
        return real(f, x, k, L)

    monkeypatch.setattr(rule, "invoke", spy)
    ledger = make(tmp_path)
    effect = lambda x: ran.append(x) or {"invoice_id": "INV-1"}   # noqa: E731
    first = ledger.call("invoice-431", effect, ARGS, tool="issue")
    assert first.status is LedgerStatus.RAN and first.result == {"invoice_id": "INV-1"}
    assert ran == [ARGS] and [k for k, _ in seen] == ["invoice-431"] and seen[0][1] == {}

    def refuse(f, x, k, L):      # a rule that never runs f: the effect must not run either
        return dict(L), "not run"

    monkeypatch.setattr(rule, "invoke", refuse)
    other = ledger.call("invoice-432", lambda x: ran.append(x),
                        {**ARGS, "idempotency_key": "invoice-432"}, tool="issue")
    assert other.status is LedgerStatus.RAN and other.result == "not run" and len(ran) == 1
    getattr(ledger, "close", lambda: None)()
