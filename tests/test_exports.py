"""Reading a module's exports without running it, and checking proposed imports against them."""
import subprocess
import sys
import textwrap

from hypothesis import given, settings, strategies as st

from toolkit.files import claims as cl
from toolkit.files import exports as ex
from course.worlds import SCENARIO, copy_scenario
from toolkit.kernel import ToolError


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_scenario_module_exports_by_its_literal_all():
    found = ex.read_exports(SCENARIO, "publication_manifest")
    assert isinstance(found, ex.Exports)
    assert found.rule == ex.RULE_ALL
    assert found.names == ("ManifestError", "load_publication_manifest")
    assert found.path == "publication_manifest.py"          # relative, never a machine path
    # defined in the module, but not exported: a private function, and a public constant left out of __all__
    source = (SCENARIO / "publication_manifest.py").read_text()
    assert "def _load_manifest_text" in source and "MANIFEST_NAME =" in source
    assert "load_manifest" not in found.names and "MANIFEST_NAME" not in found.names


def test_without_all_the_public_top_level_names_are_exported(tmp_path):
    write(tmp_path, "m.py", """
        import os
        from json import loads
        X, _Y = 1, 2
        LIMIT: int = 3
        def f(): pass
        async def g(): pass
        class C: pass
        def _private(): pass
        if True:
            NESTED = 1
    """)
    found = ex.read_exports(tmp_path, "m")
    assert found.rule == ex.RULE_PUBLIC
    assert found.names == ("X", "LIMIT", "f", "g", "C")     # imports, private and nested names are not exports


def test_a_computed_all_falls_back_and_says_so(tmp_path):
    write(tmp_path, "m.py", """
        __all__ = ["a"] + ["b"]
        def a(): pass
        def c(): pass
    """)
    found = ex.read_exports(tmp_path, "m")
    assert found.rule == "public top-level names (__all__ is not a literal list)"
    assert found.names == ("a", "c")


def test_all_extended_later_is_not_trusted_as_a_literal(tmp_path):
    write(tmp_path, "m.py", "__all__ = ['a']\n__all__ += ['b']\ndef a(): pass\ndef b(): pass\n")
    assert ex.read_exports(tmp_path, "m").rule.startswith(ex.RULE_PUBLIC)


def test_exports_are_read_without_executing_the_module(tmp_path):
    marker = tmp_path / "IMPORTED"
    write(tmp_path, "noisy.py", f"""
        from pathlib import Path
        Path({str(marker)!r}).write_text("the module ran")
        __all__ = ["quiet"]
        def quiet(): pass
    """)
    assert ex.read_exports(tmp_path, "noisy").names == ("quiet",)
    assert cl.check_imports("from noisy import quiet", tmp_path) == []
    assert cl.check_imports("from noisy import loud", tmp_path)[0].code == "symbol_not_exported"
    assert not marker.exists(), "reading exports must never run the module"
    # control: importing it for real does run it, so the check above could have failed
    subprocess.run([sys.executable, "-c", "import noisy"], cwd=tmp_path, check=True)
    assert marker.read_text() == "the module ran"


def test_find_module_files_and_packages(tmp_path):
    write(tmp_path, "pkg/__init__.py", "__all__ = ['sub']\n")
    write(tmp_path, "pkg/sub.py", "def f(): pass\n")
    assert ex.find_module(tmp_path, "pkg") == (tmp_path / "pkg/__init__.py").resolve()
    assert ex.find_module(tmp_path, "pkg.sub") == (tmp_path / "pkg/sub.py").resolve()
    for bad in ["", "..", "pkg..sub", "pkg/sub", "../pkg", "pkg.sub.py", "missing"]:
        assert ex.find_module(tmp_path, bad) is None, bad
    assert ex.workspace_modules(tmp_path) == ["pkg", "pkg.sub"]


def test_a_symlink_out_of_the_workspace_is_not_a_module(tmp_path):
    outside = write(tmp_path, "outside/secret.py", "def key(): pass\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "secret.py").symlink_to(outside)
    assert ex.find_module(root, "secret") is None
    assert cl.check_imports("from secret import key", root)[0].message == "module not found in the workspace"
    assert ex.workspace_modules(root) == []          # a hint never names a module the reader refuses


def test_a_module_is_read_through_rung_3_within_the_file_cap(tmp_path, monkeypatch):
    from toolkit._caps import MAX_FILE_BYTES
    root = tmp_path / "ws"
    write(root, "big.py", "x = 1\n")
    (root / "big.py").write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    error = ex.read_exports(root, "big")
    assert isinstance(error, ToolError) and "over the cap" in error.message
    write(root, "pkg/mod.py", "def f(): pass\n")
    real_locate = ex._locate_module

    def locate_then_swap(root_, dotted):            # found, then the folder is swapped for a link out of the workspace
        found = real_locate(root_, dotted)
        (root / "pkg").rename(root / "pkg_moved")
        (root / "pkg").symlink_to(write(tmp_path, "outside/mod.py", "def secret(): pass\n").parent)
        return found

    monkeypatch.setattr(ex, "_locate_module", locate_then_swap)
    error = ex.read_exports(root, "pkg.mod")
    assert isinstance(error, ToolError) and "symbolic link" in error.message


def test_the_calamity_import_is_refused_with_the_exported_names():
    errors = cl.check_imports("from publication_manifest import load_manifest", SCENARIO)
    assert len(errors) == 1
    error = errors[0]
    assert (error.code, error.pointer, error.message) == (
        "symbol_not_exported", "import publication_manifest.load_manifest", "symbol not exported")
    assert error.line() == "import publication_manifest.load_manifest: symbol not exported"
    assert error.expected == ["ManifestError", "load_publication_manifest"]
    assert error.received == "load_manifest"
    assert error.hint.startswith("did you mean load_publication_manifest?")
    assert error.layer == "business"


def test_the_corrected_import_passes():
    assert cl.check_imports("from publication_manifest import load_publication_manifest", SCENARIO) == []


def test_each_bad_name_in_one_statement_is_reported_in_source_order():
    code = "import json\nfrom publication_manifest import ManifestError, load_manifest, read_manifest\n"
    pointers = [e.pointer for e in cl.check_imports(code, SCENARIO)]
    assert pointers == ["import publication_manifest.load_manifest", "import publication_manifest.read_manifest"]


def test_other_import_forms():
    root = SCENARIO
    # a plain import of a module that exists; a stdlib import is trusted without reading it
    assert cl.check_imports("import publication_manifest\nimport json\nfrom pathlib import Path", root) == []
    # "import a.b" claims a module a.b, which does not exist
    [error] = cl.check_imports("import publication_manifest.load_manifest", root)
    assert error.message == "module not found in the workspace"
    assert error.hint == "did you mean publication_manifest?"
    # an unknown module, a star import, an import nested in a function
    assert cl.check_imports("from publication_manifests import x", root)[0].hint == \
        "did you mean publication_manifest?"
    assert cl.check_imports("from publication_manifest import *", root)[0].message == \
        "star import names nothing that can be checked"
    assert cl.check_imports("def f():\n    from publication_manifest import nope\n", root)[0].pointer == \
        "import publication_manifest.nope"


def test_relative_imports_resolve_against_the_importer(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/a.py", "__all__ = ['A']\nA = 1\n")
    assert cl.check_imports("from .a import A", tmp_path, importer="pkg.b") == []
    assert cl.check_imports("from .a import B", tmp_path, importer="pkg.b")[0].pointer == "import pkg.a.B"
    assert cl.check_imports("from .a import A", tmp_path)[0].message == "relative import cannot be resolved here"


def test_code_that_does_not_parse_gets_a_structured_error():
    [error] = cl.check_imports("from publication_manifest import (load_manifest", SCENARIO)
    assert error.code == "precondition_failed"
    assert error.pointer == "code line 1" and error.message.startswith("does not parse")
    assert cl.check_imports("x = 1\0", SCENARIO)[0].message.startswith("does not parse")
    assert cl.check_imports(None, SCENARIO)[0].message == "code must be text"


def test_a_module_that_does_not_parse_is_an_error_not_a_crash(tmp_path):
    write(tmp_path, "broken.py", "def (:\n")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    assert ex.read_exports(tmp_path, "broken").message == "module does not parse"
    assert ex.read_exports(tmp_path, "latin").message == "module does not parse"


def test_introduced_claims_are_only_the_new_ones():
    before = "import json\nfrom a import b\n"
    after = "import json\nfrom a import b, c\nimport d\n"
    claims, errors = cl.introduced_claims(before, after)
    assert errors == [] and [c.pointer for c in claims] == ["import a.c", "import d"]


def test_a_text_is_parsed_once_and_every_caller_gets_lists_of_its_own(tmp_path, monkeypatch):
    import ast
    import uuid

    parsed, real_parse = [], ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **kw: parsed.append(1) or real_parse(*a, **kw))
    code = f"# {uuid.uuid4()}\nfrom a import b\nimport c\n"       # a text no other test has parsed
    claims, errors = cl.import_claims(code)
    claims.append("changed by its caller")
    errors.append("changed by its caller")
    again, errors_again = cl.import_claims(code)
    assert [c.pointer for c in again] == ["import a.b", "import c"] and errors_again == []
    assert len(parsed) == 1, "the same text was parsed again"
    write(tmp_path, "mod.py", "def one(): pass\n")
    assert ex.read_exports(tmp_path, "mod").names == ("one",)
    write(tmp_path, "mod.py", "def two(): pass\n")     # the file changed: its new text is read
    assert ex.read_exports(tmp_path, "mod").names == ("two",)


def test_inspect_exports_tool_reads_a_copy(tmp_path):
    import toolkit as tk
    ws = copy_scenario(tmp_path / "ws")
    host = tk.Host.of([ex.make_inspect_exports(ws)], tk.Caller("a", frozenset({"fs.read"})), ws)
    result = host.execute(tk.request("inspect_exports", {"module": "publication_manifest"}))
    assert result.ok and result.output["names"] == ["ManifestError", "load_publication_manifest"]
    refused = host.execute(tk.request("inspect_exports", {"module": "../etc/passwd"}))
    assert refused.status is tk.Status.REJECTED and refused.errors[0].code == "pattern"
    missing = host.execute(tk.request("inspect_exports", {"module": "nope"}))
    assert missing.status is tk.Status.REJECTED and missing.errors[0].message == "module not found in the workspace"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_errors_never_an_exception(code):
    errors = cl.check_imports(code, SCENARIO)
    assert all(isinstance(e, ToolError) for e in errors)
