"""A fixture tree, a corpus of hostile and legitimate paths, and an open() recorder.

``build_tree`` makes, under a temporary folder::

    ws/          the workspace (files, links in and out, a FIFO, a socket, ...)
    ws_evil/     a sibling whose name starts with the workspace's name
    ws2/         another such sibling
    outside/     secrets that must never be read

``HOSTILE`` pairs a path with the refusal kind the ladder must give it
(``toolkit._paths.HINTS`` lists the kinds); ``LEGIT`` pairs a path with the
file (relative to ``ws``) it must read. ``{ws}``, ``{out}`` and ``{base}`` in a
path stand for the absolute folders.

``recording_opens`` collects every ``open`` audit event (``builtins.open`` and
``os.open`` both raise one, before the system call) while it is active. Audit
hooks cannot be removed, so one hook is installed when this module is imported
and it records only inside the context manager. ``within`` runs a call under a
time limit, so a FIFO that blocked would fail a test instead of hanging it.
"""
from __future__ import annotations

import os
import socket
import stat
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

CAP = 4096                      # the read cap the tests use
SECRETS = (b"SECRET-OUTSIDE-7f3a", b"SECRET-SIBLING-91c2", b"SECRET-WS2-55d0")

# ------------------------------------------------------------- recording
_ACTIVE: list[list[tuple[str, int]]] = []


def _hook(event: str, args: tuple) -> None:
    if _ACTIVE and event == "open":
        path, _mode, flags = args
        if isinstance(path, int):            # opening a descriptor is not opening a path
            return
        _ACTIVE[-1].append((os.fsdecode(os.fspath(path)), flags if isinstance(flags, int) else -1))


sys.addaudithook(_hook)


@contextmanager
def recording_opens() -> Iterator[list[tuple[str, int]]]:
    """Yield a list that fills with ``(path, flags)`` for every open attempted inside the block."""
    events: list[tuple[str, int]] = []
    _ACTIVE.append(events)
    try:
        yield events
    finally:
        _ACTIVE.remove(events)


def is_directory_open(flags: int) -> bool:
    return flags != -1 and bool(flags & os.O_DIRECTORY)


def file_opens(events: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Opens that were not a directory walk (``O_DIRECTORY``): the ones that could read data."""
    return [e for e in events if not is_directory_open(e[1])]


def stray_opens(events: list[tuple[str, int]], root: Path) -> list[tuple[str, int]]:
    """Opens that are neither the workspace root itself nor one name relative to an open folder."""
    return [(p, f) for p, f in events
            if not (p == str(root) or ("/" not in p and p not in ("", ".", "..")))]


def within(seconds: float, fn, *args):
    """Run ``fn`` in a daemon thread; fail the test if it does not return in time (a FIFO would block)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed back to the test below
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{fn.__name__}{args!r} blocked for more than {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


# ------------------------------------------------------------- the tree
@dataclass
class Tree:
    base: Path
    ws: Path
    outside: Path
    unavailable: set[str] = field(default_factory=set)

    def fill(self, template: str) -> str:
        return (template.replace("{ws}", str(self.ws)).replace("{out}", str(self.outside))
                .replace("{base}", str(self.base)))


TEXT_FILES = [
    "README.md", "notes.txt", "src/config.ts", "src/app/main.py", "docs/guide.v2.final.md", "docs/.hidden",
    "données/résumé.txt", "日本/読む.txt", "%2e%2e%2fsecret.txt", "．．/inside.txt", "~/home.txt", "$HOME/x.txt",
    "a b/c d.txt", "-dash.txt", "...", "..hidden", "emoji_😀.txt",
]

LINKS = {  # name in ws -> target (as written into the link)
    "link_in": "notes.txt",
    "linkdir_in": "src",
    "chain_in1": "chain_in2",
    "chain_in2": "link_in",
    "link_out": "../outside/secret.txt",
    "link_abs": "{out}/secret.txt",
    "linkdir_out": "../outside",
    "chain1": "chain2",
    "chain2": "chain3",
    "chain3": "../outside/secret.txt",
    "link_zero": "/dev/zero",
    "link_stdin": "/dev/stdin",
    "link_root": "/",
    "link_parent": "..",
    "src/link_up": "../../outside",
    "dangling_out": "../outside/nothing.txt",
    "link_sibling": "../ws_evil",
    "link_sibling_abs": "{ws}_evil/secret.txt",
    "link_proc": "/proc/self/environ",
    "link_fifo": "fifo",
    "link_big": "big.bin",
    "dangling_in": "nothing.txt",
    "loop_a": "loop_b",
    "loop_b": "loop_a",
    "loopdir": "loopdir",
}


def build_tree(base: Path) -> Tree:
    """Create the fixture tree under ``base`` (an empty folder) and return where things are."""
    base = base.resolve()
    ws, outside = base / "ws", base / "outside"
    tree = Tree(base, ws, outside)
    for folder, secret in (("outside", SECRETS[0]), ("ws_evil", SECRETS[1]), ("ws2", SECRETS[2])):
        (base / folder).mkdir()
        (base / folder / "secret.txt").write_bytes(secret + b"\n")
    ws.mkdir()
    for rel in TEXT_FILES:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(f"content of {rel}\n".encode())
    (ws / "empty.txt").write_bytes(b"")
    (ws / "exact_cap.bin").write_bytes(b"x" * CAP)
    (ws / "big.bin").write_bytes(b"x" * (CAP + 1))
    (ws / "binary.bin").write_bytes(bytes(range(256)))
    for name, target in LINKS.items():
        os.symlink(tree.fill(target), ws / name)
    os.mkfifo(ws / "fifo")
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(ws / "sock"))
    except OSError:
        tree.unavailable.add("sock")
    try:
        os.mknod(ws / "devnode", stat.S_IFCHR | 0o600, os.makedev(1, 3))   # a copy of /dev/null
    except (OSError, AttributeError):
        tree.unavailable.add("devnode")
    return tree


# ------------------------------------------------------------- the corpus
_TRAVERSAL = [
    "..", "../", "./..", "../outside/secret.txt", "../../etc/passwd", "../" * 12 + "etc/passwd",
    "src/../../outside/secret.txt", "src/app/../../../outside/secret.txt", "./../outside/secret.txt",
    "src/./../../outside/secret.txt", "../ws/notes.txt", "../ws_evil/secret.txt", "../ws2/secret.txt",
    "nope/../../outside/secret.txt", "src/..//../outside/secret.txt", "..//outside/secret.txt",
    "{ws}/../outside/secret.txt", "{ws}/src/../../outside/secret.txt", "{ws}/..", "../" * 40,
]
_ABSOLUTE = [
    "/etc/passwd", "/etc/shadow", "/dev/zero", "/dev/stdin", "/dev/random", "/proc/self/environ",
    "/proc/self/mem", "/", "//etc/passwd", "///etc/passwd", "/root/.ssh/id_rsa", "/tmp",
    "{ws}_evil/secret.txt", "{ws}2/secret.txt", "{ws}_evil", "{out}/secret.txt", "{base}",
    "{base}/ws_evil/../outside/secret.txt",
]
_NUL = ["notes.txt\x00", "notes.txt\x00.png", "\x00", "../\x00", "src/\x00/config.ts", "\x00/etc/passwd"]
_CONTROL = ["notes.txt\n", "\r\nnotes.txt", "notes\x1b[31m.txt", "notes\x7f.txt", "notes.txt\u200b", "\u202etxt.seton",
            "notes\u2028.txt", "\ufeffnotes.txt", "notes\t.txt", "src/\x85config.ts"]
_BACKSLASH = ["..\\outside\\secret.txt", "..\\..\\etc\\passwd", "src\\config.ts", "\\etc\\passwd",
              "C:\\Windows\\win.ini", "..\\/..\\/etc/passwd", "\\\\server\\share\\secret.txt", "%HOMEPATH%\\secret.txt"]
_TOO_LONG = ["a" * 2000, "a/" * 600 + "x", "x" * 256, "../" * 2000, "é" * 128, "src/" + "y" * 300 + "/config.ts"]
_NOT_TEXT = ["\ud800", "notes\udcff.txt", "src/\udfff"]
_LITERAL = [  # decoded or expanded, these would escape; taken literally, they name nothing
    "%2e%2e%2fetc%2fpasswd", "%2e%2e/outside/secret.txt", "..%2foutside%2fsecret.txt", "%252e%252e%252foutside",
    "..%c0%af..%c0%afetc%c0%afpasswd", "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "src%2f..%2f..%2foutside%2fsecret.txt",
    "..%5c..%5cetc%5cpasswd", "%00", "~/.ssh/id_rsa", "~root/.bashrc", "$HOME/.bashrc", "${HOME}/.bashrc",
    "$(cat /etc/passwd)", "`id`", "file:///etc/passwd", "C:/Windows/win.ini", "．．/outside/secret.txt",
    "\u2024\u2024/outside/secret.txt", "..\u2215outside\u2215secret.txt", "\uff0e\uff0e\uff0foutside\uff0fsecret.txt",
    "\u2025/outside/secret.txt", "..\u0338/outside/secret.txt", "missing.txt", "src/missing/x.ts", "notes.txt/x",
    "dangling_in",
]
_OUTSIDE = [
    "link_out", "link_abs", "linkdir_out", "linkdir_out/secret.txt", "chain1", "chain2", "link_zero", "link_stdin",
    "link_root/etc/passwd", "link_root", "link_parent", "link_parent/outside/secret.txt",
    "link_parent/ws_evil/secret.txt", "src/link_up/secret.txt", "linkdir_out/../outside/secret.txt",
    "dangling_out", "link_sibling/secret.txt", "link_sibling_abs", "link_proc", "{ws}/link_out",
    "./link_out", "linkdir_in/link_up/secret.txt",
]
_NOT_REGULAR = ["fifo", "link_fifo", "src", "src/", ".", "./", "src/app/..", "{ws}", "{ws}/src", "~", "sock",
                "devnode", "linkdir_in", "README.md/.."]

HOSTILE: list[tuple[str, str]] = (
    [("", "empty")]
    + [(p, "traversal") for p in _TRAVERSAL]
    + [(p, "absolute") for p in _ABSOLUTE]
    + [(p, "nul") for p in _NUL]
    + [(p, "control") for p in _CONTROL]
    + [(p, "backslash") for p in _BACKSLASH]
    + [(p, "too_long") for p in _TOO_LONG]
    + [(p, "not_text") for p in _NOT_TEXT]
    + [(p, "not_found") for p in _LITERAL]
    + [(p, "outside") for p in _OUTSIDE]
    + [(p, "not_regular") for p in _NOT_REGULAR]
    + [("big.bin", "too_large"), ("link_big", "too_large"), ("loop_a", "symlink"), ("loopdir/x", "symlink")]
)

LEGIT: list[tuple[str, str]] = [
    ("README.md", "README.md"), ("notes.txt", "notes.txt"), ("./notes.txt", "notes.txt"),
    ("src/config.ts", "src/config.ts"), ("src/app/main.py", "src/app/main.py"),
    ("./src/./app/main.py", "src/app/main.py"), ("src//config.ts", "src/config.ts"),
    ("src/app/../config.ts", "src/config.ts"), ("docs/guide.v2.final.md", "docs/guide.v2.final.md"),
    ("docs/.hidden", "docs/.hidden"), ("données/résumé.txt", "données/résumé.txt"),
    ("日本/読む.txt", "日本/読む.txt"), ("%2e%2e%2fsecret.txt", "%2e%2e%2fsecret.txt"),
    ("．．/inside.txt", "．．/inside.txt"), ("~/home.txt", "~/home.txt"), ("$HOME/x.txt", "$HOME/x.txt"),
    ("a b/c d.txt", "a b/c d.txt"), ("-dash.txt", "-dash.txt"), ("...", "..."), ("..hidden", "..hidden"),
    ("emoji_😀.txt", "emoji_😀.txt"), ("link_in", "notes.txt"), ("linkdir_in/config.ts", "src/config.ts"),
    ("chain_in1", "notes.txt"), ("empty.txt", "empty.txt"), ("exact_cap.bin", "exact_cap.bin"),
    ("binary.bin", "binary.bin"), ("{ws}/notes.txt", "notes.txt"), ("link_parent/ws/notes.txt", "notes.txt"),
    ("docs/../src/app/../../notes.txt", "notes.txt"),
]
