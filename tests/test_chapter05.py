"""Chapter 5, the ledger rule and the duplicate invoice: the rule's numbers, a ledger that survives a reopen,
the real-crash trace and its two repairs, the crash matrix, racing processes, conflicts and in-progress keys,
the timeout rules, the invoice panel driven from plain Python, the chapter's core path and deep dives, and the
exercise harness (played side by side, its race, its platform check)."""
import html
import ast
import multiprocessing
import re
from pathlib import Path

import nbformat
import pytest

import toolkit as tk
from course.worlds import ScriptedPolicy
from course.worlds import CREATE_INVOICE, Books
from course.worlds import (CRASH_POINTS, KEY, ORDER, crash_matrix, create_issue_illustration, matrix_table, race,
                            run_scenario, run_scenarios)
from toolkit.kernel import ledger_key
from toolkit.kernel import LedgerStatus
from course.present import invoice_panel
from course.present.invoice_panel import CRASH_CHOICES, InvoicePanel, matrix_html
from course.worlds.advice import SAFEGUARDS, WHEN_TO_USE
from course.worlds import RetryKind, classify_retry, compensation_table

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "05_ledger_and_duplicate_invoice.ipynb"
SOLUTION = ROOT / "solutions" / "05_atomic_ledger.ipynb"

#: The duplicate-invoice trace, line for line as the book writes it.
TRACE = [
    "t0  agent sends create_invoice(order-431, key=invoice:order-431:v1)",
    "t1  billing service creates invoice INV-9",
    "t2  process crashes before local ledger records the key",
    "t3  agent retries without an external idempotency guarantee",
    "t4  billing service creates INV-10 for the same order",
]


def new_books() -> Books:
    return Books(orders={"order-431": {"approved": True}, "order-432": {"approved": True}})


def shown_count(text: str) -> int:
    """The invoice count on the panel's last line, read back from the text."""
    last = text.splitlines()[-1]
    assert last.startswith("invoices for order-431: "), last
    return int(last.split(": ")[1].split()[0])


# ------------------------------------------------------------------ the rule's numbers
def test_ledger_rule_two_branches_with_the_chapter_numbers():
    books = new_books()
    L0: dict = {}
    L1, first = tk.invoke(books.issue, ORDER, "invoice-431", L0)
    assert (len(L0), len(L1), len(books.invoices)) == (0, 1, 1), "first call: one effect, ledger 0 -> 1 entry"
    L2, again = tk.invoke(books.issue, ORDER, "invoice-431", L1)
    assert (len(L2), len(books.invoices)) == (1, 1), "retry: still 1 entry and 1 visible invoice, not 2"
    assert again == first and first["invoice_id"] == "INV-9"
    ledger = tk.MemoryLedger()
    statuses = [ledger.call("invoice-431", books.issue, ORDER, tool="create_invoice").status for _ in range(2)]
    assert statuses == [LedgerStatus.RAN, LedgerStatus.REPLAYED] and len(ledger) == 1


@pytest.mark.parametrize("times", [1, 2, 5])
def test_at_least_once_delivery_through_a_ledger_is_one_effect(times):
    straight, keyed, ledger = new_books(), new_books(), tk.MemoryLedger()
    for _ in range(times):
        straight.issue(ORDER)
        ledger.invoke(KEY, keyed.issue, ORDER)
    assert len(straight.invoices) == times and len(keyed.invoices) == 1


def test_memory_ledger_forgets_at_a_restart_and_sqlite_survives_a_reopen(tmp_path):
    books = new_books()
    tk.MemoryLedger().call(KEY, books.issue, ORDER, tool="create_invoice")
    assert tk.MemoryLedger().call(KEY, books.issue, ORDER, tool="create_invoice").status is LedgerStatus.RAN
    assert len(books.invoices) == 2, "a restarted in-memory ledger lets the retry make a second invoice"
    books = new_books()
    with tk.DurableLedger(tmp_path / "ledger.db") as ledger:
        first = ledger.call(KEY, books.issue, ORDER, tool="create_invoice")
    with tk.DurableLedger(tmp_path / "ledger.db") as ledger:
        again = ledger.call(KEY, books.issue, ORDER, tool="create_invoice")
        assert again.status is LedgerStatus.REPLAYED and again.result == first.result
        assert len(ledger) == 1 and [e["state"] for e in ledger.entries()] == ["done"]
    assert [i["invoice_id"] for i in books.invoices] == ["INV-9"]


# ------------------------------------------------------------------ the trace and the repairs, through the panel
def test_panel_starts_at_the_five_line_trace_with_two_invoices():
    panel = InvoicePanel()
    lines = panel.text().splitlines()
    start = lines.index(TRACE[0])
    assert lines[start:start + 5] == TRACE, "the panel must show the five trace lines, from a real run"
    assert panel.outcome["crashed"], "the first agent process must really be killed"
    assert panel.invoice_count == 2 == shown_count(panel.text())
    assert "INV-9, INV-10" in lines[-1] and "just after the crash: invoices INV-9; ledger (empty)" in lines


def test_both_repairs_turn_two_invoices_into_one():
    panel = InvoicePanel()
    assert shown_count(panel.text()) == 2
    atomic = panel.set(atomic=True)
    assert shown_count(atomic) == 1 and "rolls back, invoice included" in atomic
    keyed = panel.set(atomic=False, honours=True)
    assert shown_count(keyed) == 1 and "billing service recognizes the key and returns INV-9" in keyed
    assert "ledger invoice:order-431:v1 pending" in keyed, "the keyed crash leaves a visible pending row"


def test_durable_key_fixes_the_crash_after_the_ledger_write_but_not_before_it():
    panel = InvoicePanel(durable=False, crash="after_ledger")
    assert shown_count(panel.text()) == 2 and "the ledger it kept in memory died with the process" in panel.text()
    assert "ledger (in memory: gone with the process)" in panel.text()
    assert shown_count(panel.set(durable=True)) == 1, "on disk the key survives: 2 -> 1"
    assert shown_count(panel.set(crash="after_effect_before_ledger")) == 2, "durable alone cannot close the gap"
    assert shown_count(panel.set(atomic=True)) == 1


@pytest.mark.parametrize("durable", [True, False])
@pytest.mark.parametrize("atomic", [True, False])
@pytest.mark.parametrize("honours", [True, False])
def test_every_setting_counts_what_the_ledger_rule_predicts(durable, atomic, honours):
    """Duplicates exactly when neither repair is on and the key is not safe when the process dies."""
    for point in CRASH_POINTS:
        panel = InvoicePanel(durable=durable, atomic=atomic, honours=honours, crash=point)
        key_lost = point == "after_effect_before_ledger" or (not durable and point == "after_ledger")
        expected = 2 if (not atomic and not honours and key_lost) else 1
        assert panel.invoice_count == expected == shown_count(panel.text()), \
            f"durable={durable}, atomic={atomic}, honours={honours}, crash at {point}: expected {expected}"
        chosen = panel.run
        assert chosen.mode == ("atomic" if atomic else "keyed" if honours else "naive")
        assert (chosen.crash_at, chosen.durable) == (point, durable or atomic), "the setting is played as it is"
        assert panel.text().splitlines()[1:2 + len(chosen.notes)] == [chosen.agent, *chosen.notes], \
            "the panel says what the agent does, in the scenario's words"


def test_dropdown_offers_the_toolkit_points_and_no_crash():
    assert [value for _, value in CRASH_CHOICES] == list(CRASH_POINTS)
    assert dict(CRASH_CHOICES)["no crash"] == "none"
    panel = InvoicePanel(crash="no crash")
    assert panel.crash.value == "none" and "| no crash" in panel.text().splitlines()[0]
    assert not panel.outcome["crashed"] and shown_count(panel.text()) == 1


def test_runs_are_cached_and_set_runs_once(monkeypatch):
    calls = []
    real = invoice_panel.run_scenario

    def counting(mode, crash_at, durable=True):
        calls.append((mode, crash_at, durable))
        return real(mode, crash_at, durable=durable)

    monkeypatch.setattr(invoice_panel, "run_scenario", counting)
    invoice_panel.clear_cache()
    try:
        panel = InvoicePanel()
        panel.set(durable=False, atomic=True, honours=True, crash="after_ledger")
        assert calls == [("naive", "after_effect_before_ledger", True), ("atomic", "after_ledger", True)], \
            "a set(...) that changes four controls must run one scenario, not four"
        panel.set(durable=True, atomic=False, honours=False, crash="after_effect_before_ledger")
        InvoicePanel()
        assert len(calls) == 2, "a setting seen before is served from the cache"
    finally:
        invoice_panel.clear_cache()


def test_the_panel_speaks_of_the_scenario_not_of_the_toolkit():
    for setting in ({}, {"atomic": True, "durable": False, "honours": True}, {"honours": True, "crash": "none"}):
        text = InvoicePanel(**setting).text()
        for line in text.splitlines():
            assert not line.startswith(("run:", "note:")), line
        assert "toolkit" not in text and " agent, " not in text and "mode" not in text
        assert "the agent " in text.splitlines()[1]


def test_the_panel_matrix_reuses_what_it_showed_and_plays_the_rest_once(monkeypatch):
    played = []
    real = invoice_panel.crash_matrix

    def counting(*args, **kwargs):
        before = set(kwargs["played"])
        rows = real(*args, **kwargs)
        played.extend(set(kwargs["played"]) - before)
        return rows

    monkeypatch.setattr(invoice_panel, "crash_matrix", counting)
    invoice_panel.clear_cache()
    try:
        panel = InvoicePanel()                      # plays naive, after_effect_before_ledger, on disk
        rows = panel.matrix()
        assert len(played) == 15 and ("naive", "after_effect_before_ledger", True) not in played
        assert panel.matrix() == rows and len(played) == 15, "a second matrix plays nothing"
        assert {r["crash_at"]: r["in memory"] for r in rows}["after_ledger"] == 2
        assert shown_count(panel.set(durable=False, crash="after_ledger")) == 2
    finally:
        invoice_panel.clear_cache()


def test_runs_played_side_by_side_are_the_runs_played_alone():
    settings = [("naive", "after_effect_before_ledger", True), ("keyed", "after_ledger", False),
                ("atomic", "after_effect_before_ledger", True), ("naive", "none", False)]
    together = run_scenarios(settings)
    alone = [run_scenario(mode, point, durable=durable) for mode, point, durable in settings]
    assert together == alone
    assert [o["invoice_count"] for o in together] == [2, 1, 1, 1]
    assert together[0]["crashed"] and not together[3]["crashed"], "a process that lived retried itself"
    with pytest.raises(ValueError, match="mode must be one of"):
        run_scenarios([("naive", "none", True), ("careless", "none", True)])


def test_a_click_updates_the_text_and_the_html_view():
    panel = InvoicePanel()
    panel.atomic.value = True              # a click on the widget itself, not through .set
    assert shown_count(panel.text()) == 1 and "atomic ledger: on" in panel.text()
    assert "one invoice, as promised" in panel.view.value and "#1a7f37" in panel.view.value
    panel.crash.value = "before_send"
    assert "crash at before_send" in panel.text()


def test_an_unknown_crash_point_is_refused_and_changes_nothing():
    panel = InvoicePanel()
    before = panel.text()
    with pytest.raises(ValueError, match="crash must be one of"):
        panel.set(atomic=True, crash="t9")
    assert panel.text() == before and panel.atomic.value is False


# ------------------------------------------------------------------ matrix, races, refusals
def test_crash_matrix_has_one_red_cell():
    rows = crash_matrix()
    assert {(r["crash_at"], m) for r in rows for m in ("naive", "atomic", "keyed") if r[m] != 1} == \
        {("after_effect_before_ledger", "naive")}
    assert matrix_table(rows).splitlines()[2].split() == ["after_effect_before_ledger", "2", "1", "1"]
    page = matrix_html(rows)
    assert page.count("#ffebe9") == 1 and page.count("#dafbe1") == 11
    assert "<code>after_ledger</code>" in page
    assert "&lt;b&gt;" in matrix_html([{"crash_at": "<b>", "x": 1}]), "cells are escaped"
    memory = crash_matrix(in_memory=True)
    assert [list(r) for r in memory][0] == ["crash_at", "in memory", "naive", "atomic", "keyed"]
    assert {r["crash_at"] for r in memory if r["in memory"] == 2} == {"after_effect_before_ledger", "after_ledger"}
    assert matrix_table(memory).splitlines()[3].split() == ["after_ledger", "2", "1", "1", "1"]


@pytest.mark.parametrize("mode", ["atomic", "external"])
def test_racing_processes_get_one_effect_per_key(mode):
    result = race(processes=4, keys=20, mode=mode)
    assert (result["calls"], result["effects"], result["effects_per_key"]) == (80, 20, [1])
    assert result["answers"] == {"ran": 20, "replayed": 60} and result["exit_codes"] == [0, 0, 0, 0]


def test_conflict_and_in_progress_answers(tmp_path):
    books = new_books()
    with tk.DurableLedger(tmp_path / "l.db") as ledger:
        ledger.call(KEY, books.issue, ORDER, tool="create_invoice")
        conflict = ledger.call(KEY, books.issue, {**ORDER, "amount": 99.0}, tool="create_invoice")
        assert conflict.status is LedgerStatus.CONFLICT and conflict.error.code == "idempotency_conflict"
        assert conflict.to_result("call_7").status is tk.Status.REJECTED
        assert ledger.call(KEY, books.issue, {**ORDER, "amount": 120}, tool="create_invoice").status \
            is LedgerStatus.REPLAYED, "120 and 120.0 are the same argument"
    assert len(books.invoices) == 1

    books = new_books()
    order = {**ORDER, "order_id": "order-432", "idempotency_key": "invoice:order-432:v1"}

    def lost_answer(arguments):
        books.issue(arguments)
        raise tk.ToolFailure(tk.Status.TIMEOUT, "no_answer", "no answer within 5 s", tk.FailureClass.TIMEOUT)

    def record(arguments):
        found = books.invoices_with_key(arguments["idempotency_key"])
        return {"invoice_id": found[0]["invoice_id"]} if found else None

    with tk.DurableLedger(tmp_path / "claims.db") as ledger:
        key = order["idempotency_key"]
        assert ledger.call(key, lost_answer, order, tool="create_invoice").status is LedgerStatus.PENDING
        waiting = ledger.call(key, books.issue, order, tool="create_invoice")
        assert waiting.status is LedgerStatus.IN_PROGRESS and waiting.error.code == "in_progress"
        settled = ledger.reconcile(key, order, record, tool="create_invoice")
        assert settled.status is LedgerStatus.RECONCILED and settled.result == {"invoice_id": "INV-9"}
        assert ledger.call(key, books.issue, order, tool="create_invoice").status is LedgerStatus.REPLAYED
    assert len(books.invoices) == 1, "an unknown outcome must never be settled by running the effect again"


def test_inquiry_replays_and_new_proposal_duplicates():
    original = tk.request("create_invoice", ORDER, call_id="call_1")          # the key travels in the arguments
    inquiry = tk.request("create_invoice", ORDER, call_id="call_2")
    fresh = tk.request("create_invoice", {**ORDER, "idempotency_key": KEY + "-b"}, call_id="call_2")
    other = tk.request("create_invoice", {**ORDER, "amount": 99.0}, call_id="call_2")
    assert classify_retry(original, inquiry, CREATE_INVOICE) is RetryKind.INQUIRY
    assert classify_retry(original, fresh, CREATE_INVOICE) is RetryKind.NEW_PROPOSAL
    assert classify_retry(original, other, CREATE_INVOICE) is RetryKind.CONFLICT
    agent = tk.Caller("agent-427", frozenset({"billing.write"}))
    counts = {}
    for label, retry in (("inquiry", inquiry), ("proposal", fresh)):
        books = new_books()
        host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], agent, books)
        tk.evaluate(tk.State("t"), ScriptedPolicy([original, retry]), host, tk.MemoryLedger())
        counts[label] = len(books.invoices)
    assert counts == {"inquiry": 1, "proposal": 2}


def test_create_issue_blind_retry_makes_two_and_key_record_human_make_one():
    issues = {row["strategy"]: row["issues"] for row in create_issue_illustration()}
    assert issues["retry blindly"] == 2
    for strategy in ("idempotency key", "record lookup", "human confirmation"):
        assert issues[strategy] == 1, strategy
    assert tk.ToolResult("c", tk.Status.TIMEOUT).next_step.startswith("check the execution record")


def test_notifications_payments_and_deletions_cannot_be_compensated():
    table = {row["effect"]: row["compensable"] for row in compensation_table()}
    assert {effect for effect, ok in table.items() if not ok} == {"send a notification", "make a payment",
                                                                  "delete data"}


# ------------------------------------------------------------------ the committed notebook
def stored_text(nb) -> str:
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                     if o.output_type == "stream")


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def test_notebook_stores_the_chapter_facts_and_cleans_up():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = stored_text(nb)
    first = "durable key: on | atomic ledger: off | billing honours keys: off"
    stored = nb.metadata["widgets"][WIDGET_STATE]["state"].values()    # stored with the notebook
    shown = html.unescape(next(m["state"]["value"] for m in stored
                               if m["model_name"] == "HTMLModel" and first in m["state"]["value"]))
    assert "\n".join(TRACE) in shown, "the real run's five lines"
    assert "invoices for order-431: 2 (INV-9, INV-10)" in shown
    assert matrix_table(crash_matrix(in_memory=True)) in text
    assert "80 calls -> 20 effects; effects per key: [1]" in text and "waited" not in text
    assert "ledger 0 -> 1 entry" in text and "ledger 1 -> 1 entry, result INV-9, visible invoices 1" in text
    assert "temporary files removed: True" in text
    assert not any("panel.text()" in c.source for c in nb.cells), "the panel shows its own text"
    repairs = next(c for c in nb.cells
                   if c.cell_type == "code" and "InvoicePanel(atomic=True).text()" in c.source)
    assert repairs.outputs[0]["text"] == \
        InvoicePanel(atomic=True).text() + "\n\n" + InvoicePanel(honours=True).text() + "\n"
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "## Summary" in markdown and "exercises/05_atomic_ledger.ipynb" in markdown
    assert "/tmp/" not in text and not re.search(r"\bpids?\b", text, re.IGNORECASE)


def code_sources(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def test_notebook_keys_by_the_contract_and_reads_safeguards_from_the_toolkit():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = stored_text(nb)
    call = tk.request("create_invoice", ORDER, call_id="call_1")
    assert CREATE_INVOICE.idempotency_field == "idempotency_key"
    assert f"the ledger key the runtime uses:  {ledger_key(call, CREATE_INVOICE, call.arguments)}" in text, \
        "the notebook must show that the runtime keys by the contract's idempotency field"
    for name, prevents in SAFEGUARDS.items():
        assert f"{name:<17} {prevents:<57} {WHEN_TO_USE[name]}" in text, f"safeguard row {name!r}"
    assert not any(re.search(r"^WHEN\s*=\s*\{", src, re.MULTILINE) for src in code_sources(nb)), \
        "'when to use' comes from course.worlds.advice.WHEN_TO_USE, not a dict typed in the notebook"


def test_conflict_example_uses_a_ledger_file_no_other_cell_touches():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    sources = code_sources(nb)
    index = next(i for i, src in enumerate(sources) if '"amount": amount' in src)
    files = re.findall(r'workdir / "([^"]+)"', sources[index])
    assert files, "the conflict example opens its own SQLite ledger"
    for name in files:
        users = [i for i, src in enumerate(sources) if f'workdir / "{name}"' in src]
        assert users == [index], f"{name} is also used by code cells {users}: the example must not depend on them"
    out = "".join(o.get("text", "") for o in nb.cells[[i for i, c in enumerate(nb.cells)
                                                        if c.cell_type == "code"][index]].outputs)
    assert "amount 120.0: ran" in out and "amount 99.0 : conflict (key already used with other arguments)" in out
    assert "amount 120  : replayed" in out and "invoices: ['INV-9'] - the first call's, and no other" in out


@pytest.mark.parametrize("term, explained_by", [
    ("WAL", "write-ahead logging"),
    ("synchronous=FULL", "disk"),
    ("BEGIN IMMEDIATE", "write lock"),
    ("SIGKILL", "cannot be caught"),
])
def test_jargon_is_explained_where_it_first_appears(term, explained_by):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    first = next(c for c in nb.cells if term in c.source)
    assert first.cell_type == "markdown" and explained_by in first.source, \
        f"{term} first appears in a cell that does not explain it ({explained_by!r} missing)"


def test_prose_does_not_point_at_a_text_the_student_never_saw():
    for path in (NOTEBOOK, SOLUTION):
        markdown = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        for phrase in ("chapter's numbers", "chapter's table", "chapter's sketch", "chapter's five lines", "seed"):
            assert phrase not in markdown, f"{path.name}: {phrase!r}"


def test_exercise_harness_says_plainly_when_the_platform_has_no_fork(monkeypatch):
    """The exercise's crash-and-race harness (course.worlds.exercise_ledger) needs fork; without it, one plain
    sentence, before any file or process is made."""
    import tempfile

    from course.worlds import exercise_ledger

    made = []
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: made.append(kw) or "/nonexistent")
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])    # as on Windows
    for run in (lambda: exercise_ledger.attempts(lambda conn, args: None, "none"),
                lambda: exercise_ledger.race_requests(lambda conn, args: None)):
        with pytest.raises(RuntimeError, match="needs fork"):
            run()
    assert made == [], "the harness must stop before it creates any file or process"
    markdown = "\n".join(c.source for c in nbformat.read(SOLUTION, as_version=4).cells if c.cell_type == "markdown")
    assert "Windows" in markdown and "fork" in markdown and "WSL" in markdown


# ------------------------------------------------------------------ the core path, the deep dives, the class experiment
def split_at_deep_dives(nb) -> tuple[list, list]:
    marker = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## Deep dives"))
    return nb.cells[:marker], nb.cells[marker:]


def assigned_names(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def test_title_cell_says_what_the_student_does_and_how_long_it_takes():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    title = next(c for c in nb.cells if c.cell_type == "markdown").source
    assert title.startswith("# 05 · ") and "**In this chapter you will**" in title
    bullets = [line for line in title.splitlines() if line.startswith("- ")]
    assert 2 <= len(bullets) <= 4
    assert len([line for line in title.splitlines() if line.startswith("**Time:**")]) == 1


def test_no_core_cell_needs_a_deep_dive_and_the_deep_dives_are_marked():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    core, deep = split_at_deep_dives(nb)
    defined_in_core = set().union(*(assigned_names(c.source) for c in core if c.cell_type == "code"))
    only_deep = set().union(*(assigned_names(c.source) for c in deep if c.cell_type == "code")) - defined_in_core
    for cell in core:
        if cell.cell_type == "code":
            used = {n.id for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Name)}
            assert not used & only_deep, f"a core cell uses {used & only_deep}, defined only in a deep dive"
    headings = [line for c in deep if c.cell_type == "markdown" for line in c.source.splitlines()
                if line.startswith("### ")]
    assert headings and all(h.startswith("### Deep dive: ") for h in headings)
    assert any("SQLite internals" in h for h in headings) and any("crash harness" in h for h in headings)
    assert any(c.cell_type == "code" and "shutil.rmtree(workdir)" in c.source for c in core), \
        "the core removes its own files"
    assert not any("workdir" in c.source for c in deep if c.cell_type == "code"), \
        "a deep dive keeps its files in a folder of its own"


def test_class_experiment_cell_follows_the_lesson_and_says_where_it_ran():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    core, _ = split_at_deep_dives(nb)
    index = next(i for i, c in enumerate(core) if c.cell_type == "code" and "run_class_experiment(keyed=KEYED)" in c.source)
    assert re.search(r"^KEYED = (False|True)\b", core[index].source, re.MULTILINE)
    explained = core[index - 1].source
    assert "class hub" in explained and "dashboard" in explained and "one** shared billing service" in explained
    repairs = next(i for i, c in enumerate(core) if c.cell_type == "markdown" and "## 5.5 Two repairs" in c.source)
    matrix = next(i for i, c in enumerate(core) if c.cell_type == "markdown" and "## 5.6" in c.source)
    assert repairs < index < matrix, "the class experiment comes right after the duplicate-invoice lesson"
    out = "".join(o.get("text", "") for o in core[index].outputs)
    assert "no class hub found" in out and "(1 duplicate)" in out and "INV-9', 'INV-10'" in out
    assert "key: sent with every request | the agent's ledger rule: off" in out
    assert "key=invoice:order-431" in out
    assert "keys: off" not in out, "the agent sends a key either way"
    for word in ("*pending*", "*in progress*", "*reconciled*"):
        assert word in explained, f"the keys-on trace's {word} is explained where it is first used"


def test_the_class_experiments_keys_on_trace_uses_the_words_the_chapter_explains(monkeypatch):
    from course.worlds import run_class_experiment

    monkeypatch.delenv("COURSE_BILLING_URL", raising=False)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    lines = run_class_experiment(keyed=True).lines()
    assert lines[1] == ("student: you | order: order-431 | key: sent with every request"
                        " | the agent's ledger rule: on")
    trace = "\n".join(lines[2:-1])
    assert "claim" not in trace
    for word in ("pending", "in progress", "reconciled"):
        assert word in trace, word


def test_the_exercise_harness_plays_every_point_at_once_as_it_plays_each_alone():
    from course.worlds import attempts, attempts_at_every_point, crash_counts
    from course.worlds import naive_create_invoice as naive

    together = attempts_at_every_point(naive)
    assert list(together) == list(CRASH_POINTS)
    for point in CRASH_POINTS:
        alone = attempts(naive, point)
        assert (alone["killed"], alone["invoices"]) == (together[point]["killed"], together[point]["invoices"])
    assert crash_counts(naive) == {"before_send": 1, "after_effect_before_ledger": 2, "after_ledger": 1, "none": 1}


def test_the_race_catches_a_lookup_outside_the_transaction_and_passes_one_inside():
    from toolkit.effects import transaction
    from course.worlds import find, race_requests

    def inside(conn, arguments, effect, record):
        with transaction(conn):
            found = find(conn, arguments["idempotency_key"])
            if found:
                return found["invoice"]
            invoice = effect(conn, arguments)
            record(conn, arguments, invoice)
        return invoice

    def outside(conn, arguments, effect, record):
        found = find(conn, arguments["idempotency_key"])
        if found:
            return found["invoice"]
        with transaction(conn):
            invoice = effect(conn, arguments)
            record(conn, arguments, invoice)
        return invoice

    for _ in range(3):
        good = race_requests(inside)
        assert good["invoices"] == ["INV-9"] and [a["invoice_id"] for a in good["answers"]] == ["INV-9", "INV-9"]
        bad = race_requests(outside)
        assert any("UNIQUE constraint failed" in a.get("raised", "") for a in bad["answers"]), bad


def _billing_that_never_listens(path, honour_keys, notify, pipe, other_end):
    other_end.close()
    pipe.close()
    raise SystemExit(1)


def test_runs_played_side_by_side_clean_up_when_one_of_them_fails(monkeypatch, tmp_path):
    import tempfile

    from course.worlds import crash

    monkeypatch.setattr(crash, "_billing_child", _billing_that_never_listens)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RuntimeError, match="the billing service did not start"):
        run_scenarios([("atomic", "after_effect_before_ledger", True), ("naive", "after_ledger", True)])
    assert multiprocessing.active_children() == [], "every process of every run is ended"
    assert list(tmp_path.iterdir()) == [], "every run's folder is removed"


def _starts_two_and_answers(word):
    import multiprocessing as mp
    import os

    ctx = mp.get_context("fork")
    children = [ctx.Process(target=os._exit, args=(0,)) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join()
    if word == "fail":
        raise ValueError("no such word")
    return {"word": word, "exit codes": [c.exitcode for c in children], "pid": os.getpid()}


def test_in_one_child_answers_from_a_child_that_reaps_what_it_started():
    import os

    from course.worlds import in_one_child

    answer = in_one_child(_starts_two_and_answers, "ok")
    assert answer["word"] == "ok" and answer["exit codes"] == [0, 0] and answer["pid"] != os.getpid()
    with pytest.raises(RuntimeError, match="ValueError: no such word"):
        in_one_child(_starts_two_and_answers, "fail")
    assert multiprocessing.active_children() == []
