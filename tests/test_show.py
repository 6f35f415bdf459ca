"""Chapters 01 and 07: every echo, summary and one-line rendering is cut in one place, ``toolkit/_show.py``.

Text the host shows is cut by ``shorten`` (or ``echo_text``/``echo_value``/``call_line``/``summarize``, which
use it), to a limit named in ``toolkit/_caps.py``, and a cut ends (or, keeping the end, starts) with the one
marker ``CUT_MARK``. These tests read the source of ``toolkit`` and ``course`` and refuse a module that cuts text
its own way: slicing text that it measured with ``len``, slicing ``str(...)``/``repr(...)``/``.strip()`` to a
length, gluing ``"..."`` to a slice, or handing ``shorten`` a marker of its own.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from toolkit._caps import CUT_MARK, MAX_ECHO_CHARS
from toolkit._show import echo_text, echo_value, shorten

ROOT = Path(__file__).resolve().parent.parent
SHOW = ROOT / "toolkit" / "_show.py"
#: What a cut marker looks like in source text: three dots, or the one-character ellipsis.
MARKS = ("...", "\u2026")
#: The functions of ``_show`` that cut text; none takes a marker of its own.
CUTTERS = {"shorten", "echo_text", "echo_value", "call_line", "summarize"}


def sources() -> list[Path]:
    return sorted(p for root in (ROOT / "toolkit", ROOT / "course") for p in root.rglob("*.py")
                  if p != SHOW and "scenarios" not in p.parts)


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def is_cut(node: ast.AST) -> bool:
    """``x[:n]``, ``x[: n - 3]``, ``x[-n:]``: a slice with one bound, the kind that cuts text to a length."""
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.step is None
            and (node.slice.lower is None) != (node.slice.upper is None))


def has_cut(node: ast.AST) -> bool:
    """A slice, or a call of one (``repr(path[: limit - 8])``)."""
    return is_cut(node) or (isinstance(node, ast.Call) and any(is_cut(a) for a in node.args))


def is_text_call(node: ast.AST) -> bool:
    """``str(x)``, ``repr(x)``, ``x.strip()``: an expression that is certainly text."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return ((isinstance(func, ast.Name) and func.id in ("str", "repr", "ascii"))
            or (isinstance(func, ast.Attribute) and func.attr in ("strip", "rstrip", "lstrip")))


def marked(node: ast.AST, at_start: bool) -> bool:
    """A string constant that begins (``at_start``) or ends with a cut marker."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    return node.value.startswith(MARKS) if at_start else node.value.endswith(MARKS)


def own_cuts(path: Path) -> list[str]:
    """Every place in ``path`` that cuts text to a length its own way, as ``file:line why``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        measured = {ast.dump(node.args[0]) for node in ast.walk(function)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
                    and len(node.args) == 1}
        compared = {ast.dump(c.args[0]) for node in ast.walk(function) if isinstance(node, ast.Compare)
                    for c in [node.left, *node.comparators]
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "len" and c.args}
        marks = any(marked(node, True) or marked(node, False) for node in ast.walk(function))
        for node in ast.walk(function):
            if is_cut(node) and marks and ast.dump(node.value) in compared & measured:
                found.append(f"{relative(path)}:{node.lineno} cuts what it measured with len()")
            elif is_cut(node) and is_text_call(node.value):
                found.append(f"{relative(path)}:{node.lineno} cuts text to a length")
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and (
                (has_cut(node.left) and marked(node.right, at_start=True))
                or (marked(node.left, at_start=False) and has_cut(node.right))):
            found.append(f"{relative(path)}:{node.lineno} glues a cut marker to a slice")
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for before, after in zip(parts, parts[1:]):
                if ((isinstance(before, ast.FormattedValue) and has_cut(before.value) and marked(after, True))
                        or (marked(before, False) and isinstance(after, ast.FormattedValue)
                            and has_cut(after.value))):
                    found.append(f"{relative(path)}:{node.lineno} writes a cut marker beside a slice")
    return found


def makes_a_mark(node: ast.AST) -> bool:
    """An argument that spells a marker (``'..."'``, ``"..." + quote``) or names one other than ``CUT_MARK``."""
    return any((isinstance(n, ast.Constant) and isinstance(n.value, str) and any(m in n.value for m in MARKS))
               or (isinstance(n, ast.Name) and "mark" in n.id.lower() and n.id != "CUT_MARK") for n in ast.walk(node))


def own_marks(path: Path) -> list[str]:
    """Every call of a ``_show`` cutter in ``path`` that passes a marker (a third argument or ``tail=``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in CUTTERS and any(makes_a_mark(a) for a in [*node.args[1:], *(k.value for k in node.keywords)]):
                found.append(f"{relative(path)}:{node.lineno} {name}() given a marker of its own")
    return found


@pytest.mark.parametrize("path", sources(), ids=relative)
def test_text_is_cut_only_through_show(path: Path):
    assert own_cuts(path) == []


@pytest.mark.parametrize("path", sources(), ids=relative)
def test_every_cut_ends_in_the_one_marker(path: Path):
    assert own_marks(path) == []


def bare_limits(path: Path) -> list[str]:
    """Every call of a ``_show`` cutter in ``path`` whose limit is a bare number rather than a named cap."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in CUTTERS:
            limits = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "limit")]
            if any(isinstance(a, ast.Constant) and type(a.value) is int for a in limits):
                found.append(f"{relative(path)}:{node.lineno} cuts to a number no cap names")
    return found


@pytest.mark.parametrize("path", [p for p in sources() if p.is_relative_to(ROOT / "toolkit")], ids=relative)
def test_the_library_cuts_to_named_caps(path: Path):
    """In the library every limit is a cap of ``toolkit/_caps.py`` (a panel's width in ``course`` is its own)."""
    assert bare_limits(path) == []


def test_the_finder_sees_each_way_of_cutting(tmp_path: Path):
    """The finders above catch the patterns they are meant to (so an empty answer means something)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def a(text, limit):\n    return text if len(text) <= limit else text[: limit - 3] + '...'\n"
        "def b(key):\n    return repr(key)[:40]\n"
        "def c(digest):\n    return f'sha {digest[:12]}...'\n"
        "def e(path):\n    return repr(path[:52]) + '...'\n"
        "def d(text):\n    return shorten(text, 40, '...\"')\n"
        "def f(shown, limit):\n    return shorten(shown, limit, '...' + shown[0])\n", encoding="utf-8")
    cuts, marks = own_cuts(sample), own_marks(sample)
    assert len(bare_limits(sample)) == 1     # shorten(text, 40, ...)
    assert sorted(c.split(" ", 1)[1] for c in cuts) == ["cuts text to a length", "cuts what it measured with len()",
                                                  "glues a cut marker to a slice", "glues a cut marker to a slice",
                                                               "writes a cut marker beside a slice"]
    assert [m.split(" ", 1)[1] for m in marks] == ["shorten() given a marker of its own"] * 2


def test_shorten_cuts_to_the_limit_and_marks_the_cut():
    text = "x" * 100
    assert shorten(text) == "x" * (MAX_ECHO_CHARS - len(CUT_MARK)) + CUT_MARK and len(shorten(text)) == MAX_ECHO_CHARS
    assert shorten("abcdefghij", 8, keep_end=True) == CUT_MARK + "fghij"
    assert shorten("short", 8) == "short" == shorten("short", 8, keep_end=True)
    assert echo_text("y" * 100).endswith(CUT_MARK) and echo_value("y" * 100) == echo_text("y" * 100)
