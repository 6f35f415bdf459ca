"""Parallel calls: waves from declared resources, real concurrency, and results that cannot cross wires."""
import threading
import time

import pytest

import toolkit as tk
import toolkit.kernel.scheduler as kernel_scheduler
import toolkit.wire as sc
from toolkit._resources import canonical
from toolkit.kernel import Assembler
from course.worlds import naive_pairing

WRITE_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"], "additionalProperties": False}
READ_SCHEMA = {"type": "object",
               "properties": {"path": {"type": "string", "description": "A path relative to the workspace."}},
               "required": ["path"], "additionalProperties": False}
READ_FILE = tk.Contract("read_file", "Read a file.", READ_SCHEMA, reads=("file:{path}",))
WRITE_FILE = tk.Contract("write_file", "Replace a file.", WRITE_SCHEMA, writes=("file:{path}",), reversible=False)
CONTRACTS = {"read_file": READ_FILE, "write_file": WRITE_FILE}


def read(path, call_id):
    return tk.request("read_file", {"path": path}, call_id)


def write(path, call_id, content="x"):
    return tk.request("write_file", {"path": path, "content": content}, call_id)


class Files:
    """A workspace whose tools can be slowed down, ordered by events, and watched for overlap."""

    def __init__(self, files, delay=0.0):
        self.files, self.delay = dict(files), delay
        self.active, self.peak, self.lock = 0, 0, threading.Lock()
        self.gates: dict[str, threading.Event] = {}      # path -> event the call waits for before finishing
        self.done: dict[str, threading.Event] = {}       # path -> set when the call finishes
        self.finished: list[str] = []                     # paths, in the order the tool bodies finished

    def _enter(self):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)

    def _leave(self, path):
        with self.lock:
            self.active -= 1
            self.finished.append(path)
        self.done.setdefault(path, threading.Event()).set()

    def read(self, args, world):
        self._enter()
        try:
            time.sleep(self.delay)
            if args["path"] in self.gates:
                assert self.gates[args["path"]].wait(5)
            return {"text": self.files[args["path"]]}
        finally:
            self._leave(args["path"])

    def write(self, args, world):
        self._enter()
        try:
            time.sleep(self.delay)
            if args["path"] in self.gates:
                assert self.gates[args["path"]].wait(5)
            if args["path"].startswith("/"):
                raise tk.ToolFailure(tk.Status.REJECTED, "path_refused", "outside the workspace")
            self.files[args["path"]] = args["content"]
            return {"bytes": len(args["content"])}
        finally:
            self._leave(args["path"])

    def host(self):
        return tk.Host.of([tk.Tool(READ_FILE, self.read), tk.Tool(WRITE_FILE, self.write)])


# ---------------------------------------------------------------- planning
def test_the_chapter_table_read_read_write_write_read_write():
    plan = kernel_scheduler.schedule([read("a.txt", "r1"), read("b.txt", "r2"),            # read-read: together
                        write("c.txt", "w1"), write("c.txt", "w2"),          # write-write: in order
                        read("c.txt", "r3"), write("a.txt", "w3")], CONTRACTS)  # read-write: request order
    assert plan.waves == [["r1", "r2", "w1"], ["w2", "w3"], ["r3"]]
    rows = {r["call_id"]: r for r in plan.rows()}
    assert rows["w2"]["waits_for"] == ["w1 (write-write file:c.txt)"]
    assert rows["r3"]["waits_for"] == ["w1 (read-write file:c.txt)", "w2 (read-write file:c.txt)"]
    assert rows["w3"]["waits_for"] == ["r1 (read-write file:a.txt)"]
    assert (rows["r3"]["start"], rows["r3"]["end"]) == (2, 3) and plan.depth == 3


def test_a_read_after_a_write_waits_but_a_write_after_a_read_keeps_request_order_too():
    assert kernel_scheduler.schedule([write("cfg", "w"), read("cfg", "r")], CONTRACTS).waves == [["w"], ["r"]]
    assert kernel_scheduler.schedule([read("cfg", "r"), write("cfg", "w")], CONTRACTS).waves == [["r"], ["w"]]


def test_two_spellings_of_one_file_are_one_resource():
    plan = kernel_scheduler.schedule([write("./src//config.ts", "w1"), write("src/config.ts", "w2")], CONTRACTS)
    assert plan.waves == [["w1"], ["w2"]]
    assert canonical("file:src/../src/./a.ts") == "file:src/a.ts"


def test_what_cannot_be_analysed_is_serialized():
    calls = [read("a", "r1"), tk.request("rm_rf", {}, "u1"), read("b", "r2"),
             tk.request("read_file", '{"path": "c"', "bad"), read("d", "r3")]
    plan = kernel_scheduler.schedule(calls, CONTRACTS)
    assert plan.waves == [["r1"], ["u1"], ["r2"], ["bad"], ["r3"]]
    rows = plan.rows()
    assert rows[1]["waits_for"] == ["r1 (unknown resources)"]
    assert rows[2]["waits_for"] == ["u1 (unknown resources)"]           # r1 and r2 alone would not conflict


def test_a_missing_template_field_is_unknown_not_a_question_mark():
    assert kernel_scheduler.resources(tk.request("read_file", {"file": "a"}, "x"), READ_FILE) is None
    assert kernel_scheduler.resources(read("a", "x"), READ_FILE) == (frozenset({"file:a"}), frozenset())


def test_a_host_works_as_the_contract_source():
    files = Files({"a": "A", "b": "B"})
    plan = kernel_scheduler.schedule([read("a", "r1"), read("b", "r2")], files.host())
    assert plan.waves == [["r1", "r2"]]


def test_previews_and_shared_ids_are_refused_before_planning():
    asm = Assembler()
    asm.add(0, call_id="p", name="read_file", arguments='{"path": "sec')
    calls = [read("a", "r1"), asm.preview(0), read("b", "dup"), read("c", "dup")]
    plan = kernel_scheduler.schedule(calls, CONTRACTS)
    assert [p for p, _ in plan.refused] == [1, 2, 3]
    assert [r.reason for _, r in plan.refused] == ["not_a_call", "duplicate_call_id", "duplicate_call_id"]
    files = Files({"a": "A", "b": "B", "c": "C"})
    report = sc.run_plan(plan, files.host().execute)
    assert [r.status.value for r in report.results] == ["succeeded", "rejected", "rejected", "rejected"]
    assert files.peak == 1   # only r1 ran


# ---------------------------------------------------------------- running
def test_independent_reads_really_run_at_the_same_time():
    k = 4
    barrier = threading.Barrier(k, timeout=5)     # passes only if all k reads are inside the tool at once

    def meeting_read(args, world):
        barrier.wait()
        return {"path": args["path"]}

    host = tk.Host.of([tk.Tool(READ_FILE, meeting_read)])
    report = sc.run_round([read(f"f{i}", f"r{i}") for i in range(k)], host)
    assert [r.status for r in report.results] == [tk.Status.SUCCEEDED] * k


def test_conflicting_writes_never_overlap_and_land_in_request_order():
    files = Files({}, delay=0.02)
    calls = [write("log.txt", f"w{i}", content=str(i)) for i in range(5)]
    report = sc.run_round(calls, files.host())
    assert files.peak == 1
    assert files.files["log.txt"] == "4"                       # the last request wins, as requested
    assert report.completion_order == tuple(f"w{i}" for i in range(5))


def test_results_come_back_in_call_order_with_partial_success():
    files = Files({"a": "A", "b": "B"})
    calls = [read("a", "r1"), read("b", "r2"), write("/etc/passwd", "w1")]
    report = sc.run_round(calls, files.host())
    assert [r.call_id for r in report.results] == ["r1", "r2", "w1"]
    assert [r.status.value for r in report.results] == ["succeeded", "succeeded", "rejected"]
    assert report.summary() == "3 calls in 1 wave: 2 succeeded, 1 rejected"
    assert report.rows()[2] == {"call_id": "w1", "wave": 0, "status": "rejected", "reason": "path_refused"}


def test_a_tool_that_raises_fails_alone():
    def explode(args, world):
        raise RuntimeError("secret token abc123 leaked in a message")

    host = tk.Host.of([tk.Tool(READ_FILE, explode), tk.Tool(WRITE_FILE, Files({}).write)])
    report = sc.run_round([read("a", "r1"), write("b", "w1")], host)
    failed, ok = report.results
    assert failed.status is tk.Status.FAILED and failed.reason == "execution_failed"
    assert "abc123" not in failed.errors[0].message          # the exception's text is not passed on
    assert ok.ok


def test_cancel_dependents_stops_calls_waiting_on_a_failure():
    files = Files({"a": "A"})
    calls = [write("/abs", "w1"), read("/abs", "r1"), read("a", "r2")]
    report = sc.run_round(calls, files.host(), cancel_dependents=True)
    assert [r.status.value for r in report.results] == ["rejected", "cancelled", "succeeded"]
    assert "w1 failed" in report.results[1].errors[0].message
    default = sc.run_round(calls, Files({"a": "A"}).host())   # without the flag the host lets it run
    assert default.results[1].status.value == "failed"


# ------------------------------------------------------------ crossed wires
def crossed_round():
    """The chapter's round: read A, read B, write C; C fails first, then B, then A finishes."""
    files = Files({"A": "contents of A", "B": "contents of B"})
    files.gates["B"] = files.done.setdefault("/C", threading.Event())
    files.gates["A"] = files.done.setdefault("B", threading.Event())
    calls = [read("A", "call_A"), read("B", "call_B"), write("/C", "call_C")]
    return calls, files


def test_naive_pairing_files_the_write_failure_under_the_read():
    calls, files = crossed_round()
    report = sc.run_round(calls, files.host())
    assert files.finished == ["/C", "B", "A"]                    # the reverse of request order
    arrived = [report.by_id()[call_id] for call_id in ("call_C", "call_B", "call_A")]
    naive = naive_pairing(calls, arrived)
    # the model is told reading A failed, and that writing C returned A's contents: soup
    assert naive["call_A"].status is tk.Status.REJECTED and naive["call_A"].call_id == "call_C"
    assert naive["call_C"].ok and naive["call_C"].output == {"text": "contents of A"}
    # pairing by id cannot make that mistake, whatever the arrival order
    paired, problems = sc.pair_results(calls, arrived)
    assert problems == []
    assert paired["call_A"].output == {"text": "contents of A"} and paired["call_C"].reason == "path_refused"
    assert [r.call_id for r in report.results] == ["call_A", "call_B", "call_C"]


def test_an_executor_that_crosses_results_is_caught():
    calls, files = crossed_round()
    host = files.host()
    finished = []
    lock = threading.Lock()

    def reconciling_executor(call):
        """Runs the call, then hands back 'the latest result', as a position-based reconciler would."""
        result = host.execute(call)
        with lock:
            finished.append(result)
            return finished[len(finished) - 1 if call.call_id == "call_C" else 0]

    report = sc.run_round(calls, CONTRACTS, reconciling_executor)
    by_id = report.by_id()
    assert by_id["call_C"].status is tk.Status.REJECTED                   # its own result: accepted
    for call_id in ("call_A", "call_B"):                                  # handed C's result: refused
        result = by_id[call_id]
        assert result.reason == "call_id_mismatch" and result.status is tk.Status.FAILED
        assert result.errors[0].received == "call_C" and result.errors[0].expected == call_id


def test_pair_results_reports_missing_duplicate_and_orphan():
    calls = [read("a", "c1"), read("b", "c2"), read("c", "c3")]
    results = [tk.ToolResult("c1", tk.Status.SUCCEEDED), tk.ToolResult("c1", tk.Status.SUCCEEDED),
               tk.ToolResult("zz", tk.Status.SUCCEEDED), tk.ToolResult("c3", tk.Status.FAILED)]
    paired, problems = sc.pair_results(calls, results)
    assert sorted(paired) == ["c1", "c3"]
    assert [(e.code, e.received) for e in problems] == [("duplicate_result", "c1"), ("orphan_result", "zz"),
                                                          ("missing_result", "none")]
    assert "c2" in problems[2].message


def test_verify_refuses_a_non_result():
    out = sc.verify(read("a", "c1"), {"status": "succeeded"})
    assert out.reason == "execution_failed" and out.call_id == "c1"


@pytest.mark.parametrize("k", [3, 6])
def test_wall_time_reads_overlap_and_writes_queue(k):
    files = Files({f"f{i}": "x" for i in range(k)}, delay=0.1)
    host = files.host()
    host.check(read("f0", "warm"))                                       # compile the schemas first
    host.check(write("f0", "warm"))
    reads = sc.run_round([read(f"f{i}", f"r{i}") for i in range(k)], host)
    writes = sc.run_round([write("same", f"w{i}") for i in range(k)], host)
    assert reads.elapsed < 0.1 * k * 0.75
    assert writes.elapsed >= 0.1 * k * 0.95


def test_two_reads_of_the_same_resource_share_a_wave():
    plan = kernel_scheduler.schedule([read("config.json", "r1"), read("./config.json", "r2")], CONTRACTS)
    assert plan.waves == [["r1", "r2"]] and [s.waits_for for s in plan.steps] == [(), ()]
    assert plan.steps[0].reads == plan.steps[1].reads == frozenset({"file:config.json"})
    then_write = kernel_scheduler.schedule([read("config.json", "r1"), read("config.json", "r2"),
                                            write("config.json", "w1")], CONTRACTS)
    assert then_write.waves == [["r1", "r2"], ["w1"]]
