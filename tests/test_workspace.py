"""The path ladder: what each rung refuses, that nothing outside is ever opened, and that real files still read."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolkit.kernel.read_file as ladder
from course.worlds.rungs import explain, ladder as rung_steps
import toolkit._nofollow as nofollow
from hostile_paths import (CAP, HOSTILE, LEGIT, SECRETS, build_tree, file_opens, is_directory_open,
                           recording_opens, stray_opens, within)
from toolkit.kernel import FailureClass
from toolkit._paths import AUTHORIZATION_KINDS, HINTS, PathRefused
from toolkit.kernel import check_lexical, check_realpath, open_confined
from toolkit._nofollow import FileRead
from toolkit._workspace import Workspace


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return build_tree(tmp_path_factory.mktemp("ladder"))


@pytest.fixture(scope="module")
def ws(tree):
    return Workspace(tree.ws, max_bytes=CAP)


@pytest.fixture
def fresh(tmp_path):
    """A tree of its own, for tests that change files."""
    tree = build_tree(tmp_path)
    return tree, Workspace(tree.ws, max_bytes=CAP)


def assert_no_leak(refusal: PathRefused, tree) -> None:
    text = json.dumps(refusal.error.to_dict(), ensure_ascii=False)
    assert str(tree.base) not in text, f"the refusal shows an absolute host path: {text}"
    assert not any(secret.decode() in text for secret in SECRETS)


# ----------------------------------------------------------------- corpus
def test_corpus_is_large_and_distinct():
    paths = [p for p, _ in HOSTILE]
    assert len(paths) >= 100 and len(set(paths)) == len(paths)
    assert len(LEGIT) >= 20
    assert {kind for _, kind in HOSTILE} <= set(HINTS)


@pytest.mark.parametrize("template, kind", HOSTILE, ids=[f"{i:03d}-{k}" for i, (_, k) in enumerate(HOSTILE)])
def test_hostile_path_is_refused_without_opening_anything(tree, ws, template, kind):
    name = template.split("/")[0]
    if name in tree.unavailable:
        pytest.skip(f"this system cannot create {name!r} here")
    path = tree.fill(template)
    with recording_opens() as opens:
        with pytest.raises(PathRefused) as caught:
            within(5, ws.read, path)
    refusal = caught.value
    assert refusal.kind == kind, f"{template!r}: refused as {refusal.kind} at rung {refusal.rung}, expected {kind}"
    assert refusal.rung == HINTS[kind][0]
    error = refusal.error
    assert (error.code, error.pointer, error.layer) == ("path_refused", "$.path", "permission")
    assert error.message.startswith(f"rung {refusal.rung} (") and error.hint
    assert_no_leak(refusal, tree)
    if refusal.rung < 3:
        assert opens == [], f"rungs 1-2 must not open anything, saw {opens}"
    assert file_opens(opens) == [], f"{template!r}: a non-directory was opened: {file_opens(opens)}"
    assert stray_opens(opens, tree.ws) == []
    expected_class = FailureClass.AUTHORIZATION if kind in AUTHORIZATION_KINDS else FailureClass.PRECONDITION
    assert refusal.failure_class is expected_class


@pytest.mark.parametrize("template, real", LEGIT, ids=[r for _, r in LEGIT])
def test_legitimate_path_reads_the_right_bytes(tree, ws, template, real):
    with recording_opens() as opens:
        got = ws.read(tree.fill(template))
    data = (tree.ws / real).read_bytes()
    assert isinstance(got, FileRead)
    assert (got.path, got.data, got.size) == (real, data, len(data))
    assert got.sha256 == hashlib.sha256(data).hexdigest()
    assert got.evidence() == {"size": len(data), "sha256": got.sha256}
    assert len(file_opens(opens)) == 1 and stray_opens(opens, tree.ws) == []


def test_text_is_lossless_only_for_utf8(ws):
    assert ws.read("données/résumé.txt").lossless
    binary = ws.read("binary.bin")
    assert not binary.lossless and "\ufffd" in binary.text and binary.size == 256


def test_no_descriptor_is_left_open(tree, ws):
    before = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").exists() else None
    if before is None:
        pytest.skip("no /proc/self/fd here")
    for template, _ in HOSTILE + LEGIT:
        if template.split("/")[0] in tree.unavailable:
            continue
        try:
            ws.read(tree.fill(template))
        except PathRefused:
            pass
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("value", [None, 12, 1.5, True, b"notes.txt", ["notes.txt"], {"path": "notes.txt"}])
def test_a_non_string_path_is_refused_at_rung_1(ws, value):
    with pytest.raises(PathRefused) as caught:
        ws.read(value)
    assert (caught.value.kind, caught.value.rung) == ("not_text", 1)


# ------------------------------------------------------- what each rung catches
def test_rung_1_compares_components_not_characters(tree, ws):
    sibling = f"{tree.ws}_evil/secret.txt"
    assert sibling.startswith(str(tree.ws))          # the naive check would let it in
    with pytest.raises(PathRefused) as caught:
        check_lexical(ws.root, sibling)
    assert caught.value.kind == "absolute"
    assert check_lexical(ws.root, f"{tree.ws}/src/config.ts") == PurePosixPath("src/config.ts")


def test_rung_1_allows_dotdot_only_while_it_stays_inside(ws):
    assert check_lexical(ws.root, "src/app/../config.ts") == PurePosixPath("src/config.ts")
    for climbing in ("../ws/notes.txt", "src/../../ws/notes.txt"):
        with pytest.raises(PathRefused) as caught:
            check_lexical(ws.root, climbing)
        assert caught.value.kind == "traversal"


def test_rung_1_misses_links_and_rung_2_catches_them(ws):
    assert check_lexical(ws.root, "link_out") == PurePosixPath("link_out")
    with recording_opens() as opens, pytest.raises(PathRefused) as caught:
        check_realpath(ws.root, "link_out")
    assert (caught.value.rung, caught.value.kind, opens) == (2, "outside", [])


def test_rung_2_is_component_based_too(ws):
    with pytest.raises(PathRefused) as caught:
        check_realpath(ws.root, "link_sibling_abs")    # points at /.../ws_evil/secret.txt
    assert caught.value.kind == "outside"


def test_rung_3_alone_refuses_escapes(ws):
    for path, kind in (("../outside/secret.txt", "traversal"), ("link_out", "symlink"),
                       ("linkdir_out/secret.txt", "symlink"), ("src/link_up/secret.txt", "symlink")):
        with recording_opens() as opens, pytest.raises(PathRefused) as caught:
            open_confined(ws.root, path, CAP)
        assert (caught.value.rung, caught.value.kind) == (3, kind), path
        assert file_opens(opens) == []


def test_the_ladder_reports_each_rung(ws):
    assert explain(ws, "link_out").splitlines() == [
        "rung 1 lexical  pass        'link_out'",
        "rung 2 realpath refused     it resolves to a place outside the workspace",
        "rung 3 open     not reached",
    ]
    lines = explain(ws, "fifo").splitlines()
    assert lines[2] == "rung 3 open     refused     it is a FIFO (named pipe), not a regular file"
    assert [s.outcome for s in rung_steps(ws, "notes.txt")] == ["pass", "pass", "pass"]
    assert [s.outcome for s in rung_steps(ws, "/etc/passwd")] == ["refused", "not reached", "not reached"]


def test_printing_a_workspace_or_a_read_shows_no_machine_path(tree, ws):
    assert repr(ws) == f"Workspace('ws', max_bytes={CAP})"
    shown_read = repr(ws.read("notes.txt"))
    assert str(tree.base) not in shown_read and shown_read.startswith("FileRead(path='notes.txt', size=")


def test_a_workspace_must_be_an_existing_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        Workspace(tmp_path / "file")
    with pytest.raises(FileNotFoundError):
        Workspace(tmp_path / "absent")


def test_messages_never_show_the_workspace_location(tree, ws):
    for path in (f"{tree.ws}_evil/secret.txt", "link_abs", "link_out", "fifo", "big.bin", "missing.txt"):
        with pytest.raises(PathRefused) as caught:
            ws.read(tree.fill(path))
        assert_no_leak(caught.value, tree)


# ---------------------------------------------------------------- the races
def _swap_to_link(path: Path, target: str) -> None:
    if path.is_dir() and not path.is_symlink():
        path.rename(path.with_name(path.name + ".moved"))
    else:
        path.unlink()
    os.symlink(target, path)


def _after(fn, then):
    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        then()
        return result
    return wrapper


@pytest.mark.parametrize("victim, target, path", [
    ("notes.txt", "../outside/secret.txt", "notes.txt"),                  # the file itself
    ("src", "../outside", "src/config.ts"),                               # a folder on the way
    ("src/app", "../../outside", "src/app/main.py"),                      # a deeper folder
])
def test_a_link_swapped_in_after_rung_2_is_not_followed(fresh, monkeypatch, victim, target, path):
    tree, ws = fresh
    if victim == "src/app":
        (tree.outside / "main.py").write_bytes(SECRETS[0])
    monkeypatch.setattr(ladder, "check_realpath",
                        _after(ladder.check_realpath, lambda: _swap_to_link(tree.ws / victim, target)))
    with recording_opens() as opens, pytest.raises(PathRefused) as caught:
        ws.read(path)
    assert (caught.value.rung, caught.value.kind) == (3, "symlink")
    assert file_opens(opens) == [] and stray_opens(opens, tree.ws) == []
    assert caught.value.failure_class is FailureClass.AUTHORIZATION


def test_a_link_swapped_in_after_the_lstat_fails_the_nofollow_open(fresh, monkeypatch):
    tree, ws = fresh

    def swap():
        _swap_to_link(tree.ws / "notes.txt", "../outside/secret.txt")

    monkeypatch.setattr(nofollow, "stat_entry", _after(nofollow.stat_entry, swap))
    with recording_opens() as opens, pytest.raises(PathRefused) as caught:
        ws.read("notes.txt")
    assert (caught.value.rung, caught.value.kind) == (3, "symlink")
    # the only non-directory open was attempted with O_NOFOLLOW on a link, which the kernel refuses (ELOOP)
    assert [(p, bool(f & os.O_NOFOLLOW)) for p, f in file_opens(opens)] == [("notes.txt", True)]


def test_a_fifo_swapped_in_after_the_lstat_does_not_block(fresh, monkeypatch):
    tree, ws = fresh

    def to_fifo():   # made first, then renamed over the file: a new inode, so the swap is visible
        os.mkfifo(tree.ws / "fifo.new")
        os.rename(tree.ws / "fifo.new", tree.ws / "notes.txt")

    monkeypatch.setattr(nofollow, "stat_entry", _after(nofollow.stat_entry, to_fifo))
    with pytest.raises(PathRefused) as caught:
        within(5, ws.read, "notes.txt")
    assert caught.value.kind == "changed" and "FIFO" in caught.value.why


def test_a_file_replaced_after_the_lstat_is_refused(fresh, monkeypatch):
    tree, ws = fresh

    def replace():
        (tree.ws / "notes.new").write_bytes(b"another file")
        os.rename(tree.ws / "notes.new", tree.ws / "notes.txt")

    monkeypatch.setattr(nofollow, "stat_entry", _after(nofollow.stat_entry, replace))
    with pytest.raises(PathRefused) as caught:
        ws.read("notes.txt")
    assert caught.value.kind == "changed" and caught.value.error.retryable


def test_a_file_that_grows_past_the_cap_is_refused(fresh, monkeypatch):
    tree, ws = fresh
    monkeypatch.setattr(nofollow, "stat_entry",
                        _after(nofollow.stat_entry, lambda: (tree.ws / "notes.txt").write_bytes(b"y" * (CAP + 10))))
    with pytest.raises(PathRefused) as caught:
        ws.read("notes.txt")
    assert caught.value.kind == "too_large"


def test_a_file_that_grows_during_the_read_is_cut_at_the_cap(fresh, monkeypatch):
    tree, ws = fresh
    real_read, lengths = nofollow._read_at_most, []

    def grow_then_read(fd, limit):
        with open(tree.ws / "notes.txt", "ab") as handle:
            handle.write(b"z" * (CAP * 3))
        data = real_read(fd, limit)
        lengths.append(len(data))
        return data

    monkeypatch.setattr(nofollow, "_read_at_most", grow_then_read)
    with pytest.raises(PathRefused) as caught:
        ws.read("notes.txt")
    assert caught.value.kind == "too_large" and "while being read" in caught.value.why
    assert lengths == [CAP + 1]            # the cap, plus the one byte that proves the file is bigger


def test_a_file_that_vanishes_after_the_lstat_is_refused(fresh, monkeypatch):
    tree, ws = fresh
    monkeypatch.setattr(nofollow, "stat_entry", _after(nofollow.stat_entry, (tree.ws / "notes.txt").unlink))
    with pytest.raises(PathRefused) as caught:
        ws.read("notes.txt")
    assert caught.value.kind == "changed"


def test_an_io_error_during_the_read_is_a_refusal_without_a_leaked_descriptor(fresh, monkeypatch):
    tree, ws = fresh

    def broken_disk(fd, limit):
        raise OSError(5, "Input/output error", str(tree.ws / "notes.txt"))

    monkeypatch.setattr(nofollow, "_read_at_most", broken_disk)
    before = sorted(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").exists() else []
    with pytest.raises(PathRefused) as caught:
        ws.read("notes.txt")
    assert (caught.value.kind, caught.value.why) == ("unreadable", "it cannot be read (EIO)")
    assert_no_leak(caught.value, tree)
    if before:
        assert sorted(os.listdir("/proc/self/fd")) == before


# -------------------------------------------------------------- any string
ATOMS = ["..", ".", "", "/", "src", "notes.txt", "link_out", "linkdir_out", "link_parent", "fifo", "outside",
         "secret.txt", "ws", "ws_evil", "%2e%2e", "~", "\x00", "\\", "．．", "loop_a", "big.bin"]
PATHS = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(ATOMS), max_size=8).map("/".join),
                  st.lists(st.sampled_from(ATOMS), max_size=8).map(lambda xs: "/" + "/".join(xs)))


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=PATHS)
def test_any_string_is_read_inside_or_refused_with_a_structured_error(tree, ws, path):
    with recording_opens() as opens:
        try:
            got = within(5, ws.read, path)
        except PathRefused as refusal:
            assert refusal.error.code == "path_refused" and refusal.kind in HINTS
            assert_no_leak(refusal, tree)
            assert file_opens(opens) == []
            got = None
    assert stray_opens(opens, tree.ws) == []
    if got is not None:   # exactly one file was opened: the last open, after the folder walk
        assert file_opens(opens) == [opens[-1]] and all(is_directory_open(f) for _, f in opens[:-1])
        real = (tree.ws / got.path).resolve()
        assert real.is_relative_to(tree.ws) and real.read_bytes() == got.data
        assert not any(secret in got.data for secret in SECRETS)


# ------------------------------------------------------- one ladder for every file tool
def test_every_file_tool_climbs_the_same_ladder(tree):
    from toolkit.kernel import ToolError
    from toolkit.files import find_module, resolve_in_workspace
    from toolkit._workspace import locate

    real, relative = locate(tree.ws, "src/config.ts")
    assert (real, relative) == (tree.ws.resolve() / "src/config.ts", PurePosixPath("src/config.ts"))
    with pytest.raises(PathRefused) as caught:
        locate(tree.ws, "link_out")
    assert (caught.value.rung, caught.value.kind) == (2, "outside")
    # edit_file refuses absolute paths as text, then climbs the ladder ("src/../x" is fine, as for read_file)
    assert resolve_in_workspace(tree.ws, "src/config.ts") == real
    assert resolve_in_workspace(tree.ws, "src/../src/config.ts") == real
    for path, message in (("/etc/passwd", "absolute paths are refused"), ("../notes.txt", "climbs above"),
                          ("link_out", "file_path resolves outside the workspace"),
                          ("src\\config.ts", "file_path is refused: it contains a backslash"),
                          ("notes\u202e.txt", "file_path is refused: it contains a control")):
        error = resolve_in_workspace(tree.ws, path)
        assert isinstance(error, ToolError) and error.code == "path_refused" and message in error.message, path
    # the exports reader finds only modules whose real file is inside
    (tree.ws / "mod_out.py").symlink_to(tree.outside / "secret.txt")
    try:
        assert find_module(tree.ws, "mod_out") is None
    finally:
        (tree.ws / "mod_out.py").unlink()
