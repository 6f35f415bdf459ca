"""Chapters 03 and 07: the packaged model over one set of tasks, counted by the contract.

The model-free tests drive ``course.worlds.model_tasks`` with a stand-in that replays fixed
texts, so the counting itself is checked everywhere. The real-model tests load the packaged
SmolLM2 in this process; without it they skip and say why, with ``REQUIRE_MODEL=1`` or in CI
they fail instead. They assert only what holds on any CPU (what the grammar guarantees, what the
contract decided, what was opened, how the counts add up), never the model's words.
"""
from __future__ import annotations

import json
from collections import Counter

import pytest

import toolkit as tk
from course.worlds import model_tasks as mt
from course.worlds import Rate, measure, refusals_by_layer, rows_from_audit, side_by_side
from course.worlds import simulate_log
from course.worlds.witness import opened_outside, recording_opens
from toolkit.wire import pair_results
from test_local_model import require_model


class Replayed:
    """A stand-in for ``llama_cpp.Llama``: answers each request with the next of ``texts``."""

    def __init__(self, texts):
        self.texts, self.requests = list(texts), []

    def create_chat_completion(self, messages, **options):
        self.requests.append((messages, options))
        text = self.texts.pop(0)
        finish = "length" if text.endswith("...") else "stop"
        return {"choices": [{"message": {"role": "assistant", "content": text},
                             "finish_reason": finish}]}


@pytest.fixture
def project(tmp_path):
    return mt.model_workspace(tmp_path)


def test_the_tasks_and_the_project_agree(project):
    assert len(mt.MODEL_TASKS) == 20 and len({t.text for t in mt.MODEL_TASKS}) == 20
    kinds = Counter(t.kind for t in mt.MODEL_TASKS)
    assert kinds == {"named": 10, "vague": 4, "missing": 3, "outside": 3}
    for task in mt.MODEL_TASKS:
        inside = (project / task.path).resolve().is_relative_to(project.resolve())
        exists = (project / task.path).is_file()
        assert (task.kind in ("named", "vague")) == (inside and exists), task
        assert (task.kind == "outside") == (not inside), task
        assert (task.path in task.text) == (task.kind != "vague"), task
    assert (project.parent / "secret.txt").read_text().strip() == mt.SECRET_TEXT
    # the example in read_file's own description names no file of the project
    assert "src/config.ts" in tk.make_read_file(project).contract.description
    assert not (project / "src/config.ts").exists()


def test_the_funnel_counts_what_the_host_decided(project):
    texts = ["Here is the file you asked for...",            # prose, cut by the budget
             '{"path": "src/settings.ts", "mode": "text"}',   # the very file task 2 names
             '{"file": "docs/setup.md"}',                    # parses, an undeclared field
             '{"path": "../secret.txt"}',                     # the path layer refuses it
             '{"path": "src/config.ts"}',                     # no such file
             '{"path": "README.md"}']                         # a file, not the one task 6 names
    runs = mt.run_model_tasks(Replayed(texts), project, tasks=mt.MODEL_TASKS[:6])
    assert mt.funnel(runs) == {"proposals": 6, "parsed": 5, "schema_ok": 4, "path layer": 3,
                               "existing file": 2, "file asked for": 1}
    assert mt.stopped_at([r.first for r in runs]) == {"schema": 2, "authorization": 1,
                                                      "precondition": 1, "ran": 2}
    assert [r.policy.ended for r in runs] == [[False]] + [[True]] * 5
    lines = mt.funnel_lines({"replayed": runs})
    assert lines[1].split() == ["replayed", "6", "5", "4", "3", "2", "1"]
    assert [r.first.call.call_id for r in runs] == [f"task{n}_1" for n in range(1, 7)]


def test_the_policy_shows_the_model_each_answer_and_stops_at_the_first_read(project):
    texts = ['{"path": "notes/todo"}', '{"path": "notes/todo.md"}',      # task 1: second read runs
             '{"path": "x.md"}', '{"path": "x.md"}']                     # task 2: out of rounds
    model = Replayed(texts)
    runs = mt.run_model_tasks(model, project, tasks=mt.MODEL_TASKS[:2], max_rounds=2)
    assert [r.policy.rounds for r in runs] == [2, 2] and model.texts == []
    assert [len(r.host.log) for r in runs] == [2, 2] and runs[0].host.log[-1].result.ok
    second = model.requests[1][0]           # task 1, round 2: the refusal went back to the model
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    sent = json.loads(second[-1]["content"])
    assert sent["call_id"] == "task1_1" and sent["failure_class"] == "precondition"
    assert second[2]["content"] == texts[0]
    assert all(o["temperature"] == 0.0 and o["max_tokens"] == mt.MODEL_MAX_TOKENS
               for _, o in model.requests)
    rows = mt.model_rows(runs)
    report = measure(rows)
    assert report.calls == 4 and report.precondition_violations == Rate(3, 4)
    assert report.progress_after_failure == Rate(1, 3)       # task 1 read after its refusal
    assert refusals_by_layer(rows) == {"schema": 0, "authorization": 0, "precondition": 3}
    assert {r.task for r in rows} == {mt.MODEL_TASKS[0].text, mt.MODEL_TASKS[1].text}


def test_side_by_side_and_refusals_by_layer_on_the_scripted_log():
    simulation = simulate_log(calls=60, schema_errors=4, seed=2)
    rows = rows_from_audit(simulation.log)
    assert refusals_by_layer(rows)["schema"] == 4
    report = simulation.report()
    table = side_by_side({"scripted": report, "again": measure(rows)})
    assert table[0].split() == ["scripted", "again"]
    assert [line[:30].strip() for line in table[1:]] == [n for n, _ in report.named()]
    assert table[2].split()[-6:] == ["4/60", "=", "6.7%"] * 2
    assert report.lines() == [f"{n:<30} {v}" for n, v in report.named()]


def test_without_llama_cpp_the_model_says_how_to_install_it(monkeypatch):
    import importlib.util
    from toolkit.live import LiveConfigError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    with pytest.raises(LiveConfigError, match=r'pip install -e "\.\[model\]"'):
        with mt.packaged_llama():
            pass


# ------------------------------------------------------------------ the packaged model
@pytest.fixture(scope="module")
def llama():
    require_model()
    with mt.packaged_llama() as model:
        yield model


@pytest.mark.timeout(1800)      # forty short answers on a busy two-core machine: a minute or two
def test_chapter03_the_grammar_makes_every_ended_proposal_parse_and_nothing_more(llama,
                                                                                 tmp_path):
    project = mt.model_workspace(tmp_path)
    contract = tk.make_read_file(project).contract
    with recording_opens() as opens:
        free = mt.run_model_tasks(llama, project)
        constrained = mt.run_model_tasks(llama, project, mt.schema_grammar(contract))
    assert opened_outside(opens, project) == []
    for runs in (free, constrained):
        counts = list(mt.funnel(runs).values())
        assert counts[0] == len(mt.MODEL_TASKS) and counts == sorted(counts, reverse=True)
        firsts = [r.first for r in runs]
        assert sum(mt.stopped_at(firsts).values()) == len(mt.MODEL_TASKS)
        assert all(len(r.host.log) == r.policy.rounds == 1 for r in runs)
        assert pair_results([a.call for a in firsts], [a.result for a in firsts])[1] == []
        assert all(mt.SECRET_TEXT not in json.dumps(a.result.to_dict()) for a in firsts)
    for run in constrained:          # the grammar's promise, whatever the model wrote
        if run.policy.ended[0]:
            assert mt.parses(run.first)
            assert run.first.verdict.schema_ok.outcome is tk.Outcome.PASS, run.first.call
    # the grammar cannot make a file exist: the funnel narrows after the schema
    shaped = mt.funnel(constrained)
    assert shaped["existing file"] <= shaped["schema_ok"]


@pytest.mark.timeout(1800)      # up to eighty short answers on a busy two-core machine: minutes
def test_chapter07_the_measures_are_read_from_the_hosts_logs(llama, tmp_path):
    project = mt.model_workspace(tmp_path)
    grammar = mt.schema_grammar(tk.make_read_file(project).contract)
    with recording_opens() as opens:
        runs = mt.run_model_tasks(llama, project, grammar, max_rounds=2)
    assert opened_outside(opens, project) == []
    rows = mt.model_rows(runs)
    report = measure(rows)
    rounds = Counter(r.policy.rounds for r in runs)
    assert set(rounds) <= {1, 2} and sum(rounds.values()) == len(mt.MODEL_TASKS)
    assert report.calls == len(rows) == sum(r.policy.rounds for r in runs)
    for run in runs:
        log = run.host.log
        assert len(log) == run.policy.rounds
        assert all(not a.result.ok for a in log[:-1])      # a task goes on only after a refusal
        assert run.policy.rounds == 2 or log[-1].result.ok  # and ends early only after a read
        assert pair_results([a.call for a in log], [a.result for a in log])[1] == []
    refused = refusals_by_layer(rows)
    ran = sum(r.ran for r in rows)
    assert sum(refused.values()) + ran == report.calls
    cut = 0
    for run in runs:                 # under the grammar only a proposal cut short can fail the schema
        for attempt, ended in zip(run.host.log, run.policy.ended):
            cut += not ended
            if ended:
                assert attempt.verdict.schema_ok.outcome is tk.Outcome.PASS, attempt.call
    assert report.schema_violations.hits == refused["schema"] <= cut
    assert report.precondition_violations.hits == refused["precondition"]
