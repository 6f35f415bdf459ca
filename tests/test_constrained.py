"""Constrained generation: the mask guarantees the shape, and only the runtime can check the export."""
import json

import pytest
from hypothesis import given, settings, strategies as st

import toolkit as tk
from course.worlds import agent427 as a
from course.worlds import CLOSE, Preferences, SchemaMask, compare_masking, generate
from course.worlds import agent427_preferences
from toolkit.files import EDIT_FILE_SCHEMA
from course.worlds import tree_digest

PREFS = agent427_preferences()
SCHEMA_OK_LINES = ["$.file_path: required property missing", "$.path: unexpected property",
                   "$.patch: unexpected property"]


@pytest.fixture
def host(tmp_path):
    return a.episode_host(a.copy_scenario(tmp_path / "ws"))


def verdict_for(host, generation):
    return host.check(tk.request("edit_file", generation.text))


def test_unmasked_model_writes_the_calamity(host):
    free = generate(PREFS)
    assert free.stopped == "complete" and free.masked is False
    assert json.loads(free.text) == {"path": "scripts/build_site.py", "patch": "use load_manifest(BOOK_DIR)"}
    assert [e.line() for e in verdict_for(host, free).schema_ok.errors] == SCHEMA_OK_LINES


def test_unmasked_model_cut_by_its_budget_leaves_no_closing_brace(host):
    cut = generate(PREFS, max_tokens=8)
    assert cut.stopped == "budget" and len(cut.tokens) == 8 and not cut.text.endswith("}")
    assert cut.text == '{"path": "scripts/build_site.py", "patch": "use load_manifest(BOOK_DIR)"'
    verdict = verdict_for(host, cut)
    assert verdict.schema_ok.outcome is tk.Outcome.FAIL
    assert verdict.schema_ok.errors[0].line() == "$: arguments are not valid JSON"


def test_masked_model_writes_the_declared_fields_and_still_names_load_manifest(host):
    digest = tree_digest(host.world)
    masked = generate(PREFS, EDIT_FILE_SCHEMA)
    arguments, errors = masked.arguments()
    assert masked.stopped == "complete" and errors == []
    assert list(arguments) == ["file_path", "old_text", "new_text"]
    assert "import load_manifest" in arguments["new_text"]
    verdict = verdict_for(host, masked)
    assert verdict.schema_ok.outcome is tk.Outcome.PASS and verdict.auth_ok.outcome is tk.Outcome.PASS
    assert [e.line() for e in verdict.pre.errors] == ["import publication_manifest.load_manifest: symbol not exported"]
    result = host.execute(tk.request("edit_file", masked.text))
    assert result.status is tk.Status.REJECTED and result.failure_class is tk.FailureClass.PRECONDITION
    assert tree_digest(host.world) == digest


def test_mask_interventions_show_where_grammar_overruled_the_model():
    masked = generate(PREFS, EDIT_FILE_SCHEMA)
    assert masked.interventions() == [
        "token 1: model wanted path; mask allowed file_path, old_text, new_text; wrote file_path",
        "token 4: model wanted path; mask allowed old_text, new_text; wrote old_text",
        "token 8: model wanted path; mask allowed new_text; wrote new_text",
        "token 12: model wanted path; mask allowed }; wrote }",
    ]
    # the value of new_text was never overruled: the schema only asks for a string
    value = next(c for c in masked.choices if c.kind == "value" and c.position == 11)
    assert value.wanted == value.chosen == a.new_text("load_manifest")


def test_masked_model_refuses_to_start_what_its_budget_cannot_close():
    assert SchemaMask(EDIT_FILE_SCHEMA).min_tokens() == 13
    short = generate(PREFS, EDIT_FILE_SCHEMA, max_tokens=12)
    assert short.stopped == "refused" and short.tokens == ()
    assert short.arguments()[1][0].line() == "$: a budget of 12 tokens cannot hold a complete call"
    exact = generate(PREFS, EDIT_FILE_SCHEMA, max_tokens=13)
    assert exact.stopped == "complete" and len(exact.tokens) == 13


def test_compare_lines():
    lines = compare_masking(PREFS, EDIT_FILE_SCHEMA)
    assert lines[0] == 'unmasked:            {"path": "scripts/build_site.py", "patch": "use load_manifest(BOOK_DIR)"}'
    assert lines[1].startswith('unmasked, 8 tokens: {"path"') and lines[1].endswith("budget: no closing brace")
    assert lines[2].startswith('masked:              {"file_path": "scripts/build_site.py", "old_text"')
    assert lines[3] == "mask interventions:" and len(lines) == 8


def test_many_seeded_runs_always_pass_the_schema_and_only_the_runtime_catches_the_name(host):
    validator = host.contract("edit_file").validator
    named_wrong = missing_file = 0
    for seed in range(300):
        masked = generate(PREFS, EDIT_FILE_SCHEMA, seed=seed)
        arguments, errors = masked.arguments()
        assert errors == [] and validator.is_valid(arguments), seed
        verdict = verdict_for(host, masked)
        assert verdict.schema_ok.outcome is tk.Outcome.PASS, seed
        pre = [e.line() for e in verdict.pre.errors]
        if arguments["file_path"] != a.BUILD_SCRIPT:   # a file that does not exist: the schema cannot know that either
            missing_file += 1
            assert pre == [f"$.file_path: no such file: {arguments['file_path']}"], seed
            continue
        wrong = "load_manifest(" in arguments["new_text"]
        named_wrong += wrong
        assert pre == (["import publication_manifest.load_manifest: symbol not exported"] if wrong else []), seed
    # sampling varies the name and the path; the schema objects to neither
    assert 0 < named_wrong < 300 and 0 < missing_file < 300


def test_seeded_runs_are_reproducible():
    assert generate(PREFS, EDIT_FILE_SCHEMA, seed=7) == generate(PREFS, EDIT_FILE_SCHEMA, seed=7)
    assert generate(PREFS, None, seed=7) == generate(PREFS, None, seed=7)


def test_unmasked_seeded_runs_often_break_the_schema(host):
    broken = sum(verdict_for(host, generate(PREFS, seed=s)).schema_ok.outcome is tk.Outcome.FAIL
                 for s in range(100))
    assert broken > 50


KEYS = st.sampled_from(["file_path", "old_text", "new_text", "path", "patch", "content", CLOSE])
VALUES = st.one_of(st.text(max_size=12), st.integers(), st.none(), st.booleans(),
                   st.just("from publication_manifest import load_manifest\n"))
VALIDATOR = tk.Contract("edit_file", "", EDIT_FILE_SCHEMA).validator
SCORES = st.floats(min_value=-5, max_value=5, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(keys=st.dictionaries(KEYS, SCORES, max_size=7),
       values=st.dictionaries(KEYS, st.dictionaries(VALUES, SCORES, max_size=4), max_size=7),
       budget=st.integers(min_value=0, max_value=40), seed=st.one_of(st.none(), st.integers(0, 10**6)))
def test_any_preferences_masked_output_always_passes_the_schema(keys, values, budget, seed):
    masked = generate(Preferences(keys, values), EDIT_FILE_SCHEMA, max_tokens=budget, seed=seed)
    arguments, errors = masked.arguments()
    if budget < 13:
        assert masked.stopped == "refused" and errors[0].code == "length"
        return
    assert masked.stopped == "complete" and errors == [] and len(masked.tokens) <= budget
    assert set(arguments) == {"file_path", "old_text", "new_text"}
    assert VALIDATOR.is_valid(arguments)
