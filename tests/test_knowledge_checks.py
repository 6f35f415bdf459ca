"""Chapters 00-09: the knowledge checks: questions, the panel driven from Python, the script.

* every chapter's questions are well formed: exactly one right choice, a reason for every choice;
* choosing a wrong and then the right choice of every question gives the right verdicts, and the
  panel's text, drawing and menus say the same thing;
* where a choice claims what the toolkit computes, the toolkit computes it here: the right choice
  claims it and no wrong choice does;
* ``scripts/add_knowledge_checks.py`` is idempotent, tested on copies of the notebooks.
"""
from __future__ import annotations

import dataclasses
import html
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

import toolkit as tk
from course.present.knowledge_check import LETTERS, knowledge_check, quiz, quiz_chapters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import add_knowledge_checks as script  # noqa: E402

CHAPTERS = tuple(f"{n:02d}" for n in range(10))
QUESTIONS = [(chapter, index) for chapter in CHAPTERS
             for index in range(len(quiz(chapter).questions))]


def question_id(param) -> str:
    chapter, index = param
    return quiz(chapter).questions[index].id


# ------------------------------------------------------------------ the questions
def test_every_chapter_has_a_check_of_three_to_five_questions():
    assert quiz_chapters() == CHAPTERS
    for chapter in CHAPTERS:
        assert 3 <= len(quiz(chapter).questions) <= 5, chapter
        assert quiz(3) is quiz("3") is quiz("03")


def test_question_ids_are_unique_and_name_their_chapter():
    ids = [quiz(c).questions[i].id for c, i in QUESTIONS]
    assert len(ids) == len(set(ids))
    assert all(quiz(c).questions[i].id.startswith(f"{c}-") for c, i in QUESTIONS)


@pytest.mark.parametrize("where", QUESTIONS, ids=question_id)
def test_one_right_choice_and_a_reason_for_every_choice(where):
    question = quiz(where[0]).questions[where[1]]
    assert question.prompt.strip()
    assert 3 <= len(question.choices) <= len(LETTERS)
    assert [c.right for c in question.choices].count(True) == 1
    assert all(c.text.strip() and len(c.why.split()) >= 5 for c in question.choices)
    assert len({c.text for c in question.choices}) == len(question.choices)


# ------------------------------------------------------------------ the panel, driven from Python
def shown(check) -> str:
    """The text of the panel's HTML (the visible block), unescaped."""
    block = re.search(r"<div class='tk-text'[^>]*>(.*?)</div>", check.view.value, re.S)
    return html.unescape(block.group(1))


def lights(check) -> list[str]:
    return re.findall(r"data-question='\d+' data-state='(\w+)'", check.view.value)


def agrees(check) -> None:
    """Text form, visible text, drawing and menus: one state."""
    assert shown(check) == check.text()
    assert lights(check) == check.states()
    current = check.picker.value
    assert f"question {current + 1} of {len(check.quiz.questions)}" in check.text()
    assert f"data-current='{current + 1}'" in check.view.value
    assert check.answer.value == check.chosen.get(current)


@pytest.mark.parametrize("where", QUESTIONS, ids=question_id)
def test_a_wrong_then_the_right_choice(where):
    chapter, index = where
    check = knowledge_check(chapter)
    question = check.quiz.questions[index]
    assert "your answer: none yet" in check.show(index)
    assert check.states()[index] == "unanswered"
    agrees(check)

    wrong = next(i for i, c in enumerate(question.choices) if not c.right)
    answer = check.choose(index, wrong)
    assert (answer.right, answer.verdict) == (False, "wrong")
    assert answer.why == question.choices[wrong].why
    assert f"your answer: {LETTERS[wrong]}, wrong" in check.text()
    assert f"why: {question.choices[wrong].why}" in check.text()
    assert check.states()[index] == "wrong" and "score: 0 of" in check.text()
    agrees(check)

    answer = check.choose(index, question.right)
    assert (answer.right, answer.verdict, answer.choice) == (True, "right", question.right)
    assert f"your answer: {LETTERS[question.right]}, right" in check.text()
    assert f"why: {question.choices[question.right].why}" in check.text()
    assert question.choices[wrong].why not in check.text()
    assert check.states()[index] == "right" and "score: 1 of" in check.text()
    agrees(check)


def test_the_menus_drive_the_panel_as_choose_does():
    check = knowledge_check("05")
    check.picker.value = 1                       # a student picks question 2 ...
    check.answer.value = quiz("05").questions[1].right   # ... and its right answer, from the menus
    assert check.states() == ["unanswered", "right", "unanswered", "unanswered"]
    agrees(check)
    check.picker.value = 0                       # another question: its own, empty, answer
    assert check.answer.value is None and "your answer: none yet" in check.text()
    agrees(check)
    check.picker.value = 1                       # back again: the answer picked before is there
    assert check.answer.value == quiz("05").questions[1].right
    check.answer.value = None                    # taking the answer back
    assert check.states()[1] == "unanswered" and check.verdict(1) is None
    agrees(check)


def test_every_choice_is_listed_and_the_score_counts_right_answers():
    check = knowledge_check("08")
    for index, question in enumerate(check.quiz.questions):
        text = check.show(index)
        assert all(f"{LETTERS[i]}. {c.text}" in text for i, c in enumerate(question.choices))
        check.choose(index, question.right)
    count = len(check.quiz.questions)
    assert check.text().endswith(f"score: {count} of {count} right")
    assert f"data-right='{len(check.quiz.questions)}'" in check.view.value


def test_out_of_range_is_refused():
    check = knowledge_check(0)
    with pytest.raises(IndexError):
        check.choose(0, 9)
    with pytest.raises(IndexError):
        check.show(len(check.quiz.questions))
    with pytest.raises(KeyError):
        quiz("42")
    assert check.states() == ["unanswered"] * len(check.quiz.questions)


# ------------------------------------------------------------------ the keys, computed
def invoicing():
    from course.worlds import CREATE_INVOICE, Books

    good = {"order_id": "order-431", "amount": 120.0, "currency": "EUR",
            "idempotency_key": "invoice:order-431:v1"}
    return CREATE_INVOICE, Books, good


def misspelled_tool() -> str:
    contract, books_of, _ = invoicing()
    books = books_of(orders={"order-431": {"approved": True}})
    host = tk.Host.of([tk.Tool(contract, books.issue)], caller=tk.Caller("agent-427"), world=books)
    result = host.execute(tk.request("create_invoce", {"order_id": "order-431"}, call_id="call_1"))
    assert result.call_id == "call_1" and result.errors[0].hint == "did you mean create_invoice?"
    return f"{result.status.value}, {len(books.invoices)} invoice{'s' * (len(books.invoices) != 1)}"


def text_only_claim() -> str:
    with tempfile.TemporaryDirectory() as folder:
        host = tk.Host.of([tk.make_read_file(folder)], tk.Caller("assistant"))
        tk.evaluate(tk.State("Read the config file for me."), lambda state: None, host)
        return str(len(host.log))


def etc_passwd() -> str:
    with tempfile.TemporaryDirectory() as folder:
        host = tk.Host.of([tk.make_read_file(folder)], tk.Caller("assistant"))
        verdict = host.check(tk.request("read_file", {"path": "/etc/passwd"}, call_id="call_9"))
    assert len(verdict.blocked_by) == 1
    return verdict.blocked_by[0]


def malformed_intern() -> str:
    contract, books_of, _ = invoicing()
    verdict = tk.check(tk.request("create_invoice", {"order_id": 431}, call_id="call_x"), contract,
                       tk.Caller("intern"), books_of(orders={"order-431": {"approved": True}}))
    return verdict.lines()[-1]


def wrong_amount() -> str:
    contract, books_of, good = invoicing()
    books = books_of(orders={"order-431": {"approved": True}})
    caller = tk.Caller("agent-427", frozenset({"billing.write"}))
    host = tk.Host.of([tk.Tool(contract, books.issue)], caller, books)
    call = tk.request("create_invoice", {**good, "amount": 1200.0}, call_id="call_7")
    legal = host.check(call).legal
    host.execute(call)
    assert [i["amount"] for i in books.invoices] == ([1200.0] if legal else [])
    return str(legal)


def approval_other_id() -> str:
    contract, books_of, good = invoicing()
    signed = dataclasses.replace(contract, needs_approval=True)
    caller = tk.Caller("agent-427", frozenset({"billing.write"})).approving("call_9")
    books = books_of(orders={"order-431": {"approved": True}})
    host = tk.Host.of([tk.Tool(signed, books.issue)], caller=caller, world=books)
    assert host.check(tk.request("create_invoice", good, call_id="call_9")).legal == 1
    return host.check(tk.request("create_invoice", good, call_id="call_10")).pre.outcome.value


def priced_risk() -> str:
    contract, _, _ = invoicing()
    riskier = dataclasses.replace(contract, risk=4.0)
    option = tk.Option.from_contract(riskier, tk.expected_value(0.9, 10))
    return f"{option.score(1, 1):g}"


def agent427_first_proposal():
    from course.worlds import agent427

    return agent427


def auth_not_evaluable() -> str:
    a = agent427_first_proposal()
    with tempfile.TemporaryDirectory() as folder:
        host = a.episode_host(a.copy_scenario(Path(folder) / "workspace"))
        return host.check(a.first_proposal("call_1").call).auth_ok.outcome.value


def next_move() -> str:
    a = agent427_first_proposal()
    with tempfile.TemporaryDirectory() as folder:
        host = a.episode_host(a.copy_scenario(Path(folder) / "workspace"))
        first = a.first_proposal("call_1")
        assert a.validate(first, host).verdict.pre.outcome.value == "fail"   # 03-pre-with-code
        return a.transition(host.execute(first))


def exports_rule() -> str:
    from toolkit.files import exported_names

    names, rule = exported_names("__all__ = ['load_publication_manifest']\n\n"
                                 "def load_manifest():\n    pass\n\n"
                                 "def load_publication_manifest():\n    pass\n")
    assert rule == "__all__"
    return ", ".join(names)


def read_and_edit():
    return (tk.Option("read the script", value=8, cost=1, risk=1),
            tk.Option("eager edit", value=11, cost=2, risk=6))


def cheap_risk() -> str:
    return tk.choose(read_and_edit(), lam_c=1, lam_r=0.25).best.name


def flip_point() -> str:
    from course.present.plots import flip_point as tie

    safe, risky = tk.Option("safe call", 10, 2, 1), tk.Option("risky call", 11, 2, 6)
    price = tie(safe, risky)
    assert tk.choose([safe, risky], lam_r=price + 0.01).best is safe
    assert tk.choose([safe, risky], lam_r=price - 0.01).best is risky
    return f"{price:g}"


def illegal_shortcut() -> str:
    sed = tk.request("shell", {"cmd": "sed -i 's/x/y/' scripts/build_site.py"}, call_id="call_sh")
    verdict = tk.check(sed, None, tk.Caller("agent-427"), None, ["edit_file", "inspect_exports"])
    assert verdict.errors[0].code == "unknown_tool"
    shortcut = tk.Option("shell: sed -i", value=14, cost=1, risk=2, legal=verdict.legal)
    return tk.choose([shortcut, *read_and_edit()]).best.name


def send_message_safeguards() -> str:
    from course.worlds.advice import required_safeguards

    send_message = tk.Contract(
        "send_message", "Send one chat message to a person.",
        {"type": "object", "required": ["to", "text"], "additionalProperties": False,
         "properties": {"to": {"type": "string"}, "text": {"type": "string"}}},
        reversible=False, retry=tk.Retry.UNSAFE, risk_category="a message a person reads",
        evidence=("the message id",), writes=("chat:{to}",))
    return ", ".join(required_safeguards(send_message))


def memory_restart() -> str:
    from course.worlds import KEY, ORDER, new_books

    books = new_books()
    tk.MemoryLedger().call(KEY, books.issue, ORDER, tool="create_invoice")
    again = tk.MemoryLedger().call(KEY, books.issue, ORDER, tool="create_invoice")   # restarted
    assert len(books.invoices) == (2 if again.status.value == "ran" else 1)
    return again.status.value


def crash_in_the_gap() -> str:
    from course.worlds import guarded_run
    from course.worlds.crash import run_scenario

    run = guarded_run(durable=True, atomic=False, honours=False,
                      crash_at="after_effect_before_ledger")
    return str(run_scenario(run.mode, run.crash_at, durable=run.durable)["invoice_count"])


def same_key_other_amount() -> str:
    from course.worlds import KEY, ORDER, new_books

    books, ledger = new_books(), tk.MemoryLedger()
    def status(amount: float) -> str:
        arguments = {**ORDER, "amount": amount}
        return ledger.call(KEY, books.issue, arguments, tool="create_invoice").status.value

    assert status(120.0) == "ran"
    return status(99.0)


def fresh_key() -> str:
    from course.worlds import CREATE_INVOICE, ORDER, classify_retry, retry_variants

    original = tk.request("create_invoice", ORDER, call_id="call_1")
    retry = retry_variants()["same call, a fresh key"]
    return classify_retry(original, retry, CREATE_INVOICE).value


def steps_to_ceiling() -> str:
    from toolkit.kernel import RetryPolicy, RetryState, step

    policy, state, granted = RetryPolicy(d0=1, beta=2, n_max=4), RetryState(n=2, d=2), []
    while (decision := step(state, policy)).retry:
        granted.append(f"{decision.wait:g}")
        state = decision.state
    return ", ".join(granted + [decision.action.value])


def fourth_wait() -> str:
    from toolkit.kernel import RetryPolicy
    from course.worlds.waits import plan

    return f"{plan(RetryPolicy(d0=0.5, beta=2, n_max=4))[3]:g}"


def invoice_original():
    _, _, good = invoicing()
    return good, tk.request("create_invoice", good, call_id="call_1")


def timeout_new_key() -> str:
    from course.worlds import CREATE_INVOICE
    from toolkit.kernel import retry_verdict

    good, original = invoice_original()
    no_answer = tk.ToolResult("call_1", tk.Status.TIMEOUT, failure_class=tk.FailureClass.TIMEOUT,
                              reason="no_answer")
    new_key = tk.request("create_invoice", {**good, "idempotency_key": "invoice:order-431:v2"},
                         call_id="call_1")
    assert retry_verdict(CREATE_INVOICE, no_answer, original, None)[0].value == "retry"   # same key
    return retry_verdict(CREATE_INVOICE, no_answer, original, new_key)[0].value


def charge_without_key() -> str:
    from toolkit.kernel import retry_verdict

    charge = tk.Contract("charge_card", "Charge a card once.", {"type": "object"},
                         retry=tk.Retry.SAFE_WITH_KEY)
    busy = tk.ToolResult("c1", tk.Status.RECOVERABLE_FAILURE,
                         failure_class=tk.FailureClass.EXECUTION)
    call = tk.request("charge_card", {"order_id": "order-431"}, call_id="c1")
    return retry_verdict(charge, busy, call, None)[0].value


def record_paths() -> str:
    from course.worlds import invoice_arguments
    from toolkit.effects import IllegalTransition, open_record

    def walks(*moves: str) -> bool:
        call = tk.request("create_invoice", invoice_arguments("order-431"), call_id="c")
        record = open_record(call, "agent-427")
        try:
            for move in moves:
                record.move(move)
        except IllegalTransition:
            return False
        return True

    assert not walks("running", "succeeded")
    assert not walks("approved", "running", "succeeded", "running")
    return "legal" if walks("approved", "running", "timeout", "running", "succeeded") else "illegal"


def settled_deploys() -> str:
    from course.worlds import run_deploy_episode, rushed_versions

    versions = rushed_versions(12)
    gamed = run_deploy_episode(repaired=False, versions=versions)
    assert sum(row["status"] == "succeeded" for row in gamed) == 12
    repaired = run_deploy_episode(repaired=True, versions=versions)
    return str(sum(row["status"] == "succeeded" for row in repaired))


def careless_message() -> str:
    from course.worlds import LOOKUP_CUSTOMER

    def careless(arguments, world):
        message = f"partner refused key {arguments['api_key']} for {arguments['account_number']}"
        raise tk.ToolFailure(tk.Status.RECOVERABLE_FAILURE, "partner_busy", message)

    host = tk.Host.of([tk.Tool(LOOKUP_CUSTOMER, careless)])
    arguments = {"customer": "ACME", "api_key": "sk-CANARY-7f3a91",
                 "account_number": "ACCT-CANARY-55120"}
    result = host.execute(tk.request("lookup_customer", arguments, "call_5"))
    return result.errors[0].message


def file_round():
    from course.worlds import FileRound

    return FileRound()


def parseable_fragment() -> str:
    from toolkit.kernel import Assembler
    from course.worlds.stream_replay import SKETCH_FRAMES

    first, end_of_name, start_of_arguments, last = SKETCH_FRAMES
    with file_round() as files:
        assembler = Assembler(envelope=True)
        for fragment in (first, end_of_name + start_of_arguments, last):
            assembler.add(0, arguments=fragment)
        preview = assembler.preview(0)
        result = files.host.execute(preview)
        assert len(files.host.log) == 0          # no attempt ran
    return result.status.value


def cut_stream() -> str:
    from toolkit.wire import openai_stream
    from course.worlds import fixture

    outcome = list(openai_stream(fixture("openai_stream_length.txt")))
    assert len(outcome) == 3
    return str(sum(isinstance(item, tk.ToolCall) for item in outcome))


def side_by_side() -> str:
    from toolkit.kernel import schedule

    with file_round() as files:
        read, write = files.read, files.write
        calls = [read("src/config.ts", "r1"), write("notes/summary.md", "# Draft\n", "w1"),
                 write("notes/summary.md", "# Summary\n", "w2"),
                 write("src/config.ts", "port\n", "w3")]
        waves = schedule(calls, files.host).waves
    together = [pair for pair in (("w1", "w2"), ("r1", "w3"), ("r1", "w1"))
                if any(set(pair) <= set(wave) for wave in waves)]
    assert len(together) == 1, waves
    return ", ".join(together[0])


def crossed_wires() -> str:
    from course.worlds import naive_pairing

    with file_round() as files:
        calls = [files.read("A.md", "call_A"), files.read("B.md", "call_B"),
                 files.write("../C.md", "summary of A and B", "call_C")]
        results = {call.call_id: files.host.execute(call) for call in calls}
    told = naive_pairing(calls, [results["call_C"], results["call_B"], results["call_A"]])
    assert told["call_C"].ok and not results["call_C"].ok        # write C is told it succeeded
    return told["call_A"].status.value


def model_reads(arguments: dict):
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "work"
        (workspace / "notes").mkdir(parents=True)
        (workspace / "notes" / "todo.md").write_text("1. ship the invoice fix\n", encoding="utf-8")
        (Path(folder) / "secret.txt").write_text("planted secret\n", encoding="utf-8")
        host = tk.Host.of([tk.make_read_file(workspace)])
        result = host.execute(tk.request("read_file", arguments, "call_1"))
    assert "planted secret" not in str(result.to_dict())
    return result


def hostile_path() -> str:
    result = model_reads({"path": "../secret.txt"})
    assert result.status.value == "rejected" and result.errors[0].pointer == "$.path"
    return result.errors[0].code


def schema_repair() -> str:
    first = model_reads({"file": "notes/todo.md"}).errors[0]
    assert model_reads({"path": "notes/todo.md"}).ok
    return f"{first.code} {first.pointer}"


#: Question id -> what the toolkit computes for it, in the form the choices' ``value`` uses.
COMPUTED = {
    "00-misspelled-tool": misspelled_tool,
    "01-text-only-claim": text_only_claim, "01-etc-passwd": etc_passwd,
    "02-malformed-intern": malformed_intern, "02-wrong-amount": wrong_amount,
    "02-approval-other-id": approval_other_id, "02-priced-risk": priced_risk,
    "03-auth-not-evaluable": auth_not_evaluable, "03-next-move": next_move,
    "03-exports-rule": exports_rule,
    "04-cheap-risk": cheap_risk, "04-flip-point": flip_point,
    "04-illegal-shortcut": illegal_shortcut,
    "04-send-message-safeguards": send_message_safeguards,
    "05-memory-restart": memory_restart, "05-crash-in-the-gap": crash_in_the_gap,
    "05-same-key-other-amount": same_key_other_amount, "05-fresh-key": fresh_key,
    "06-steps-to-ceiling": steps_to_ceiling, "06-fourth-wait": fourth_wait,
    "06-timeout-new-key": timeout_new_key, "06-charge-without-key": charge_without_key,
    "07-record-paths": record_paths, "07-settled-deploys": settled_deploys,
    "07-careless-message": careless_message,
    "08-parseable-fragment": parseable_fragment, "08-cut-stream": cut_stream,
    "08-side-by-side": side_by_side, "08-crossed-wires": crossed_wires,
    "09-hostile-path": hostile_path, "09-schema-repair": schema_repair,
}
KEYED = [(c, i) for c, i in QUESTIONS
         if any(choice.value is not None for choice in quiz(c).questions[i].choices)]


def test_every_keyed_question_is_computed():
    assert sorted(quiz(c).questions[i].id for c, i in KEYED) == sorted(COMPUTED)
    for chapter, index in KEYED:     # a keyed question keys every choice: each wrong one is checked
        assert all(ch.value is not None for ch in quiz(chapter).questions[index].choices)


@pytest.mark.parametrize("where", KEYED, ids=question_id)
def test_the_key_is_what_the_toolkit_computes(where):
    question = quiz(where[0]).questions[where[1]]
    truth = COMPUTED[question.id]()
    right = question.choices[question.right]
    assert right.value == truth, f"{question.id}: the toolkit computes {truth!r}"
    assert [c.text for c in question.choices if not c.right and c.value == truth] == []


# ------------------------------------------------------------------ the script, on copies
@pytest.fixture
def copies(tmp_path: Path) -> Path:
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def cells_of(path: Path) -> list:
    import nbformat

    return nbformat.read(path, as_version=4).cells


def test_the_script_adds_the_check_once(copies: Path, capsys):
    paths = sorted(copies.glob("*.ipynb"))
    before = {p.name: cells_of(p) for p in paths}
    assert script.main([str(p) for p in paths]) == 0
    first = {p.name: p.read_bytes() for p in paths}
    for path in paths:
        chapter = path.name[:2]
        cells = cells_of(path)
        old = [c for c in before[path.name] if not script.is_check_cell(c)]
        assert cells[:-2] == old                        # every other cell as it was, ids included
        heading, code = cells[-2:]
        assert heading.cell_type == "markdown"
        assert heading.source.startswith(f"## Check your understanding: chapter {chapter}")
        assert code.cell_type == "code" and f'knowledge_check("{chapter}").widget' in code.source
        assert len({c.id for c in cells}) == len(cells)
    assert script.main([str(p) for p in paths]) == 0   # the second run changes nothing
    assert {p.name: p.read_bytes() for p in paths} == first
    out = capsys.readouterr().out
    assert out.count("unchanged") >= len(paths)


def test_the_script_moves_a_misplaced_or_stale_check_to_the_end(copies: Path):
    import nbformat

    path = copies / "03_agent427_import_failure.ipynb"
    assert script.add_check(path) in ("added", "unchanged")
    nb = nbformat.read(path, as_version=4)
    heading, code = nb.cells[-2:]
    heading.source = "## Check your understanding: an old wording"
    nb.cells = nb.cells[:5] + [heading, code] + nb.cells[5:-2]     # the check, stale, in the middle
    nbformat.write(nb, path)
    assert script.add_check(path) == "updated"
    cells = cells_of(path)
    assert sum(script.is_check_cell(c) for c in cells) == 2
    assert cells[-2].source == script.heading_source("03")
    assert cells[-1].source == script.code_source("03")
    assert script.add_check(path) == "unchanged"


def test_the_script_skips_what_is_not_a_chapter(tmp_path: Path):
    other = tmp_path / "scratch.ipynb"
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", other)
    before = other.read_bytes()
    assert script.add_check(other) == "skipped" and other.read_bytes() == before


def test_the_check_cell_runs_and_shows_its_chapter():
    """The code cell the script writes, run as a kernel runs it: it makes the chapter's widget."""
    namespace: dict = {}
    source = script.code_source("06")
    *body, last = source.splitlines()
    exec("\n".join(body), namespace)
    widget = eval(last, namespace)
    assert type(widget).__name__ == "VBox"
    assert "chapter 06, question 1 of" in html.unescape(widget.children[1].value)
