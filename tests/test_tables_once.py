"""Every shared table is defined once: a second definition anywhere in ``toolkit`` or ``course`` fails here.

Each test names the table, the one module allowed to write it, and what a copy of it looks like in code
(a literal that lists the table's entries, or a call that builds what the table builds). Everything else
imports the table from its home.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "toolkit", ROOT / "course")


@functools.lru_cache(maxsize=1)
def sources() -> list[tuple[str, ast.Module]]:
    """(path relative to the repository, parsed module) for every module of both packages."""
    found = []
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            if "scenarios" in path.parts:          # Agent-427's folder: data the chapters read, never imported
                continue
            found.append((str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))))
    return found


def strings_in(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def literals(tree: ast.Module):
    """Every set, list, tuple and dict display, and every ``frozenset(...)``/``set(...)`` call, in a module."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)):
            yield node
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("frozenset", "set", "tuple"):
            yield node


def places(where: str, looks_like) -> list[str]:
    """Modules other than the table's home that hold something ``looks_like`` accepts, with the line."""
    return [f"{path}:{node.lineno}" for path, tree in sources() if path != where
            for node in ast.walk(tree) if looks_like(node)]


def entries(node: ast.AST) -> set[str]:
    """The strings a literal lists itself (its elements, or a dict's keys and values), not those nested deeper."""
    if isinstance(node, ast.Call):
        return entries(node.args[0]) if node.args else set()
    items = (node.keys + node.values) if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def holds_all(*wanted: str):
    return lambda node: node in _LITERAL_IDS and set(wanted) <= entries(node)


_LITERAL_IDS: set = set()


@pytest.fixture(autouse=True, scope="module")
def _literal_nodes():
    """The table detectors look at literals only (a docstring that names entries is not a table)."""
    _LITERAL_IDS.clear()
    for _path, tree in sources():
        _LITERAL_IDS.update(literals(tree))
    yield


def called(name: str, first: str | None = None):
    """A call to ``name`` (a function or a method), optionally whose first argument is the string ``first``."""
    def match(node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if callee != name:
            return False
        return first is None or (bool(node.args) and isinstance(node.args[0], ast.Constant)
                                 and node.args[0].value == first)
    return match


def assigned(prefix: str):
    """A module-level assignment to a name starting with ``prefix`` (a cap, say)."""
    def match(node: ast.AST) -> bool:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        return any(isinstance(t, ast.Name) and t.id.startswith(prefix) for t in targets)
    return match


def test_the_layer_map_is_written_once():
    assert places("toolkit/kernel/legality.py", holds_all("schema_ok", "auth_ok", "Pre")) == []


def test_the_stop_reasons_are_written_once():
    assert places("toolkit/kernel/stream.py", holds_all("tool_calls", "end_turn")) == []
    assert places("toolkit/kernel/stream.py", holds_all("length", "max_tokens")) == []


def derives_hints(node: ast.AST) -> bool:
    """A dict that maps MCP hint names, or a call that passes them by keyword (``ToolAnnotations(read_only_hint=...)``)."""
    if isinstance(node, ast.Dict):
        return bool({"readOnlyHint", "idempotentHint", "destructiveHint"} & strings_in(ast.Tuple(node.keys)))
    return isinstance(node, ast.Call) and any(k.arg in ("read_only_hint", "idempotent_hint", "destructive_hint")
                                              for k in node.keywords)


def test_the_mcp_annotations_are_derived_in_one_place():
    """The library derives hints from a contract in one table (the demo servers play foreign servers, which declare
    hints of their own for the host not to trust)."""
    wrote = {p.split(":")[0] for p in places("", derives_hints) if p.startswith("toolkit/") and "demo_servers" not in p}
    assert wrote == {"toolkit/wire/vendors.py"}, sorted(wrote)


def mentions(*codes: str):
    """A string constant equal to one of ``codes`` (an error code written where a refusal is built)."""
    return lambda node: isinstance(node, ast.Constant) and node.value in codes


#: Where every error code is listed with its layer: the one place besides a code's home that may name it.
CODE_TABLE = "toolkit/_codes.py"


def test_the_id_policy_is_written_once():
    """One module says which ids a round refuses and how: a duplicate, an unusable id."""
    assert [p for p in places("toolkit/_ids.py", mentions("duplicate_call_id")) if not p.startswith(CODE_TABLE)] == []


def test_pairing_is_written_once():
    """One module pairs results with calls: crossed, missing, repeated and orphan results."""
    codes = ("call_id_mismatch", "missing_result", "duplicate_result", "orphan_result")
    assert [p for p in places("toolkit/wire/pairing.py", mentions(*codes)) if not p.startswith(CODE_TABLE)] == []


def reads_attribute(name: str):
    return lambda node: isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load)


def test_the_key_a_call_carries_is_looked_up_once():
    """Which idempotency key a call carries (beside it, or in the field its contract names) is ``carried_key``'s."""
    looked_up = places("toolkit/_json.py", reads_attribute("idempotency_field"))
    assert [p for p in looked_up if not p.startswith("toolkit/_printed.py")] == []   # the card only prints the name


def test_confinement_is_written_once():
    """The ladder's containment test (whole components compared) and its no-follow open each live in one module."""
    realpath = places("toolkit/kernel/read_file.py",
                      lambda n: isinstance(n, ast.Attribute) and n.attr in ("is_relative_to", "commonpath"))
    nofollow = places("toolkit/_nofollow.py", lambda n: (isinstance(n, ast.Constant) and n.value == "O_NOFOLLOW")
                      or (isinstance(n, ast.Attribute) and n.attr == "O_NOFOLLOW"))
    assert realpath == [] and nofollow == []


def test_the_sqlite_setup_is_written_once():
    setup = ("PRAGMA journal_mode", "PRAGMA synchronous", "PRAGMA busy_timeout")
    def sets_up(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(setup)
    assert places("toolkit/effects/database.py", sets_up) == []


def test_the_dialect_table_is_written_once():
    """What SQLite and PostgreSQL are sent differently (how a transaction opens, row locks, the
    column listing, the connection settings) is written in ``database.DIALECTS`` only; everything
    else writes its SQL once, with ``?``."""
    dialect_sql = ("BEGIN ", "PRAGMA table_info", "SELECT name FROM pragma_table_info",
                   "SET lock_timeout", "SET synchronous_commit", "SELECT pg_advisory",
                   "SELECT column_name FROM information_schema")

    def speaks_a_dialect(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
            node.value.startswith(dialect_sql) or node.value.rstrip().endswith("FOR UPDATE")
            or node.value.startswith("postgresql://"))
    assert places("toolkit/effects/database.py", speaks_a_dialect) == []


def test_every_cap_of_the_library_lives_in_the_cap_table():
    caps = [p for p in places("toolkit/_caps.py", assigned("MAX_")) if p.startswith("toolkit/")]
    assert caps == []
