"""The billing service as its own process, and the duplicate-invoice trace with a process that really dies."""
import http.client
import json
import multiprocessing
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from course.worlds import (CRASH_POINTS, KEY, MAX_BODY, MODES, ORDER, BillingClient, BillingService, crash_matrix,
                            GuardedRun, guarded_run, matrix_table, run_scenario, start)
from toolkit.kernel import Status, ToolFailure

#: The chapter's five lines, as written there.
SEED_TRACE = [
    "t0  agent sends create_invoice(order-431, key=invoice:order-431:v1)",
    "t1  billing service creates invoice INV-9",
    "t2  process crashes before local ledger records the key",
    "t3  agent retries without an external idempotency guarantee",
    "t4  billing service creates INV-10 for the same order",
]


# --------------------------------------------------------------------------- the trace

def test_naive_run_reproduces_the_seed_trace():
    outcome = run_scenario("naive", "after_effect_before_ledger")
    assert outcome["crashed"], "the first agent process must really die"
    assert outcome["trace"] == SEED_TRACE
    assert outcome["invoice_count"] == 2
    assert outcome["invoices"] == ["INV-9 order-431", "INV-10 order-431"]
    assert outcome["after_crash"] == {"invoices": ["INV-9 order-431"], "ledger": []}, \
        "at t2 the invoice exists and the local ledger has no entry: that gap is the duplicate"


def test_atomic_crash_rolls_back_invoice_and_ledger_together():
    outcome = run_scenario("atomic", "after_effect_before_ledger")
    assert outcome["crashed"]
    assert outcome["after_crash"] == {"invoices": [], "ledger": []}, "the uncommitted invoice must vanish"
    assert outcome["invoices"] == ["INV-9 order-431"]
    assert outcome["ledger"] == [f"{KEY} done INV-9"]
    assert "rolls back" in outcome["trace"][2]


def test_keyed_billing_returns_inv9_on_retry_and_settles_the_pending_entry():
    outcome = run_scenario("keyed", "after_effect_before_ledger")
    assert outcome["after_crash"]["ledger"] == [f"{KEY} pending"], "the crash must leave a visible pending entry"
    assert outcome["trace"][-1] == "t4  billing service recognizes the key and returns INV-9"
    assert outcome["invoices"] == ["INV-9 order-431"]
    assert outcome["ledger"] == [f"{KEY} done INV-9"]


def test_crash_matrix_duplicates_only_where_the_chapter_says():
    rows = crash_matrix()
    table = {row["crash_at"]: row for row in rows}
    assert list(table) == list(CRASH_POINTS)
    for point, row in table.items():
        for mode in MODES:
            expected = 2 if (mode, point) == ("naive", "after_effect_before_ledger") else 1
            assert row[mode] == expected, f"{mode} with a crash at {point}: {row[mode]} invoices, expected {expected}"
    text = matrix_table(rows)
    assert text.splitlines()[0].split() == ["crash", "point", "naive", "atomic", "keyed"]


def test_no_crash_retry_is_answered_by_the_ledger():
    outcome = run_scenario("naive", "none")
    assert not outcome["crashed"]
    assert outcome["trace"][-1] == "t3  local ledger replays INV-9; billing is not called"


def test_results_carry_no_machine_paths():
    outcome = run_scenario("keyed", "before_send")
    text = json.dumps(outcome)
    assert tempfile.gettempdir() not in text and "/" not in text


def test_unknown_mode_or_point_is_refused():
    with pytest.raises(ValueError, match="mode"):
        run_scenario("optimistic")
    with pytest.raises(ValueError, match="crash_at"):
        run_scenario("naive", "t7")
    with pytest.raises(ValueError, match="billing's database"):
        run_scenario("atomic", "none", durable=False)


# --------------------------------------------------------------------------- a ledger in the agent's memory

def test_a_ledger_in_memory_dies_with_the_process():
    outcome = run_scenario("naive", "after_ledger", durable=False)
    assert outcome["crashed"] and outcome["invoice_count"] == 2
    assert outcome["trace"][2] == ("t2  process crashes after local ledger records the key, before it replies; "
                                   "the ledger it kept in memory died with the process")
    assert outcome["after_crash"] == {"invoices": ["INV-9 order-431"], "ledger": []}, "nothing was on disk"


def test_a_living_process_answers_its_retry_from_memory():
    outcome = run_scenario("naive", "none", durable=False)
    assert not outcome["crashed"] and outcome["invoice_count"] == 1
    assert outcome["trace"][-1] == "t3  local ledger replays INV-9; billing is not called"


@pytest.mark.parametrize("durable", [True, False])
def test_memory_or_disk_the_counts_follow_the_ledger_rule(durable):
    for point in CRASH_POINTS:
        for mode in ("naive", "keyed"):
            key_lost = point == "after_effect_before_ledger" or (not durable and point == "after_ledger")
            expected = 2 if mode == "naive" and key_lost else 1
            assert run_scenario(mode, point, durable=durable)["invoice_count"] == expected, (mode, point, durable)
    assert multiprocessing.active_children() == [], "every run ends its processes"


def test_guards_choose_the_run():
    assert guarded_run(True, False, False, "after_ledger") == GuardedRun("naive", "after_ledger", True, ())
    memory = guarded_run(False, False, True, "after_ledger")
    assert (memory.mode, memory.crash_at, memory.durable, memory.notes) == ("keyed", "after_ledger", False, ())
    assert "memory" in memory.agent
    atomic = guarded_run(False, True, True, "none")
    assert (atomic.mode, atomic.durable, len(atomic.notes)) == ("atomic", True, 2)
    with pytest.raises(ValueError, match="crash point"):
        guarded_run(True, False, False, "t7")


# --------------------------------------------------------------------------- the billing service

GOOD = dict(ORDER)


def test_billing_numbers_and_honours_keys(tmp_path):
    plain = BillingService(tmp_path / "plain.db")
    assert [plain.create_invoice(GOOD)[1]["invoice_id"] for _ in range(2)] == ["INV-9", "INV-10"]
    keyed = BillingService(tmp_path / "keyed.db", honour_keys=True)
    first, again = keyed.create_invoice(GOOD), keyed.create_invoice(json.dumps(GOOD))
    assert (first[0], first[1]["invoice_id"]) == (201, "INV-9")
    assert (again[0], again[1]["invoice_id"], again[1]["replayed"]) == (200, "INV-9", True)
    status, body = keyed.create_invoice({**GOOD, "amount": 5})
    assert status == 409 and body["errors"][0]["code"] == "idempotency_conflict"
    assert len(keyed.invoices()) == 1 and keyed.find(KEY)["invoice_id"] == "INV-9" and keyed.find("nope") is None


@pytest.mark.parametrize("raw, code, pointer", [
    ("{", "invalid_json", "$"),
    ('{"a": 1, "a": 2}', "invalid_json", "$"),
    ("[1]", "not_an_object", "$"),
    ({**GOOD, "amount": "120"}, "wrong_type", "$.amount"),
    ({**GOOD, "amount": 0}, "range", "$.amount"),
    ({**GOOD, "order_id": "order-431\n"}, "pattern", "$.order_id"),
    ({k: v for k, v in GOOD.items() if k != "currency"}, "missing_required", "$.currency"),
])
def test_billing_refuses_bad_requests_and_creates_nothing(tmp_path, raw, code, pointer):
    service = BillingService(tmp_path / "b.db")
    status, body = service.create_invoice(raw)
    assert status == 400
    assert (body["errors"][0]["code"], body["errors"][0]["pointer"]) == (code, pointer)
    assert service.invoices() == []


def test_billing_over_http_in_its_own_process(tmp_path):
    with start(tmp_path / "b.db", honour_keys=True) as service:
        client = BillingClient(service.port)
        assert client.create_invoice(GOOD)["invoice_id"] == "INV-9"
        assert client.create_invoice(GOOD)["replayed"] is True
        with pytest.raises(ToolFailure) as refused:
            client.create_invoice({**GOOD, "order_id": "order-432"})
        assert refused.value.status is Status.REJECTED and refused.value.reason == "idempotency_conflict"
        assert client.find(KEY)["invoice_id"] == "INV-9" and client.find("missing") is None
        assert [i["invoice_id"] for i in client.invoices()] == ["INV-9"]
        connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=5)
        connection.request("POST", "/invoices", body=b"x" * (MAX_BODY + 1))
        assert connection.getresponse().status == 413
        connection.close()
        cut = socket.create_connection(("127.0.0.1", service.port), timeout=5)
        cut.sendall(b"POST /invoices HTTP/1.0\r\nContent-Length: 100\r\n\r\n{\"order_id\"")
        cut.shutdown(socket.SHUT_WR)             # the stream is cut mid-body: the service hangs up
        assert cut.recv(4096) == b""
        cut.close()
        assert [i["invoice_id"] for i in client.invoices()] == ["INV-9"], "a cut request creates nothing"
        connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=5)
        connection.request("GET", "/admin")
        response = connection.getresponse()
        assert response.status == 404 and json.loads(response.read())["errors"][0]["code"] == "not_found"
        connection.close()
    assert service.exitcode is not None, "stop() must end the service process"
    with pytest.raises(ToolFailure) as down:
        BillingClient(service.port, timeout=1).create_invoice(GOOD)
    assert down.value.status is Status.RECOVERABLE_FAILURE, "nothing was sent, so a retry is safe"


def test_command_line_service_binds_loopback(tmp_path):
    """The service runs as a plain separate program (requests here avoid the schema check's slow first import)."""
    process = subprocess.Popen([sys.executable, "-m", "course.worlds.billing_http", "serve", "--db", str(tmp_path / "b.db"),
                                "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("billing listening on 127.0.0.1:")
        client = BillingClient(int(line.rsplit(":", 1)[1]))
        assert client.invoices() == []
        connection = http.client.HTTPConnection("127.0.0.1", client.port, timeout=5)
        connection.request("POST", "/invoices", body=b"{", headers={"Content-Length": "1"})
        body = json.loads(connection.getresponse().read())
        connection.close()
        assert body["errors"][0]["code"] == "invalid_json" and client.invoices() == []
    finally:
        process.terminate()
        process.wait(5)
        process.stdout.close()



def test_a_stopped_command_does_not_wait_for_a_client_that_says_nothing(tmp_path):
    """SIGTERM stops the command even while an idle client holds a request thread (a hub stops its services so)."""
    import signal

    from course.worlds import IDLE_TIMEOUT
    from course.worlds.billing_http import STOP_GRACE

    assert STOP_GRACE < IDLE_TIMEOUT
    process = subprocess.Popen([sys.executable, "-m", "course.worlds.billing_http", "serve", "--db",
                                str(tmp_path / "b.db"), "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline().strip().rsplit(":", 1)[1])
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)   # connects, then sends nothing
        client = BillingClient(port)
        client.invoices()                       # the service answers others meanwhile
        process.send_signal(signal.SIGTERM)
        code = process.wait(STOP_GRACE + 3)     # not the idle client's IDLE_TIMEOUT
        idle.close()
        assert code in (0, -signal.SIGALRM), code
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
        process.stdout.close()

# --------------------------------------------------------------------------- under load and under attack

def idle_sockets(port, n):
    """``n`` clients that connect and say nothing (each holds a connection slot until it is closed)."""
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(n)]


def test_idle_sockets_do_not_hold_up_a_request(tmp_path):
    """Three silent clients used to queue a request behind 3 x 5 s; a client giving up at 2 s saw a timeout and
    the invoice was created after it had given up."""
    with start(tmp_path / "b.db", honour_keys=True) as service:
        silent = idle_sockets(service.port, 3)
        try:
            invoice = BillingClient(service.port, timeout=2).create_invoice(GOOD)   # well under one idle timeout
        finally:
            for s in silent:
                s.close()
        assert invoice["invoice_id"] == "INV-9"
        assert [i["invoice_id"] for i in BillingClient(service.port).invoices()] == ["INV-9"]


def dribbling_sockets(port, n, stop):
    """``n`` clients that each send one byte of a request head a second until ``stop`` is set or
    they are cut off; returns the threads and the list of those the service cut off."""
    cut = []

    def dribble():
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            try:
                for byte in b"POST /invoices HTTP/1.1\r\nHost: x\r\n" * 10:
                    sock.sendall(bytes([byte]))
                    if stop.wait(1.0):
                        return
            except OSError:
                cut.append(1)                            # the service closed the socket
    threads = [threading.Thread(target=dribble) for _ in range(n)]
    for thread in threads:
        thread.start()
    return threads, cut


def test_dribbling_clients_do_not_hold_up_real_requests_and_are_cut_off(tmp_path):
    """32 sockets that each send one header byte a second used to take every connection slot (0 of
    30 requests served in 30 s): now each is cut off after ``IDLE_TIMEOUT`` s in all, and real
    requests are served meanwhile."""
    from course.worlds import IDLE_TIMEOUT

    stop = threading.Event()
    with start(tmp_path / "b.db", honour_keys=True) as service:
        threads, cut = dribbling_sockets(service.port, 32, stop)
        try:
            client = BillingClient(service.port, timeout=10)
            orders = [{**GOOD, "order_id": f"order-{n}", "idempotency_key": f"k{n}"}
                      for n in range(30)]
            served = [client.create_invoice(order) for order in orders]
            deadline = time.monotonic() + IDLE_TIMEOUT + 30
            while len(cut) < 32 and time.monotonic() < deadline:     # each is cut on its deadline
                time.sleep(0.2)
        finally:
            stop.set()
            for thread in threads:
                thread.join(15)
        assert [i["invoice_id"] for i in served] == [f"INV-{n}" for n in range(9, 39)]
        assert len(cut) == 32, f"{len(cut)} of 32 dribbling clients were cut off"
        assert len(client.invoices()) == 30


def test_concurrent_requests_keep_the_books_in_order(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with start(tmp_path / "b.db", honour_keys=True) as service:
        client = BillingClient(service.port)
        orders = [{**GOOD, "order_id": f"order-{n}", "idempotency_key": f"k{n}"} for n in range(40)]
        with ThreadPoolExecutor(8) as pool:
            made = list(pool.map(client.create_invoice, orders))
            same_key = list(pool.map(client.create_invoice, [GOOD] * 16))
        numbers = sorted(int(i["invoice_id"].split("-")[1]) for i in made)
        assert numbers == list(range(9, 49))                            # every number once, none skipped
        assert len({i["invoice_id"] for i in same_key}) == 1            # one key, one invoice, 16 answers
        assert len(client.invoices()) == 41


@pytest.mark.parametrize("amount, code", [(10**9 + 1, "range"), (10**300, "range"), (1e300, "range"),
                                          (10**400, None), (-(10**400), None), ("9" * 400, None)],
                         ids=["1e9+1", "10**300", "1e300", "10**400", "-10**400", "400 nines"])
def test_an_amount_too_large_to_book_is_a_structured_refusal(tmp_path, amount, code):
    """Past ``MAX_AMOUNT`` the service refuses (``range``); past a double, the schema layer already does."""
    service = BillingService(tmp_path / "b.db")
    raw = json.dumps({**GOOD, "amount": 0}).replace('"amount": 0', f'"amount": {amount}')
    for request in ({**GOOD, "amount": amount}, raw):
        status, body = service.create_invoice(request)
        assert status == 400 and body["errors"] and len(json.dumps(body)) < 2000
        assert code is None or body["errors"][0]["code"] == code
    assert service.invoices() == []
    service.close()


def test_the_client_tells_a_refusal_from_no_answer(tmp_path):
    with start(tmp_path / "b.db") as service:
        client = BillingClient(service.port, timeout=2)
        with pytest.raises(ToolFailure) as huge:                        # the service answers 400: nothing happened
            client.create_invoice({**GOOD, "amount": 10**400})
        assert huge.value.status is Status.REJECTED and "nothing was sent" not in huge.value.message
        with pytest.raises(ToolFailure) as unsendable:                  # cannot even be encoded: nothing was sent
            client.create_invoice({**GOOD, "amount": 10**5000})
        assert unsendable.value.status is Status.REJECTED and "nothing was sent" in unsendable.value.message
        assert client.invoices() == []
    deaf = socket.socket()                                             # listens, never answers
    deaf.bind(("127.0.0.1", 0))
    deaf.listen(1)
    try:
        with pytest.raises(ToolFailure) as silent:
            BillingClient(deaf.getsockname()[1], timeout=0.3).create_invoice(GOOD)
    finally:
        deaf.close()
    assert silent.value.status is Status.TIMEOUT and "unknown" in silent.value.message


def test_an_unexpected_error_inside_the_service_is_a_500_that_created_nothing(tmp_path, monkeypatch):
    import course.worlds.billing_service as billing

    service = BillingService(tmp_path / "b.db")

    def broken(*args, **kwargs):
        raise OverflowError("int too large to convert to float")
    monkeypatch.setattr(billing, "issue_invoice", broken)
    status, body = service.create_invoice(GOOD)
    assert status == 500 and body["errors"][0]["code"] == "service_error" and "OverflowError" not in json.dumps(body)
    assert service.invoices() == []
    service.close()


def test_a_service_that_ignores_sigterm_is_killed(tmp_path):
    service = start(tmp_path / "b.db")
    service.process.terminate = lambda: None                          # as if the child ignored SIGTERM
    service.stop(wait=0.2)
    assert service.exitcode is not None and service.exitcode < 0       # ended by a signal: SIGKILL
    assert multiprocessing.active_children() == []
