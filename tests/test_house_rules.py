"""The rules of the house for ``toolkit/``, held by tests (see the package docstring).

1. One idea per module, at most about 300 lines (never more than 350).
2. A module's first docstring line names the chapter it serves ("Chapter 05: the ledger rule").
3. Fakes and scenarios live only in ``worlds/``; concept modules never import them.
4. Imports run one way: core, then effects / wire / files, then worlds, then present.
5. ``present/`` draws and shows; it opens no sockets, databases, threads or processes.
6. Class and function names are unique across the package.
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolkit"
COURSE = ROOT / "course"      # scenery and panels: imported by notebooks, never by toolkit
MAX_LINES = 350
#: How far down the one-way street each part of the package sits.
RANK = {"kernel": 0, "_": 0, "effects": 1, "wire": 1, "files": 1, "live": 2, "mcp": 2, "worlds": 3,
        "present": 4}
#: What presentation code may not use: it draws what a concept module computed.
NOT_IN_PRESENT = ("http", "socket", "sqlite3", "threading", "multiprocessing", "subprocess", "concurrent")
CHAPTER_LINE = re.compile(r"^Chapters? \d\d(?:(?:-| and |, )\d\d)*: \S")


def modules() -> list[Path]:
    """Every module of the package, the Agent-427 scenario's files (data, never imported) aside."""
    return sorted(p for root in (PACKAGE, COURSE) for p in root.rglob("*.py")
                  if "scenarios" not in p.relative_to(root).parts)


def part_of(path: Path) -> str:
    root = COURSE if path.is_relative_to(COURSE) else PACKAGE
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else ""


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def toolkit_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every ``toolkit`` import in a file, wherever it sits (functions included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{relative(path)}:{node.lineno}: use absolute imports"
            names = [node.module or ""]
            if node.module in ("toolkit", "course"):
                names = [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, n) for n in names if n.split(".")[0] in ("toolkit", "course")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] in ("toolkit", "course")]
    return found


def all_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("path", modules(), ids=relative)
def test_module_is_short_enough_to_read_in_one_sitting(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{relative(path)} has {lines} lines; split it (at most {MAX_LINES})"


@pytest.mark.parametrize("path", modules(), ids=relative)
def test_first_docstring_line_names_the_chapter(path: Path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc, f"{relative(path)} has no docstring"
    first = doc.splitlines()[0]
    if path.name == "__init__.py":
        assert first.strip(), f"{relative(path)}: say what this part of the package holds"
    else:
        assert CHAPTER_LINE.match(first), f"{relative(path)}: first line {first!r} names no chapter"


def test_toolkit_never_imports_the_course():
    wrong = [f"{relative(p)}:{line} imports {name}" for p in modules() if p.is_relative_to(PACKAGE)
             for line, name in toolkit_imports(p) if name.split(".")[0] == "course"]
    assert wrong == []


def rank_of(name: str) -> tuple[str, int] | None:
    """(part, rank) of an imported ``toolkit``/``course`` module; private modules sit beside the kernel."""
    parts = name.split(".")
    if len(parts) < 2:
        return None
    part = "_" if parts[1].startswith("_") else parts[1]
    return (part, RANK[part]) if part in RANK else None


def test_imports_run_one_way():
    wrong = []
    for path in modules():
        here = "_" if path.parent == PACKAGE and path.name.startswith("_") and path.name != "__init__.py" else part_of(path)
        if path == PACKAGE / "__init__.py" or path.parent == COURSE:   # the front doors
            continue
        for line, name in toolkit_imports(path):
            where = f"{relative(path)}:{line} imports {name}"
            if name == "toolkit._exports":           # how every part lists its public names
                continue
            found = rank_of(name)
            if found is None:
                wrong.append(where + " (import the part or the module that defines it)")
                continue
            there, rank = found
            if there != here and rank >= RANK[here] and not rank == RANK[here] == 0:   # kernel and hardening: one level
                wrong.append(where)
    assert wrong == []


def test_the_kernel_holds_no_caps_sqlite_or_vendor_code():
    """The kernel states the rules; caps, databases and vendors are reached through one function elsewhere."""
    wrong = [f"{relative(p)}:{line} imports {name}" for p in modules() if part_of(p) == "kernel"
             for line, name in all_imports(p)
             if name.split(".")[0] in ("sqlite3", "openai", "anthropic", "mcp", "httpx", "httpx2")]
    assert wrong == []


def test_concept_modules_never_import_scenery():
    wrong = [f"{p.relative_to(ROOT)}:{line} imports {name}" for p in modules() if part_of(p) in ("kernel", "effects", "wire", "files")
             for line, name in toolkit_imports(p) if name.startswith(("course.worlds", "course.present"))]
    assert wrong == []


def test_present_holds_no_machinery():
    wrong = [f"{p.relative_to(ROOT)}:{line} imports {name}" for p in modules() if part_of(p) == "present"
             for line, name in all_imports(p) if name.split(".")[0] in NOT_IN_PRESENT]
    assert wrong == []


def test_class_and_function_names_are_unique_across_the_package():
    where: dict[str, list[str]] = defaultdict(list)
    for path in modules():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                where[node.name].append(f"{relative(path)}:{node.lineno}")
    assert {name: places for name, places in where.items() if len(places) > 1} == {}


def prose_files() -> list[Path]:
    return (sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("solutions/*.ipynb"))
            + sorted(ROOT.glob("exercises/*.ipynb"))
            + [ROOT / "README.md", ROOT / "INSTRUCTORS.md", ROOT / "CONTRIBUTING.md"]
            + sorted(ROOT.glob("benchmarks/*.md")))


def sources_of(path: Path) -> str:
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    import json

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells)


def resolves(dotted: str) -> bool:
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_every_module_the_course_names_exists():
    """The chapters and the library tell one story: a path or module named in prose is really there."""
    missing = []
    for path in prose_files():
        text = sources_of(path)
        for name in sorted(set(re.findall(r"\b(?:toolkit|course)/[\w/]+\.py\b", text))):
            if not (ROOT / name).is_file():
                missing.append(f"{relative(path)}: {name}")
        for name in sorted(set(re.findall(r"\b(?:toolkit|course)(?:\.[A-Za-z_]\w*)+", text))):
            if not resolves(name):
                missing.append(f"{relative(path)}: {name}")
    assert missing == []


def test_the_contributing_map_lists_every_module():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    row = r"^\| `(?:toolkit|course)/(\w+)/`[^|]*\|[^|]*\|(.*)\|$"
    rows = {m.group(1): m.group(2) for m in re.finditer(row, text, re.M)}
    assert set(rows) == set(RANK) - {"_"}
    missing = [f"{part}/{p.stem}" for part in rows if part != "present"
               for p in ((COURSE if part == "worlds" else PACKAGE) / part).glob("*.py") if p.name != "__init__.py" and f"`{p.stem}`" not in rows[part]]
    assert missing == []


def test_the_readme_example_runs(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Using the toolkit", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "README.md", "exec"), {})
    shown = capsys.readouterr().out
    assert "schema_ok fail" in shown and "'status': 'rejected'" in shown


def test_the_library_is_the_kernel_its_private_hardening_and_the_parts_built_on_it():
    """Beside the kernel and the parts, ``toolkit/`` holds only private modules: hardening, by underscore."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py" and not p.name.startswith("_"))
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert loose == [] and set(folders) == {part for part in RANK if part not in ("_", "worlds", "present")}
    inside_kernel = sorted(p.name for p in (PACKAGE / "kernel").glob("_*.py") if p.name != "__init__.py")
    assert inside_kernel == [], "the kernel holds rules only; hardening goes beside it, in toolkit/_*.py"
