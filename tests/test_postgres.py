"""The durable ledger and the billing books on PostgreSQL: the answers SQLite gives, from a server.

One throwaway cluster serves the module (``tests/postgres.py``: made, started, stopped and removed);
each test gets a database of its own. The URL chooses the database (``COURSE_DATABASE_URL`` when
none is given), the one table in ``toolkit.effects.database`` says what the two dialects are sent,
and a SQLite user never imports psycopg.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import postgres
from course.worlds import KEY, ORDER, BillingService, race
from toolkit.effects import (CLAIM, DIALECTS, FIND, SETTLE, URL_VARIABLE, DurableLedger, as_sent,
                             connect, transaction)
from toolkit.kernel import LedgerStatus

ROOT = Path(__file__).resolve().parent.parent
_names = itertools.count()


@pytest.fixture(scope="module")
def server():
    postgres.needed()
    with postgres.cluster() as cluster:
        yield cluster


@pytest.fixture
def url(server) -> str:
    return server.create(f"test_{next(_names)}")


# ------------------------------------------------------------------ the one table of differences

def test_each_dialect_is_sent_the_ledgers_sql_in_its_own_words():
    assert as_sent("sqlite", CLAIM) == CLAIM and "?" not in as_sent("postgresql", CLAIM)
    assert as_sent("postgresql", CLAIM).count("%s") == CLAIM.count("?") == 6
    assert "ON CONFLICT (principal, key) DO NOTHING" in CLAIM   # same words: the unique key decides
    assert as_sent("postgresql", FIND).endswith("FOR UPDATE")
    assert not as_sent("sqlite", FIND).endswith("UPDATE")
    assert as_sent("postgresql", SETTLE).count("%s") == 4
    assert DIALECTS["sqlite"]["begin"] == ("BEGIN IMMEDIATE",)
    assert DIALECTS["postgresql"]["begin"] == ("BEGIN ISOLATION LEVEL READ COMMITTED",)


def test_a_url_chooses_the_database(tmp_path, monkeypatch):
    monkeypatch.delenv(URL_VARIABLE, raising=False)
    with pytest.raises(ValueError, match=URL_VARIABLE):
        connect()
    with pytest.raises(ValueError, match="sqlite:///"):
        connect("mysql://somewhere/db")
    monkeypatch.setenv(URL_VARIABLE, f"sqlite:///{tmp_path / 'from-env.db'}")
    with DurableLedger() as ledger:
        assert ledger.call("k", lambda a: a, {"n": 1}).status is LedgerStatus.RAN
    assert (tmp_path / "from-env.db").is_file()


def test_a_sqlite_ledger_never_imports_psycopg(tmp_path):
    code = ("import sys, toolkit as tk\n"
            f"with tk.DurableLedger({str(tmp_path / 'l.db')!r}) as l:\n"
            "    l.call('k', lambda a: a, {})\n"
            "print('psycopg' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


# ------------------------------------------------------------------ the fixture

def test_the_cluster_is_stopped_and_removed():
    postgres.needed()
    import psycopg

    with postgres.cluster() as cluster:
        folder, url = cluster.folder, cluster.url()
        with psycopg.connect(url) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone() == ("127.0.0.1",)
    assert not folder.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=5)


def test_a_missing_server_skips_here_and_fails_where_it_must_run(monkeypatch):
    monkeypatch.setattr(postgres, "binaries", lambda: None)
    monkeypatch.setattr(postgres, "REQUIRED", False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        postgres.needed()
    monkeypatch.setattr(postgres, "REQUIRED", True)
    with pytest.raises(pytest.fail.Exception, match="not installed"):
        postgres.needed()


# ------------------------------------------------------------------ the ledger on a server

def test_the_ledger_answers_on_a_server_as_on_a_file(url, monkeypatch):
    monkeypatch.setenv(URL_VARIABLE, url)
    effects = []
    with DurableLedger() as ledger:                         # no argument: COURSE_DATABASE_URL
        assert ledger.conn.dialect == "postgresql"
        first = ledger.call("k1", lambda a: effects.append(a) or {"n": a["n"]}, {"n": 1}, tool="t")
        again = ledger.call("k1", lambda a: effects.append(a) or {"n": a["n"]}, {"n": 1}, tool="t")
        other = ledger.call("k1", lambda a: effects.append(a), {"n": 2}, tool="t")
        assert [first.status, again.status, other.status] == [
            LedgerStatus.RAN, LedgerStatus.REPLAYED, LedgerStatus.CONFLICT]
        assert again.result == {"n": 1} and effects == [{"n": 1}]
        assert ledger.record("k2", {}, {"ok": True}).status is LedgerStatus.RAN
        assert [e["key"] for e in ledger.entries()] == ["k1", "k2"]
        assert len(ledger) == 2 and "k1" in ledger
    with DurableLedger(url) as reopened:                    # a new connection finds every key
        answer = reopened.call("k1", lambda a: effects.append(a), {"n": 1}, tool="t")
        assert answer.status is LedgerStatus.REPLAYED
    assert effects == [{"n": 1}]


def test_an_atomic_effect_and_its_row_commit_together_or_not_at_all(url):
    with DurableLedger(url) as ledger:
        with transaction(ledger.conn):
            ledger.conn.execute("CREATE TABLE invoices (key TEXT NOT NULL)")

        def write(conn, args):
            conn.execute("INSERT INTO invoices (key) VALUES (?)", (args["key"],))
            if args.get("fail"):
                raise RuntimeError("after the write")
            return {"written": args["key"]}

        failed = ledger.call_atomic("a", write, {"key": "a", "fail": True})
        assert failed.status is LedgerStatus.FAILED and failed.error.retryable
        assert ledger.conn.execute("SELECT count(*) FROM invoices").fetchone() == (0,)
        assert ledger.entries() == []
        assert ledger.call_atomic("a", write, {"key": "a"}).status is LedgerStatus.RAN
        assert ledger.call_atomic("a", write, {"key": "a"}).status is LedgerStatus.REPLAYED
        assert ledger.conn.execute("SELECT key FROM invoices").fetchall() == [("a",)]


def test_a_dead_claim_is_reaped_from_the_downstream_record(url):
    clock = [1000.0]
    with DurableLedger(url, lease_seconds=5, owner="worker-a", clock=lambda: clock[0]) as ledger:
        def dies(args):
            raise KeyboardInterrupt          # the process stops between the claim and its done row

        with pytest.raises(KeyboardInterrupt):
            ledger.call("k", dies, {"n": 1})
        assert [e["state"] for e in ledger.pending()] == ["pending"]
        live = ledger.call("k", lambda a: a, {"n": 1})
        assert live.status is LedgerStatus.IN_PROGRESS and live.error.retryable   # a live lease
        clock[0] += 10
        reaped = ledger.reap(lambda key: {"found": key})
        assert [a.status for a in reaped] == [LedgerStatus.RECONCILED]
        assert ledger.lookup("k")["result"] == {"found": "k"} and ledger.pending() == []


def test_a_claim_held_past_the_lock_timeout_is_a_busy_answer_that_leaves_nothing(url):
    holder, waiter = DurableLedger(url), DurableLedger(url, busy_timeout_ms=50)
    try:
        holder.conn.execute("BEGIN")             # another caller claims "k" and has not committed
        assert holder.conn.execute(CLAIM, ("", "k", "", "digest", "holder", 0.0)).rowcount == 1
        try:
            answer = waiter.call_atomic("k", lambda c, a: 1, {})
            assert answer.status is LedgerStatus.FAILED and answer.error.code == "busy"
            assert answer.error.retryable and waiter.call("k", lambda a: 1, {}).error.code == "busy"
        finally:
            holder.conn.execute("ROLLBACK")          # the other caller gives up: its claim is gone
        assert waiter.entries() == [], "a refused call under a lock must leave nothing behind"
        assert waiter.call("k", lambda a: 1, {}).status is LedgerStatus.RAN
    finally:
        holder.close()
        waiter.close()


def test_the_books_answer_503_while_another_writer_holds_them(url):
    service, other = BillingService(url), connect(url)
    try:
        with transaction(other, serial=True):        # another request is writing
            service.conn.execute("SET lock_timeout = 50")   # the service waits 50 ms, not 10 s
            status, body = service.create_invoice(ORDER)
        assert status == 503 and body["errors"][0]["code"] == "busy" and service.invoices() == []
        assert service.create_invoice(ORDER)[0] == 201
    finally:
        service.close()
        other.close()


@pytest.mark.parametrize("mode", ["atomic", "external"])
def test_racing_processes_get_one_effect_per_key_on_a_server(url, mode):
    outcome = race(processes=4, keys=12, mode=mode, url=url)
    assert outcome["exit_codes"] == [0, 0, 0, 0]
    assert outcome["effects_per_key"] == [1], f"some key ran more or less than once: {outcome}"
    assert outcome["effects"] == 12 and outcome["calls"] == 48
    assert outcome["answers"] == {"ran": 12, "replayed": 36}


# ------------------------------------------------------------------ the billing books on a server

def test_the_books_number_invoices_and_honour_keys_on_a_server(url):
    service = BillingService(url, honour_keys=True)
    try:
        first, again = service.create_invoice(ORDER), service.create_invoice(json.dumps(ORDER))
        assert (first[0], first[1]["invoice_id"]) == (201, "INV-9")
        assert (again[0], again[1]["invoice_id"], again[1]["replayed"]) == (200, "INV-9", True)
        status, body = service.create_invoice({**ORDER, "amount": 5})
        assert status == 409 and body["errors"][0]["code"] == "idempotency_conflict"
        status, tagged = service.create_invoice({**ORDER, "idempotency_key": "k2", "amount": 12.25},
                                                student="ada")
        assert status == 201 and tagged["invoice_id"] == "INV-10"
        assert (tagged["amount"], tagged["student"]) == (12.25, "ada")
        assert [i["invoice_id"] for i in service.invoices()] == ["INV-9", "INV-10"]
        assert service.find(KEY)["invoice_id"] == "INV-9" and service.find("nope") is None
    finally:
        service.close()


def test_requests_from_many_threads_get_numbers_in_order_and_one_invoice_per_key(url):
    service = BillingService(url, honour_keys=True)
    answers: list[tuple[int, dict]] = []

    def client(n: int) -> None:
        for i in range(6):
            key = "shared-key" if i == 0 else f"key-{n}-{i}"
            answers.append(service.create_invoice({**ORDER, "idempotency_key": key}))

    try:
        threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sorted(status for status, _ in answers) == [200] * 3 + [201] * 21, answers
        numbers = [int(i["invoice_id"].removeprefix("INV-")) for i in service.invoices()]
        assert numbers == list(range(9, 9 + 21)), "every number once, in order, none skipped"
        shared = {i["invoice_id"] for _, i in answers if i["idempotency_key"] == "shared-key"}
        assert len(shared) == 1
    finally:
        service.close()


def test_the_billing_command_reads_the_url_from_the_environment(url, tmp_path):
    env = {**os.environ, URL_VARIABLE: url, "PYTHONPATH": str(ROOT)}
    env.pop("COURSE_TEST_TMPDIR", None)
    command = [sys.executable, "-m", "course.worlds.billing_http", "serve", "--port", "0"]
    with subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True) as process:
        try:
            line = process.stdout.readline()               # a state: the service says it listens
            assert line.startswith("billing listening on 127.0.0.1:"), line
            from course.worlds import BillingClient

            client = BillingClient(int(line.rsplit(":", 1)[1]))
            assert client.create_invoice(ORDER)["invoice_id"] == "INV-9"
        finally:
            process.terminate()
            process.wait(30)
    service = BillingService(url)
    try:
        assert [i["invoice_id"] for i in service.invoices()] == ["INV-9"]   # kept on the server
    finally:
        service.close()
    no_db = {k: v for k, v in env.items() if k != URL_VARIABLE}
    refused = subprocess.run(command, env=no_db, cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and URL_VARIABLE in refused.stderr
