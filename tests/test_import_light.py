"""``import toolkit`` stays light, and presentation code stays in course/present/.

Students import the toolkit in every chapter and read its modules; the concept modules
must not drag in plotting, widgets, formula rendering or notebook machinery. Only
``course/present/`` may import sympy, matplotlib, ipywidgets (and IPython, nbformat).
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolkit"
PRESENTATION = ("sympy", "matplotlib", "ipywidgets", "IPython", "nbformat", "course.present")
# jsonschema's optional format checkers: `import jsonschema` loads them all when installed
# (rfc3987_syntax alone builds a grammar for about a second), so `import toolkit` must not.
FORMAT_EXTRAS = ("rfc3987_syntax", "rfc3339_validator", "rfc3986_validator", "webcolors", "fqdn",
                 "isoduration", "uri_template", "jsonpointer", "lark")
HEAVY = ("numpy", "openai", "anthropic", "httpx2", "mcp", "psycopg")   # psycopg: a server URL only


def loaded_after(statement: str) -> set[str]:
    """Top-level and dotted module names present in sys.modules after ``statement`` in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def clashes(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))


def concept_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "present" not in p.relative_to(PACKAGE).parts)


def test_import_toolkit_loads_no_presentation_or_format_extras():
    modules = loaded_after("import toolkit")
    assert "toolkit" in modules
    assert clashes(modules, PRESENTATION + FORMAT_EXTRAS + HEAVY) == []


def test_import_toolkit_leaves_references_to_the_first_schema_that_has_one():
    """The toolkit's contracts have no ``$ref``: checking them at import needs no ``referencing``."""
    assert clashes(loaded_after("import toolkit"), ("referencing", "attr", "attrs")) == []
    resolved = loaded_after("from toolkit._schema import declaration_problems as problems\n"
                            "assert problems({'$ref': '#/$defs/a', '$defs': {'a': {}}}) == []\n"
                            "assert 'resolves to nothing' in problems({'$ref': '#/$defs/b'})[0]")
    assert "referencing" in resolved


def test_an_import_runs_with_the_collector_paused_and_leaves_it_as_it_was(tmp_path, monkeypatch):
    import gc

    from toolkit._formats import imported

    seen = "import gc\nSEEN = gc.isenabled()\n"
    (tmp_path / "collector_seen.py").write_text(seen, encoding="utf-8")
    (tmp_path / "collector_broken.py").write_text("raise ImportError('broken')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "collector_seen", raising=False)
    assert gc.isenabled()
    assert imported("collector_seen").SEEN is False, "the module was imported with the collector on"
    assert gc.isenabled(), "the collector is on again after the import"
    with pytest.raises(ImportError):
        imported("collector_broken")
    assert gc.isenabled(), "the collector is on again after an import that failed"
    gc.disable()
    try:
        imported("json")
        assert not gc.isenabled(), "a collector turned off before the import stays off"
    finally:
        gc.enable()
    monkeypatch.delitem(sys.modules, "collector_seen")


def test_every_concept_module_imports_without_presentation():
    names = ["toolkit." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts) for p in concept_modules()]
    names = [n.removesuffix(".__init__") for n in names]
    modules = loaded_after("\n".join(f"import {n}" for n in names))
    assert set(names) <= modules
    assert clashes(modules, PRESENTATION) == []


def imported_names(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in a file, wherever it sits (functions included)."""
    package = ".".join(("toolkit",) + path.relative_to(PACKAGE).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)):
            found.append((node.lineno, str(node.args[0].value)))
    return sorted(found)


def presentation_imports(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line} imports {name}" for line, name in imported_names(path)
            if any(name == f or name.startswith(f + ".") for f in PRESENTATION)]


def test_no_concept_module_imports_presentation_code():
    assert concept_modules(), "toolkit/ has no modules?"
    offenders = [o for path in concept_modules() for o in presentation_imports(path)]
    assert offenders == [], "move this into course/present/: " + "; ".join(offenders)


def test_the_static_check_sees_every_import_form(tmp_path, monkeypatch):
    fake = tmp_path / "toolkit"
    (fake / "present").mkdir(parents=True)
    module = fake / "chapter.py"
    module.write_text(
        "import json\n"
        "from course import present\n"
        "from course.present.plots import draw\n"
        "def show():\n"
        "    import matplotlib.pyplot as plt\n"
        "    from sympy import Symbol\n"
        "    importlib.import_module('ipywidgets')\n",
        encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert presentation_imports(module) == [
        "toolkit/chapter.py:2 imports course.present",
        "toolkit/chapter.py:3 imports course.present.plots",
        "toolkit/chapter.py:3 imports course.present.plots.draw",
        "toolkit/chapter.py:5 imports matplotlib.pyplot",
        "toolkit/chapter.py:6 imports sympy",
        "toolkit/chapter.py:6 imports sympy.Symbol",
        "toolkit/chapter.py:7 imports ipywidgets",
    ]


FIRST_CHECK = """
import toolkit as tk
from course.worlds import CREATE_INVOICE, Books
books = Books(orders={"order-431": {"approved": True}})
host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.issue)], tk.Caller("a", frozenset({"billing.write"})), books)
assert host.check(tk.request("create_invoice", {"order_id": "order-431", "amount": 100, "currency": "EUR",
                                                "idempotency_key": "k"})).legal == 1
"""


def test_the_first_verdict_defers_the_format_grammar_and_leaves_no_stand_in_behind():
    import importlib.util

    if importlib.util.find_spec("rfc3987_syntax") is None:
        pytest.skip("rfc3987_syntax is not installed here: nothing to defer")
    modules = loaded_after(FIRST_CHECK)
    assert "jsonschema" in modules and "rfc3987_syntax" not in modules and "lark" not in modules
    assert not {"isoduration", "arrow", "rfc3986_validator"} & set(modules), "a format extra was imported"


def test_format_checking_is_unchanged_for_code_that_asks_for_it():
    import importlib.util

    if importlib.util.find_spec("rfc3987_syntax") is None:
        pytest.skip("rfc3987_syntax is not installed here")
    code = FIRST_CHECK + """
import sys, jsonschema
checker = jsonschema.FormatChecker()
assert "iri" in checker.checkers
assert checker.conforms("https://example.org/caf\\u00e9", "iri") and not checker.conforms("::not an iri<>", "iri")
import rfc3987_syntax
assert type(rfc3987_syntax).__name__ == "module" and rfc3987_syntax.__spec__ is not None
assert rfc3987_syntax.is_valid_syntax("iri", "https://example.org/") is True
assert checker.conforms("P3DT4H", "duration") and not checker.conforms("P3X", "duration")
assert checker.conforms("https://example.org/a", "uri") and not checker.conforms("no scheme", "uri")
import isoduration, rfc3986_validator
assert isoduration.__spec__ is not None and rfc3986_validator.__spec__ is not None
assert issubclass(isoduration.DurationParsingException, ValueError)   # what the stand-in catches
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_large_import_is_kept_out_of_later_collections():
    """``imported`` freezes what the import built (``gc.freeze``) and leaves the collector on."""
    code = """
import gc
from toolkit._formats import imported
before = gc.get_freeze_count()
imported("email.mime.text")
assert gc.isenabled() and gc.get_freeze_count() > before, (before, gc.get_freeze_count())
frozen = gc.get_freeze_count()
imported("email.mime.text")     # already imported: nothing built, nothing more frozen
assert gc.get_freeze_count() == frozen, (frozen, gc.get_freeze_count())
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
