"""read_file through the host: the chapter's three cases, each layer, and the proof that nothing outside is opened."""
from __future__ import annotations

import hashlib
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolkit as tk
from toolkit._codes import CODES
import toolkit.kernel.read_file as ladder
from hostile_paths import (CAP, HOSTILE, LEGIT, SECRETS, build_tree, file_opens, recording_opens, stray_opens,
                           within)
from toolkit.kernel import READ_FILE_LAYERS, make_read_file
from course.worlds.demo_tree import read_file_switch
from toolkit._paths import AUTHORIZATION_KINDS, HINTS
from course.worlds import allowed_extensions
from toolkit._paths import ReadRefused
from toolkit._workspace import Workspace
from toolkit.kernel import LAYER_OF


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return build_tree(tmp_path_factory.mktemp("read_file"))


def host_for(tree, **options) -> tk.Host:
    return tk.Host.of([make_read_file(tree.ws, max_bytes=CAP, **options)])


@pytest.fixture(scope="module")
def host(tree):
    return host_for(tree)


def call(host: tk.Host, arguments, call_id: str = "c1") -> tuple[tk.ToolResult, list]:
    with recording_opens() as opens:
        result = within(5, host.execute, tk.request("read_file", arguments, call_id=call_id))
    return result, opens


def shows_nothing_private(result: tk.ToolResult, tree) -> bool:
    text = json.dumps(result.to_dict(), ensure_ascii=False)
    return str(tree.base) not in text and not any(secret.decode() in text for secret in SECRETS)


# ------------------------------------------------------------ the chapter's three
def test_the_three_cases_get_three_different_statuses(tree, host):
    missing, opens_missing = call(host, {}, "c1")
    outside, opens_outside = call(host, {"path": "/etc/passwd"}, "c2")
    valid, opens_valid = call(host, {"path": "src/config.ts"}, "c3")

    assert (missing.status, missing.failure_class) == (tk.Status.REJECTED, tk.FailureClass.SCHEMA)
    assert [(e.code, e.pointer) for e in missing.errors] == [("missing_required", "$.path")]
    assert (outside.status, outside.failure_class) == (tk.Status.REJECTED, tk.FailureClass.AUTHORIZATION)
    assert [(e.code, e.pointer) for e in outside.errors] == [("path_refused", "$.path")]
    data = (tree.ws / "src/config.ts").read_bytes()
    assert valid.status is tk.Status.SUCCEEDED and valid.failure_class is None
    assert valid.evidence == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert valid.output["content"] == data.decode()
    assert [r.call_id for r in (missing, outside, valid)] == ["c1", "c2", "c3"]
    assert len({(r.status, r.failure_class) for r in (missing, outside, valid)}) == 3

    assert opens_missing == [] and opens_outside == []      # refused calls open nothing at all
    assert [p for p, _ in file_opens(opens_valid)] == ["config.ts"]   # the valid one opens its own file only


def test_the_outside_case_is_blocked_by_the_path_layer_alone(host):
    verdict = host.check(tk.request("read_file", {"path": "/etc/passwd"}))
    assert verdict.blocked_by == ("auth_ok",) and verdict.legal == 0


def test_a_config_that_does_not_exist_is_a_wrong_tool_rejection(host):
    result, opens = call(host, {"path": "src/config.json"})
    assert (result.status, result.failure_class) == (tk.Status.REJECTED, tk.FailureClass.PRECONDITION)
    error = result.errors[0]
    assert (error.code, error.pointer, error.layer) == ("precondition_failed", "$.path", "business")
    assert "switch tools" in error.hint and "no such file" in error.message
    assert opens == []


def test_a_directory_is_refused_with_a_hint_to_list_it(host):
    result, _ = call(host, {"path": "src"})
    assert result.failure_class is tk.FailureClass.PRECONDITION and "listing tool" in result.errors[0].hint


# ------------------------------------------------------------------ corpus
def expected(kind: str) -> tuple[tk.FailureClass, str]:
    """Rungs 1-2 belong to the path layer; what rung 3 would refuse, the business precondition sees first.

    A path that is not text (it holds lone surrogates) is not even valid JSON text: the schema layer refuses it.
    """
    if kind == "not_text":
        return tk.FailureClass.SCHEMA, "not_serializable"
    if HINTS[kind][0] < 3:
        return tk.FailureClass.AUTHORIZATION, "path_refused"
    return tk.FailureClass.PRECONDITION, "precondition_failed"


@pytest.mark.parametrize("template, kind", HOSTILE, ids=[f"{i:03d}-{k}" for i, (_, k) in enumerate(HOSTILE)])
def test_every_hostile_path_is_rejected_before_anything_is_opened(tree, host, template, kind):
    if template.split("/")[0] in tree.unavailable:
        pytest.skip("this system cannot create that file type here")
    result, opens = call(host, {"path": tree.fill(template)})
    klass, code = expected(kind)
    assert result.status is tk.Status.REJECTED, f"{template!r} was not rejected: {result.status}"
    assert (result.failure_class, result.errors[0].code, result.errors[0].pointer) == (klass, code, "$.path")
    assert opens == [], f"{template!r}: opened {opens}"
    assert shows_nothing_private(result, tree)


@pytest.mark.parametrize("template, kind", HOSTILE, ids=[f"{i:03d}-{k}" for i, (_, k) in enumerate(HOSTILE)])
def test_with_every_layer_cut_the_executor_still_refuses(tree, template, kind):
    if template.split("/")[0] in tree.unavailable:
        pytest.skip("this system cannot create that file type here")
    bare = host_for(tree, layers=())
    result, opens = call(bare, {"path": tree.fill(template)})
    if kind == "not_text":          # no layer to cut: arguments that are not JSON text never reach a tool
        assert result.errors[0].code == "not_serializable" and file_opens(opens) == []
        return
    assert bare.log[-1].verdict.legal == 1                   # the host waved it through...
    assert result.status is tk.Status.REJECTED               # ...and rung 3's executor still said no
    assert result.reason == "path_refused" and result.errors[0].code == "path_refused"
    refusal_class = tk.FailureClass.AUTHORIZATION if kind in AUTHORIZATION_KINDS else tk.FailureClass.PRECONDITION
    assert result.failure_class is refusal_class
    assert file_opens(opens) == [] and stray_opens(opens, tree.ws) == []
    assert shows_nothing_private(result, tree)


def test_the_executors_refusal_carries_its_rung_as_a_field(tree):
    bare = make_read_file(tree.ws, max_bytes=CAP, layers=())
    for path, rung in (("../outside/secret.txt", 1), ("link_out", 2), ("big.bin", 3)):
        with pytest.raises(ReadRefused) as caught:
            bare.run({"path": path}, None)
        assert isinstance(caught.value, tk.ToolFailure) and caught.value.reason == "path_refused"
        assert caught.value.rung == caught.value.refusal.rung == rung, path
        assert caught.value.error.message.startswith(f"rung {rung} (")


@pytest.mark.parametrize("template, real", LEGIT, ids=[r for _, r in LEGIT])
def test_legitimate_paths_succeed_with_evidence(tree, host, template, real):
    result, opens = call(host, {"path": tree.fill(template)})
    data = (tree.ws / real).read_bytes()
    assert result.status is tk.Status.SUCCEEDED
    assert result.output["resolved"] == real
    assert result.evidence == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert result.output["lossless"] is (real != "binary.bin")
    assert len(file_opens(opens)) == 1 and stray_opens(opens, tree.ws) == []


# ------------------------------------------------------------ cutting layers
def test_cutting_the_schema_layer_hands_bad_shapes_to_the_path_layer(tree):
    loose = host_for(tree, layers={"path", "business"})
    for arguments in ({"path": ["src/config.ts"]}, {}, {"path": None}):
        result, opens = call(loose, arguments)
        assert (result.status, result.failure_class) == (tk.Status.REJECTED, tk.FailureClass.AUTHORIZATION)
        assert "must be a string" in result.errors[0].message and opens == []


def test_cutting_the_path_layer_hands_escapes_to_the_executor(tree):
    trusting = host_for(tree, layers={"schema", "business"})
    result, opens = call(trusting, {"path": "../outside/secret.txt"})
    verdict = trusting.log[-1].verdict
    assert verdict.legal == 1 and verdict.blocked_by == ()
    assert (result.status, result.failure_class) == (tk.Status.REJECTED, tk.FailureClass.AUTHORIZATION)
    assert "rung 1" in result.errors[0].message and opens == []


def test_cutting_the_business_layer_turns_wrong_tool_into_an_executor_refusal(tree):
    careless = host_for(tree, layers={"schema", "path"})
    result, _ = call(careless, {"path": "src/config.json"})
    assert careless.log[-1].verdict.legal == 1
    assert (result.status, result.failure_class, result.reason) == (
        tk.Status.REJECTED, tk.FailureClass.PRECONDITION, "path_refused")


def test_unknown_layer_names_are_a_programming_error(tree):
    with pytest.raises(ValueError, match="unknown layers"):
        make_read_file(tree.ws, layers={"schema", "paths"})
    assert list(READ_FILE_LAYERS) == ["schema", "path", "business"]
    assert [layer.test for layer in READ_FILE_LAYERS.values()] == list(LAYER_OF)       # one layer map
    assert [read_file_switch(test) for test in ("schema_ok", "auth_ok", "Pre")] == ["schema", "path", "business"]


# ---------------------------------------------------------- check, then use
def test_a_file_swapped_for_a_link_between_check_and_run_is_refused(tmp_path):
    tree = build_tree(tmp_path)
    host = host_for(tree)
    request = tk.request("read_file", {"path": "notes.txt"}, call_id="race")
    verdict = host.check(request)
    assert verdict.legal == 1
    (tree.ws / "notes.txt").unlink()
    os.symlink("../outside/secret.txt", tree.ws / "notes.txt")
    with recording_opens() as opens:
        result = host.execute(request, verdict)
    assert (result.status, result.failure_class) == (tk.Status.REJECTED, tk.FailureClass.AUTHORIZATION)
    assert file_opens(opens) == [] and shows_nothing_private(result, tree)


def test_a_link_swapped_in_inside_the_executor_is_caught_by_rung_3(tmp_path, monkeypatch):
    tree = build_tree(tmp_path)
    host = host_for(tree)
    real_check = ladder.check_realpath

    def check_then_swap(root, path):
        relative = real_check(root, path)
        (tree.ws / "notes.txt").unlink()
        os.symlink("../outside/secret.txt", tree.ws / "notes.txt")
        return relative

    verdict = host.check(tk.request("read_file", {"path": "notes.txt"}, call_id="race"))
    monkeypatch.setattr(ladder, "check_realpath", check_then_swap)
    with recording_opens() as opens:
        result = host.execute(verdict.call, verdict)
    assert result.status is tk.Status.REJECTED and "rung 3" in result.errors[0].message
    assert file_opens(opens) == [] and shows_nothing_private(result, tree)


# ------------------------------------------------------------- the contract
def test_the_contract_says_what_the_chapter_says(tree, host):
    contract = host.contract("read_file")
    assert contract.retry is tk.Retry.SAFE and contract.evidence == ("size", "sha256")
    assert contract.schema["required"] == ["path"] and contract.schema["additionalProperties"] is False
    assert contract.resources({"path": "src/config.ts"}) == (frozenset({"file:src/config.ts"}), frozenset())
    card = contract.card()
    assert "tool read_file(path, mode)" in card and "inside the workspace" in card and "retry: safe" in card
    extra, _ = call(host, {"path": "notes.txt", "encoding": "rw"})
    assert [(e.code, e.pointer) for e in extra.errors] == [("unexpected_property", "$.encoding")]


def test_reading_twice_gives_the_same_evidence(host):
    first, _ = call(host, {"path": "notes.txt"}, "r1")
    second, _ = call(host, {"path": "notes.txt"}, "r2")
    assert first.evidence == second.evidence and first.output["content"] == second.output["content"]


def test_an_extension_allow_list_is_a_business_rule(tree):
    strict = host_for(tree, preconditions=(allowed_extensions(".ts", ".md"),))
    refused, opens = call(strict, {"path": "notes.txt"})
    assert (refused.failure_class, refused.errors[0].code) == (tk.FailureClass.PRECONDITION, "precondition_failed")
    assert ".md" in refused.errors[0].hint and opens == []
    assert call(strict, {"path": "src/config.ts"})[0].ok


def test_a_smaller_cap_is_enforced_by_the_precondition_and_by_rung_3(tree):
    small = host_for(tree, layers={"schema", "path"})
    tiny = tk.Host.of([make_read_file(Workspace(tree.ws, max_bytes=4), layers={"schema", "path"})])
    assert small.execute(tk.request("read_file", {"path": "notes.txt"})).ok
    result = tiny.execute(tk.request("read_file", {"path": "notes.txt"}))
    assert result.status is tk.Status.REJECTED and "over the cap of 4" in result.errors[0].message


def test_workspace_passed_as_object_keeps_its_root(tree):
    ws = Workspace(tree.ws, max_bytes=CAP)
    assert tk.Host.of([make_read_file(ws)]).execute(tk.request("read_file", {"path": "README.md"})).ok


# -------------------------------------------------------------- any input
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)
ATOMS = ["..", ".", "", "/", "src", "config.ts", "link_out", "linkdir_out", "link_parent", "fifo", "outside",
         "secret.txt", "ws", "ws_evil", "%2e%2e", "~", "\x00", "\\", "big.bin", "notes.txt"]
PATHS = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(ATOMS), max_size=8).map("/".join))
ARGUMENTS = st.one_of(st.fixed_dictionaries({"path": PATHS}), st.fixed_dictionaries({"path": JSON}), JSON,
                      st.text(max_size=60))


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=ARGUMENTS)
def test_any_arguments_end_in_one_structured_result(tree, host, arguments):
    result, opens = call(host, arguments)
    assert result.status in (tk.Status.SUCCEEDED, tk.Status.REJECTED)
    assert stray_opens(opens, tree.ws) == []
    assert shows_nothing_private(result, tree)
    if result.ok:
        real = (tree.ws / result.output["resolved"]).resolve()
        assert real.is_relative_to(tree.ws) and len(file_opens(opens)) == 1
    else:
        assert result.errors and all(e.code in CODES for e in result.errors)
        assert file_opens(opens) == []


def test_the_four_common_errors_each_get_their_own_structured_error(tmp_path):
    from course.worlds.demo_tree import common_errors

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.ts").write_text("export const port = 8080;\n")
    rows = common_errors(tmp_path)
    assert [(r["code"], r["pointer"], r["failure_class"]) for r in rows] == [
        ("missing_required", "$.path", "schema"),
        ("wrong_type", "$.path", "schema"),
        ("enum", "$.mode", "schema"),
        ("precondition_failed", "$.path", "precondition"),
    ]
    assert "text, lines" in rows[2]["feedback"]          # the allowed enum values go back to the model
    assert "switch tools" in rows[3]["feedback"]          # the wrong-tool row invites a different tool
    assert all(r["status"] == "rejected" for r in rows)


def test_lines_mode_returns_the_lines(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    host = tk.Host.of([make_read_file(tmp_path)])
    result = host.execute(tk.request("read_file", {"path": "a.txt", "mode": "lines"}))
    assert result.ok and result.output["lines"] == ["one", "two"] and result.output["content"] == "one\ntwo\n"
