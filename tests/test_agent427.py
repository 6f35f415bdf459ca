"""Agent-427's import failure, for real: the validator's lines, no edit, evidence, the corrected edit."""
import difflib
import json
import os
import subprocess
import sys

import pytest

import toolkit as tk
from course.worlds import agent427 as a
from course.worlds import correct_step, inspect_step, run_agent427
from toolkit.files import EDIT_FILE_SCHEMA, edit_file_contract, make_edit_file, sha256_bytes
from course.worlds import file_sha256, tree_digest

SEED_VALIDATOR = [
    "$.file_path: required property missing",
    "$.path: unexpected property",
    "$.patch: unexpected property",
    "import publication_manifest.load_manifest: symbol not exported",
]


@pytest.fixture
def ws(tmp_path):
    return a.copy_scenario(tmp_path / "ws")


def build(workspace):
    """Run the workspace's build script for real; return (exit code, pages it wrote or stderr)."""
    done = subprocess.run([sys.executable, "scripts/build_site.py"], cwd=workspace, capture_output=True, text=True)
    return done.returncode, done.stdout.split() if done.returncode == 0 else done.stderr


# ------------------------------------------------------------------ the scenario
def test_scenario_is_copied_never_edited(tmp_path):
    shipped = tree_digest(a.SCENARIO)
    episode = run_agent427(a.copy_scenario(tmp_path / "ws"))
    assert episode.before != episode.after
    assert tree_digest(a.SCENARIO) == shipped
    assert not (a.SCENARIO / "site").exists()


def test_the_line_to_replace_occurs_once_and_the_build_runs(ws):
    assert a.read_build_script(ws).count(a.OLD_TEXT) == 1
    code, pages = build(ws)
    assert code == 0
    # the hand-rolled json.loads publishes the draft chapter too: the reason for the edit
    assert pages == ["01-a-request-is-not-an-action.html", "02-contracts-and-legality.html",
                     "03-agent427-import-failure.html"]


# ---------------------------------------------------------------- the contract
def test_schema_reports_required_before_additional_properties():
    keys = list(EDIT_FILE_SCHEMA)
    assert keys.index("required") < keys.index("additionalProperties")
    assert EDIT_FILE_SCHEMA["additionalProperties"] is False


def test_every_valid_call_has_all_three_string_fields():
    validator = edit_file_contract(".").validator
    full = {"file_path": "a.py", "old_text": "x", "new_text": "y"}
    assert validator.is_valid(full)
    for missing in full:
        assert not validator.is_valid({k: v for k, v in full.items() if k != missing}), missing
    for key in full:
        assert not validator.is_valid({**full, key: 1}), key
    assert not validator.is_valid({**full, "extra": "z"})


def test_edit_file_card():
    card = edit_file_contract(".").card()
    assert card.splitlines() == [
        "tool edit_file(file_path, old_text, new_text)",
        "  requires: caller has fs.write; file_path stays inside the workspace; the file exists; "
        "old_text occurs exactly once; every import new_text introduces is exported",
        "  ensures: the file holds new_text where old_text was, and nothing else changed",
        "  retry: unsafe",
        "  risk: writes one workspace file",
        "  evidence: sha256 before and sha256 after",
    ]


# ---------------------------------------------------------------- the calamity
def test_first_proposal_prints_the_seed_validator_lines_and_edits_nothing(ws):
    host = a.episode_host(ws)
    before_file, before_tree = file_sha256(ws / a.BUILD_SCRIPT), tree_digest(ws)
    report = a.validate(a.first_proposal(), host)
    assert report.lines() == SEED_VALIDATOR
    assert a.validate(a.first_proposal(), ws).lines() == SEED_VALIDATOR      # a workspace will do, too
    # the first three really come from legality.check through the contract, the fourth from the export reader
    assert [e.line() for e in report.call_verdict.errors] == SEED_VALIDATOR[:3]
    assert [e.line() for e in report.code_errors] == SEED_VALIDATOR[3:]
    assert [t.outcome for t in report.verdict.tests] == [tk.Outcome.FAIL, tk.Outcome.NOT_EVALUABLE,
                                                         tk.Outcome.FAIL]
    assert report.verdict.legal == 0 and not report.ok
    assert report.transition() == "rejected_schema -> observe(errors) -> inspect_exports"
    result = host.execute(a.first_proposal())
    assert result.status is tk.Status.REJECTED and result.failure_class is tk.FailureClass.SCHEMA
    assert [e.line() for e in result.errors] == SEED_VALIDATOR
    assert file_sha256(ws / a.BUILD_SCRIPT) == before_file and tree_digest(ws) == before_tree


def test_transition_follows_the_first_failing_layer_and_the_evidence_needed(ws):
    host = a.episode_host(ws)
    fields_only = a.Proposal("from publication_manifest import load_publication_manifest",
                             a.first_proposal().call)
    assert a.validate(fields_only, host).transition() == "rejected_schema -> observe(errors) -> propose_again"
    name_only = a.Proposal(a.first_proposal().code, a.corrected_proposal().call)
    assert a.validate(name_only, host).transition() == \
        "rejected_precondition -> observe(errors) -> inspect_exports"
    stale = a.corrected_proposal()
    stale = a.Proposal(stale.code, tk.request("edit_file", {**stale.arguments, "old_text": "MANIFEST = {}\n"}))
    assert a.validate(stale, host).transition() == "rejected_precondition -> observe(errors) -> read_file"
    assert a.validate(a.corrected_proposal(), host).transition() == "legal -> execute -> observe(result)"


def test_inspect_exports_reads_the_real_names(ws):
    found = a.inspect_exports(ws)
    assert found.names == ("ManifestError", "load_publication_manifest") and found.rule == "__all__"
    closest = difflib.get_close_matches("load_manifest", found.names, n=1, cutoff=0.0)
    assert closest == ["load_publication_manifest"]


# ---------------------------------------------------------- the corrected edit
def test_corrected_proposal_passes_all_three_tests_and_edits_exactly_once(ws):
    host = a.episode_host(ws)
    before = a.read_build_script(ws)
    report = a.validate(a.corrected_proposal(), host)
    assert report.ok and report.lines() == []
    assert [t.outcome for t in report.verdict.tests] == [tk.Outcome.PASS] * 3
    result = host.execute(a.corrected_proposal())
    assert result.status is tk.Status.SUCCEEDED
    after = a.read_build_script(ws)
    assert before.count(a.OLD_TEXT) == 1
    assert after == before.replace(a.OLD_TEXT, a.new_text("load_publication_manifest"), 1)
    changed = [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:1] in "+-"]
    assert changed == ["- " + a.OLD_TEXT.rstrip("\n"),
                       "+ from publication_manifest import load_publication_manifest", "+ ",
                       "+ MANIFEST = load_publication_manifest(BOOK_DIR)"]
    assert result.evidence == {"sha256_before": sha256_bytes(before.encode()),
                               "sha256_after": sha256_bytes(after.encode())}
    assert result.output["line"] == before[: before.index(a.OLD_TEXT)].count("\n") + 1


def test_the_corrected_build_runs_and_leaves_out_the_draft(ws):
    a.episode_host(ws).execute(a.corrected_proposal())
    code, pages = build(ws)
    assert code == 0
    assert pages == ["01-a-request-is-not-an-action.html", "02-contracts-and-legality.html"]
    assert json.loads((ws / "site/pages.json").read_text()) == pages


def test_the_refused_import_would_really_have_broken_the_build(ws):
    # bypass every check and write what Agent-427 first wanted: the build fails on import
    script = ws / a.BUILD_SCRIPT
    script.write_text(a.read_build_script(ws).replace(a.OLD_TEXT, a.new_text("load_manifest")))
    code, stderr = build(ws)
    assert code != 0 and "ImportError: cannot import name 'load_manifest'" in stderr


def test_a_retry_after_success_is_refused_not_applied_twice(ws):
    host = a.episode_host(ws)
    assert host.execute(a.corrected_proposal()).ok
    once = a.read_build_script(ws)
    again = host.execute(a.corrected_proposal(call_id="call_4"))
    assert again.status is tk.Status.REJECTED
    assert again.errors[0].line() == "$.old_text: old_text occurs 0 times in scripts/build_site.py"
    assert a.read_build_script(ws) == once


def test_why_retry_is_unsafe_an_edit_whose_new_text_contains_old_text_applies_twice(ws):
    host = a.episode_host(ws)
    anchor = "SITE_DIR = ROOT / \"site\"\n"
    args = {"file_path": a.BUILD_SCRIPT, "old_text": anchor, "new_text": anchor + "DRAFTS = False\n"}
    assert host.execute(tk.request("edit_file", args)).ok
    assert host.execute(tk.request("edit_file", args)).ok      # same call again: a second effect
    assert a.read_build_script(ws).count("DRAFTS = False\n") == 2
    assert edit_file_contract(ws).retry is tk.Retry.UNSAFE


def test_file_changed_between_check_and_run_is_refused(ws):
    host = a.episode_host(ws)
    verdict = host.check(a.corrected_proposal())
    assert verdict.legal == 1
    script = ws / a.BUILD_SCRIPT
    script.write_text(script.read_text().replace(a.OLD_TEXT, "MANIFEST = {}\n"))
    changed = file_sha256(script)
    result = host.execute(a.corrected_proposal(), verdict)
    assert result.status is tk.Status.REJECTED and "changed since the check" in result.errors[0].message
    assert file_sha256(script) == changed


def test_postcondition_notices_a_file_that_is_not_what_the_edit_made(ws):
    tool = make_edit_file(ws)
    args = a.corrected_proposal().arguments
    output = tool.run(args, None)
    [replaced_once] = tool.contract.postconditions
    assert replaced_once.predicate(args, output, None) is True
    script = ws / a.BUILD_SCRIPT
    script.write_text(script.read_text() + "# touched afterwards\n")
    assert replaced_once.predicate(args, output, None) is False


# ------------------------------------------------------------------ the episode
def test_episode_transcript_line_for_line(tmp_path):
    episode = run_agent427(a.copy_scenario(tmp_path / "ws"))
    before, after = episode.before.encode(), episode.after.encode()
    expected = [
        "proposal.code:",
        "  from publication_manifest import load_manifest",
        "",
        "proposal.tool:",
        '  edit_file({"path": "scripts/build_site.py",',
        '             "patch": "use load_manifest(BOOK_DIR)"})',
        "",
        "validator:",
        *[f"  {line}" for line in SEED_VALIDATOR],
        "",
        "transition:",
        "  rejected_schema -> observe(errors) -> inspect_exports",
        "",
        'inspect_exports({"module": "publication_manifest"}):',
        "  publication_manifest exports ManifestError, load_publication_manifest (rule: __all__)",
        "",
        "corrected proposal:",
        "  from publication_manifest import load_publication_manifest",
        '  edit_file({"file_path": "scripts/build_site.py",',
        '             "old_text": "MANIFEST = json.loads((BOOK_DIR / \\"manifest....",',
        '             "new_text": "from publication_manifest import load_public..."})',
        "",
        "validator:",
        "  schema_ok pass, auth_ok pass, Pre pass: legal = 1",
        "",
        "result:",
        f"  succeeded: scripts/build_site.py, line {episode.before.splitlines().index(a.OLD_TEXT.strip()) + 1}"
        " replaced",
        f"  sha256 before {sha256_bytes(before)[:12]}  after {sha256_bytes(after)[:12]}",
        "",
        "interpreter:",
        '  step 1: rejected edit_file({"path": "scripts/build_site.py", "patch": "use load_manifest(BOOK_DIR)"}) '
        "#call_1 -> rejected (missing_required)",
        '  step 2: result   inspect_exports({"module": "publication_manifest"}) #call_2 -> succeeded',
        '  step 3: result   edit_file({"file_path": "scripts/build_site.py", "old_text": "MANIFEST = json.loads((BO'
        '...) #call_3 -> succeeded',
    ]
    assert episode.transcript().splitlines() == expected
    assert str(tmp_path) not in episode.transcript()
    assert episode.state.done and len(episode.attempts) == 3


def test_episode_policy_reads_the_observations(tmp_path):
    episode = run_agent427(a.copy_scenario(tmp_path / "ws"))
    first, inspect, second = episode.state.observations
    assert first.kind == "rejected" and [e.line() for e in first.result.errors] == SEED_VALIDATOR
    assert inspect.call.arguments == {"module": "publication_manifest"} and inspect.result.ok
    assert second.call.code == "from publication_manifest import load_publication_manifest"
    assert second.result.ok
    assert [line[0] for line in episode.diff() if line[:1] in "+-" and line[:3] not in ("---", "+++")] == \
        ["-", "+", "+", "+"]


def test_a_policy_step_stops_when_the_evidence_is_not_there():
    state = tk.State("t")
    assert inspect_step(state) is None and correct_step(state) is None


# --------------------------------------------------------------- hostile input
HOSTILE = [
    ({"file_path": "/etc/passwd", "old_text": "root", "new_text": "x"}, "auth_ok", "absolute paths are refused"),
    ({"file_path": "../outside.py", "old_text": "secret", "new_text": "x"}, "auth_ok",
     'file_path is refused: its ".." climbs above the workspace'),
    ({"file_path": "scripts/../../outside.py", "old_text": "secret", "new_text": "x"}, "auth_ok",
     'file_path is refused: its ".." climbs above the workspace'),
    ({"file_path": "linked/outside.py", "old_text": "secret", "new_text": "x"}, "auth_ok",
     "file_path resolves outside the workspace"),
    ({"file_path": "scripts/\x00.py", "old_text": "a", "new_text": "b"}, "auth_ok",
     "file_path contains a NUL byte"),
    ({"file_path": "escape.py", "old_text": "secret", "new_text": "x"}, "auth_ok",
     "file_path resolves outside the workspace"),
    ({"file_path": "scripts", "old_text": "a", "new_text": "b"}, "Pre", "scripts is not a regular file"),
    ({"file_path": "pipe", "old_text": "a", "new_text": "b"}, "Pre", "pipe is not a regular file"),
    ({"file_path": "latin1.txt", "old_text": "a", "new_text": "b"}, "Pre", "latin1.txt is not readable UTF-8 text"),
    ({"file_path": "nope.py", "old_text": "a", "new_text": "b"}, "Pre", "no such file: nope.py"),
    ({"file_path": 7, "old_text": ["a"], "new_text": None}, "schema_ok", "expected string, got integer"),
    ({"file_path": "", "old_text": "", "new_text": ""}, "schema_ok", "violates minLength 1"),
    ({"file_path": a.BUILD_SCRIPT, "old_text": "import", "new_text": "x"}, "Pre",
     "old_text occurs 5 times in scripts/build_site.py"),
    ({"file_path": a.BUILD_SCRIPT, "old_text": a.OLD_TEXT, "new_text": "MANIFEST = (\n"}, "Pre",
     "the edited scripts/build_site.py would not parse (line 17: '(' was never closed)"),
    ({"file_path": a.BUILD_SCRIPT, "old_text": a.OLD_TEXT, "new_text": a.new_text("load_manifest")}, "Pre",
     "symbol not exported"),
    ({"file_path": "book/manifest.json", "old_text": "draft", "new_text": "x", "mode": "force"}, "schema_ok",
     "unexpected property"),
    ('{"file_path": "scripts/build_site.py", "old_text": "x"', "schema_ok", "arguments are not valid JSON"),
    ([1, 2], "schema_ok", "arguments must be a JSON object"),
]


@pytest.mark.parametrize("arguments, layer, message", HOSTILE)
def test_hostile_edits_are_refused_with_a_structured_error_and_change_nothing(tmp_path, arguments, layer, message):
    ws = a.copy_scenario(tmp_path / "ws")
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    (ws / "escape.py").symlink_to(outside)
    (ws / "linked").symlink_to(tmp_path, target_is_directory=True)   # a folder inside that leads outside
    os.mkfifo(ws / "pipe")                       # reading a FIFO would block forever
    (ws / "latin1.txt").write_bytes(b"caf\xe9 a\n")
    digest, outside_bytes = tree_digest(ws), outside.read_bytes()
    host = a.episode_host(ws)
    result = host.execute(tk.request("edit_file", arguments))
    verdict = host.log[-1].verdict
    assert result.status is tk.Status.REJECTED
    assert layer in verdict.blocked_by
    failing = next(t for t in verdict.tests if t.name == layer)
    assert any(message in e.message for e in failing.errors), [e.line() for e in failing.errors]
    assert all(isinstance(e, tk.ToolError) for e in result.errors)
    assert tree_digest(ws) == digest and outside.read_bytes() == outside_bytes


def test_a_path_that_climbs_back_inside_is_edited(ws):
    (ws / "README.md").write_text("draft\n")
    result = a.episode_host(ws).execute(tk.request("edit_file", {"file_path": "scripts/../README.md",
                                                                 "old_text": "draft", "new_text": "final"}))
    assert result.ok and result.output["file_path"] == "README.md"
    assert (ws / "README.md").read_text() == "final\n"


def test_the_run_reads_and_writes_without_following_links(ws, tmp_path):
    """Past the host's check (the run called directly), rung 3 still refuses links, for reads and for writes."""
    from toolkit.kernel import write_confined
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("secret\n")
    (ws / "linked").symlink_to(outside, target_is_directory=True)
    run = make_edit_file(ws).run
    with pytest.raises(tk.ToolFailure) as caught:                # read through a linked folder
        run({"file_path": "linked/notes.txt", "old_text": "secret", "new_text": "x"}, None)
    assert caught.value.status is tk.Status.REJECTED
    root = ws.resolve()
    for relative in ("linked/notes.txt", "linked/new.txt"):      # write through a linked folder
        with pytest.raises(tk.PathRefused) as refused:
            write_confined(root, relative, b"x")
        assert (refused.value.rung, refused.value.kind) == (3, "symlink")
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]
    assert (outside / "notes.txt").read_text() == "secret\n"


def test_a_file_swapped_for_a_link_after_the_check_is_not_followed(ws, tmp_path, monkeypatch):
    import toolkit.files.edit_file as edit_file
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    (ws / "notes.txt").write_text("draft\n")
    real_read = edit_file._read_text

    def read_then_swap(root, args):                   # the check reads the file, then someone swaps it
        found = real_read(root, args)
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").symlink_to(secret)
        return found

    monkeypatch.setattr(edit_file, "_read_text", read_then_swap)
    with pytest.raises(tk.ToolFailure) as caught:
        make_edit_file(ws).run({"file_path": "notes.txt", "old_text": "draft", "new_text": "final"}, None)
    assert caught.value.reason == "path_refused" and "symbolic link" in caught.value.message
    assert secret.read_text() == "secret\n" and (ws / "notes.txt").is_symlink()
    monkeypatch.undo()
    result = a.episode_host(ws).execute(tk.request("edit_file", {"file_path": "notes.txt", "old_text": "secret",
                                                                 "new_text": "x"}))
    assert result.status is tk.Status.REJECTED and secret.read_text() == "secret\n"


def test_an_edit_without_the_write_scope_is_refused(ws):
    host = tk.Host.of([make_edit_file(ws)], tk.Caller("reader", frozenset({"fs.read"})), ws)
    digest = tree_digest(ws)
    result = host.execute(a.corrected_proposal().call)
    assert result.failure_class is tk.FailureClass.AUTHORIZATION
    assert result.errors[0].line() == "tool edit_file: caller lacks fs.write"
    assert tree_digest(ws) == digest


def test_edit_keeps_bytes_it_does_not_touch(ws):
    path = ws / "notes.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    result = a.episode_host(ws).execute(tk.request("edit_file", {"file_path": "notes.txt", "old_text": "second",
                                                                  "new_text": "2nd"}))
    assert result.ok and path.read_bytes() == b"first\r\n2nd\r\nthird\r\n"


def test_a_throwaway_copy_is_removed_and_an_episode_without_a_workspace_leaves_no_folder():
    with a.scenario_copy() as ws:
        assert (ws / a.BUILD_SCRIPT).is_file() and ws.parent.name.startswith("agent427-")
    assert not ws.parent.exists(), "the temporary folder goes when the with block ends"
    episode = run_agent427()
    assert episode.after != episode.before and "load_publication_manifest" in episode.after
    assert not episode.workspace.parent.exists(), "run_agent427() without a workspace cleans up after itself"
