"""Chapter 03: exercise 03's given parts: its workspace, the parse of import lines, and the closest-name pick.

The student writes the two decisions of the chapter (is this imported name
promised by its module, read and never imported? and is there an unexported
name to look up at all?); what is plumbing is here:

* ``exports_workspace()``: a temporary copy of Agent-427's workspace plus
  ``textstats.py``, a module that leaves a file ``IMPORTED`` behind the moment
  anyone imports it. The ``ExportsWorkspace`` it returns removes the folder on
  ``close()``, at the end of a ``with`` block, or when the interpreter exits;
* ``from_imports(code)``: every ``(module, name)`` of a ``from M import N`` in
  ``code``, at any depth and in source order, standard-library modules left out
  (they are trusted);
* ``module_of(error)``: the module ``M`` of a ``symbol_not_exported`` error,
  whose pointer reads ``import M.N``;
* ``closest_name(wanted, names)``: the name among ``names`` most like ``wanted``.
"""
from __future__ import annotations

import ast
import difflib
import sys
from typing import Iterable

from toolkit.kernel import ToolError
from course.worlds import copy_scenario
from course.worlds import ScratchFolder

#: A module with a side effect on import, so a check that imports it is caught.
TEXTSTATS = '''"""Word statistics for the book's chapters."""
from pathlib import Path

Path(__file__).with_name("IMPORTED").write_text("textstats was imported\\n")   # a side effect, on purpose

__all__ = ["word_count", "line_count"]


def word_count(text):
    return len(text.split())


def line_count(text):
    return len(text.splitlines())
'''


class ExportsWorkspace(ScratchFolder):
    """A temporary copy of the workspace (``ws``) with ``textstats.py`` in it; removed on ``close()``."""

    def __init__(self, prefix: str = "exercise03-"):
        super().__init__(prefix)
        self.ws = copy_scenario(self.base / "workspace")
        (self.ws / "textstats.py").write_text(TEXTSTATS, encoding="utf-8")

    def __repr__(self) -> str:   # no machine paths in a notebook
        return "ExportsWorkspace(<workspace> with textstats.py)"



def exports_workspace(prefix: str = "exercise03-") -> ExportsWorkspace:
    """The exercise's workspace, in a temporary folder of its own."""
    return ExportsWorkspace(prefix)


def from_imports(code: str) -> list[tuple[str, str]]:
    """``(module, name)`` for each ``from M import N`` in ``code`` (any depth, source order), stdlib left out."""
    nodes = sorted((n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.ImportFrom) and n.level == 0),
                   key=lambda n: (n.lineno, n.col_offset))
    return [(node.module, alias.name) for node in nodes if node.module.split(".")[0] not in sys.stdlib_module_names
            for alias in node.names]


def module_of(error: ToolError) -> str:
    """The module of a ``symbol_not_exported`` error (pointer ``import M.N``); else ``""``."""
    pointer = getattr(error, "pointer", None)
    return pointer.removeprefix("import ").rsplit(".", 1)[0] if isinstance(pointer, str) else ""


def closest_name(wanted: str, names: Iterable[str]) -> str:
    """The name among ``names`` most like ``wanted`` (the first if none is alike; or ``""``)."""
    names = [str(n) for n in names or ()]
    return (difflib.get_close_matches(str(wanted), names, n=1, cutoff=0.0) or names or [""])[0]
