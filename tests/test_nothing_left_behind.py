"""Nothing is left behind: every chapter's flows run, then no child process, listening port, thread or
temporary folder of theirs is still there.

The flows: the crash scenario and the crash matrix (chapter 05), the ledger race,
the billing service in its own process (a normal stop, a service that ignores
SIGTERM, a service that cannot start), Agent-427's episodes (chapter 03), the demo
tree and the open witness (chapter 01), an audit log on disk (chapter 07), and a
scheduler round (chapter 08). Children are read from /proc (every process whose
parent is this one, zombies included); listening ports are the LISTEN sockets in
/proc/net/tcp* whose inode is one of this process's descriptors; temporary folders
are whatever appears in a private temporary directory the flows are pointed at.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import toolkit as tk

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


# ------------------------------------------------------------------ what is left
def children() -> dict[int, str]:
    """Every process whose parent is this one: pid -> command line (zombies show as ``<zombie>``)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) != os.getpid():
                continue
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found[int(entry)] = cmd.strip() or ("<zombie>" if fields[0] == "Z" else "?")
        except (OSError, ValueError):
            continue                                  # it ended while we looked
    return found


def listening_ports() -> set[int]:
    """The TCP ports in LISTEN state whose socket is one of this process's open descriptors."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in mine:
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.is_alive()}


def settled(look, expected, seconds=5.0):
    """What ``look()`` finds once it matches ``expected``, or after ``seconds`` (threads end a moment late)."""
    deadline = time.monotonic() + seconds
    found = look()
    while found != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        found = look()
    return found


@pytest.fixture()
def private_tmp(monkeypatch):
    """Point every ``tempfile`` call of this process (and of the children it forks) at a private folder."""
    folder = tempfile.mkdtemp(prefix="left-behind-")
    monkeypatch.setattr(tempfile, "tempdir", folder)
    monkeypatch.setenv("TMPDIR", folder)
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------ the flows
def crash_flows() -> None:
    from course.worlds import crash_matrix, run_scenario

    assert run_scenario("naive", "after_effect_before_ledger")["invoice_count"] == 2
    assert run_scenario("keyed", "after_ledger", durable=False)["invoice_count"] == 1
    assert run_scenario("naive", "none", durable=False)["invoice_count"] == 1      # a process that lived
    rows = crash_matrix(points=("before_send", "after_effect_before_ledger"))
    assert [r["naive"] for r in rows] == [1, 2]


def race_flows() -> None:
    from course.worlds import race

    for mode in ("atomic", "external"):
        outcome = race(processes=3, keys=6, mode=mode)
        assert outcome["effects_per_key"] == [1] and outcome["exit_codes"] == [0, 0, 0]


def billing_flows(folder: Path) -> None:
    from course.worlds import BillingClient, start

    with start(folder / "billing.db", honour_keys=True) as service:
        client = BillingClient(service.port)
        args = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", "idempotency_key": "k1"}
        assert client.create_invoice(args)["invoice_id"] == client.create_invoice(args)["invoice_id"]
    stubborn = start(folder / "billing.db")
    stubborn.process.terminate = lambda: None           # a child that ignores SIGTERM
    stubborn.stop(wait=0.2)
    assert stubborn.exitcode is not None
    with pytest.raises(RuntimeError, match="did not start"):
        start(folder / "no-such-folder" / "billing.db")


def agent427_flows() -> None:
    from course.worlds import run_agent427, scenario_copy

    for _ in range(3):
        episode = run_agent427()
        assert episode.state.last.result.ok and not episode.workspace.exists()
    with scenario_copy() as workspace:
        assert run_agent427(workspace).workspace == workspace
    assert not workspace.exists()


def demo_tree_and_witness_flows() -> None:
    from course.worlds import recording_opens
    from course.worlds import REQUESTS, attempt, demo_workspace

    with demo_workspace() as tree:
        for label in REQUESTS:
            attempt(tree, label)
    assert not tree.base.exists()
    with recording_opens() as outer:                     # nested blocks, the inner one empty
        with recording_opens():
            pass
        with open(__file__, encoding="utf-8"):
            pass
    assert [o.name for o in outer] == [Path(__file__).name]


def audit_flows(folder: Path) -> None:
    from toolkit.effects import AuditLog, verify_audit_file

    with AuditLog(folder / "audit.db") as log:
        log.track(tk.request("read_file", {"path": "a"}, call_id="c1"), "agent-427").move("approved")
        anchor = log.anchor
    assert verify_audit_file(folder / "audit.db", anchor).ok


def scheduler_flows() -> None:
    from toolkit.wire import run_round

    contract = tk.Contract("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}, reads=("file:{path}",))
    host = tk.Host.of([tk.Tool(contract, lambda args, world: {"path": args["path"]})])
    report = run_round([tk.request("read_file", {"path": f"f{i}"}, call_id=f"r{i}") for i in range(6)], host)
    assert all(r.ok for r in report.results)


# ------------------------------------------------------------------ the test
def test_every_flow_cleans_up_after_itself(private_tmp):
    before = (children(), listening_ports(), threads())
    work = Path(tempfile.mkdtemp())                      # the test's own folder, inside the private one
    crash_flows()
    race_flows()
    billing_flows(work)
    agent427_flows()
    demo_tree_and_witness_flows()
    audit_flows(work)
    scheduler_flows()
    shutil.rmtree(work)
    # Only what the flows started counts: another test in this process (a browser fixture's server, say) may
    # start or end its own children meanwhile.
    def new_children():
        return {pid: cmd for pid, cmd in children().items() if pid not in before[0]}

    def new_threads():
        return threads() - before[2]

    assert settled(new_children, {}) == {}, "a child process outlived its flow"
    assert listening_ports() - before[1] == set(), "a listening socket outlived its flow"
    assert settled(new_threads, set()) == set(), "a thread outlived its flow"
    assert sorted(os.listdir(private_tmp)) == [], "a temporary folder or file outlived its flow"


def test_nested_witness_blocks_each_keep_their_own_list():
    """``recording_opens`` used to take a block's list off the stack by equality: an empty inner block's exit
    removed the (equally empty) outer list, and the outer block stopped recording."""
    from course.worlds import recording_opens

    with recording_opens() as outer:
        with recording_opens() as inner:
            pass
        with open(__file__, encoding="utf-8"):
            pass
        with recording_opens() as later:
            with open(__file__, encoding="utf-8"):
                pass
    assert [o.name for o in outer] == [Path(__file__).name] and inner == []
    assert [o.name for o in later] == [Path(__file__).name]


def test_a_hung_worker_is_killed_not_waited_for_forever():
    from course.worlds import process_context, reap

    ctx = process_context()
    worker = ctx.Process(target=time.sleep, args=(60,))
    worker.start()
    reap(worker, 0.2)                                    # the harness's join(60), made short
    assert worker.exitcode is not None and worker.exitcode < 0
    assert worker.pid not in children()
