"""Chapter 03: what a module really exports, read without running a line of it.

A model can write a perfectly plausible import::

    from publication_manifest import load_manifest

Grammar cannot tell whether ``publication_manifest`` exports ``load_manifest``.
Only the module can, so the runtime reads it. It *parses* the file with
``ast`` and never imports it: importing runs the module's top-level code, and
checking a proposal must not have side effects.

The course's meaning of "exported":

* if the module assigns ``__all__`` a literal list or tuple of strings, the
  exported names are exactly those (rule ``"__all__"``);
* otherwise they are the public top-level definitions: functions, classes and
  assigned names that do not start with ``_`` (rule ``"public top-level names"``).
  Names a module merely imports are not its exports under this rule.

``check_imports(code, root)`` parses proposed code, finds each
``import X`` / ``from X import Y``, and checks every claim against the module
file under the workspace ``root``. An unknown symbol becomes a ``ToolError``
whose line reads ``import publication_manifest.load_manifest: symbol not exported``.
"""
from __future__ import annotations

import ast
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.core import Condition, Contract, Retry
from toolkit.core import ToolError
from toolkit.core import Tool

RULE_ALL = "__all__"
RULE_PUBLIC = "public top-level names"

#: Largest module file the reader will parse (a module, not a data dump).
MAX_MODULE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Exports:
    """A module's exported names and the rule that decided them. ``path`` is relative to the workspace."""

    module: str
    path: str
    rule: str
    names: tuple[str, ...]

    def line(self) -> str:
        """E.g. ``publication_manifest exports ManifestError, load_publication_manifest (rule: __all__)``."""
        return f"{self.module} exports {', '.join(self.names) or 'nothing'} (rule: {self.rule})"

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, "path": self.path, "rule": self.rule, "names": list(self.names)}


@dataclass(frozen=True)
class ImportClaim:
    """One name a piece of code says it can import: ``from module import name`` (or ``import module``)."""

    module: str
    name: str | None
    line: int

    @property
    def pointer(self) -> str:
        """``import publication_manifest.load_manifest`` (or ``import module`` for a plain import)."""
        return f"import {self.module}.{self.name}" if self.name else f"import {self.module}"


# ------------------------------------------------------------ reading a module
def exported_names(source: str) -> tuple[tuple[str, ...], str]:
    """The names ``source`` exports and the rule used; parses, never executes.

    Raises ``SyntaxError`` if the source does not parse (``read_exports`` turns
    that into a ``ToolError``).
    """
    tree = ast.parse(source)
    literal = _literal_all(tree)
    if literal is not None:
        return tuple(literal), RULE_ALL
    if any(_assigns(node, "__all__") for node in tree.body):
        rule = f"{RULE_PUBLIC} (__all__ is not a literal list)"
    else:
        rule = RULE_PUBLIC
    names: list[str] = []
    for node in tree.body:
        for name in _defined_names(node):
            if not name.startswith("_") and name not in names:
                names.append(name)
    return tuple(names), rule


def _literal_all(tree: ast.Module) -> list[str] | None:
    """The value of ``__all__ = [...]`` when every top-level binding of it is one literal of strings."""
    bindings = [node for node in tree.body if _assigns(node, "__all__")]
    if len(bindings) != 1 or not isinstance(bindings[0], (ast.Assign, ast.AnnAssign)):
        return None
    value = bindings[0].value
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return None
    return [e.value for e in value.elts]  # type: ignore[attr-defined]


def _assigns(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return isinstance(node.target, ast.Name) and node.target.id == name
    return False


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def find_module(root: Path | str, dotted: str) -> Path | None:
    """The file for module ``dotted`` under ``root`` (``a/b.py`` or ``a/b/__init__.py``), or None.

    Only plain dotted identifiers are looked up, and the file found must lie
    inside ``root`` once symlinks are resolved.
    """
    parts = dotted.split(".") if isinstance(dotted, str) else []
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    try:
        base = Path(root).resolve()
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
            real = candidate.resolve()
            if real.is_relative_to(base) and real.is_file():
                return real
    except (OSError, RuntimeError, ValueError):  # symlink loops, unreadable directories
        return None
    return None


def read_exports(root: Path | str, dotted: str) -> Exports | ToolError:
    """Read module ``dotted`` under ``root`` and return its ``Exports``; a ``ToolError`` if that is impossible."""
    path = find_module(root, dotted)
    if path is None:
        return _module_not_found(root, str(dotted))
    relative = path.relative_to(Path(root).resolve()).as_posix()
    if path.stat().st_size > MAX_MODULE_BYTES:
        return ToolError("precondition_failed", f"import {dotted}", f"module file is over {MAX_MODULE_BYTES} bytes",
                         expected="a source file", received=relative, retryable=False)
    try:
        names, rule = exported_names(path.read_bytes().decode("utf-8"))
    except (SyntaxError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        return ToolError("precondition_failed", f"import {dotted}", "module does not parse",
                         expected="a Python source file", received=f"{relative}: {type(exc).__name__}",
                         retryable=False)
    return Exports(dotted, relative, rule, names)


def workspace_modules(root: Path | str) -> list[str]:
    """Dotted names of the ``.py`` modules under ``root`` (for "did you mean" hints)."""
    base = Path(root).resolve()
    names = []
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts):
            names.append(".".join(parts))
    return names


def _module_not_found(root: Path | str, dotted: str) -> ToolError:
    known = workspace_modules(root)
    near = difflib.get_close_matches(dotted, known, n=1, cutoff=0.5)
    return ToolError("precondition_failed", f"import {dotted}", "module not found in the workspace",
                     expected=known, received=dotted,
                     hint=f"did you mean {near[0]}?" if near else "import a module that exists in the workspace")


# ---------------------------------------------------- checking proposed code
def import_claims(code: str, importer: str = "") -> tuple[list[ImportClaim], list[ToolError]]:
    """Every import in ``code``, as claims to check; code that does not parse gives one structured error.

    ``importer`` is the dotted name of the module the code will live in; it is
    needed only to resolve relative imports (``from . import x``).
    """
    if not isinstance(code, str):
        return [], [ToolError("precondition_failed", "code", "code must be text",
                              expected="Python source", received=type(code).__name__, retryable=False)]
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [], [ToolError("precondition_failed", f"code line {exc.lineno or 1}", f"does not parse: {exc.msg}",
                              expected="Python source that parses", received=(exc.text or "").strip()[:80],
                              hint="send complete statements")]
    except ValueError:  # e.g. NUL bytes
        return [], [ToolError("precondition_failed", "code", "does not parse: source contains NUL bytes",
                              expected="Python source that parses", received="<text>")]
    claims: list[ImportClaim] = []
    errors: list[ToolError] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            claims += [ImportClaim(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module or "", node.level, importer)
            if module is None:
                errors.append(ToolError("precondition_failed", f"code line {node.lineno}",
                                        "relative import cannot be resolved here",
                                        expected="an absolute import", received="." * node.level + (node.module or ""),
                                        hint="write the import with the module's full dotted name"))
                continue
            for alias in node.names:
                if alias.name == "*":
                    errors.append(ToolError("precondition_failed", f"import {module}.*",
                                            "star import names nothing that can be checked",
                                            expected="explicit names", received="*",
                                            hint=f"import the names you use from {module} explicitly"))
                else:
                    claims.append(ImportClaim(module, alias.name, node.lineno))
    claims.sort(key=lambda c: c.line)
    return claims, errors


def _absolute(module: str, level: int, importer: str) -> str | None:
    if level == 0:
        return module
    package = importer.split(".")[:-1] if importer else []
    if level - 1 > len(package) or not importer:
        return None
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else [])) or None


def check_claim(claim: ImportClaim, root: Path | str) -> ToolError | None:
    """None if the claim holds; else the error that names it.

    Standard-library modules are trusted and not read; any other module must
    be a file in the workspace, or the runtime cannot vouch for it.
    """
    top = claim.module.split(".")[0]
    if top in sys.stdlib_module_names and find_module(root, top) is None:
        return None
    exports = read_exports(root, claim.module)
    if isinstance(exports, ToolError):
        return exports
    if claim.name is None or claim.name in exports.names:
        return None
    if find_module(root, f"{claim.module}.{claim.name}") is not None:  # a submodule of a package
        return None
    near = difflib.get_close_matches(claim.name, exports.names, n=1, cutoff=0.0)
    hint = f"did you mean {near[0]}? {exports.line()}" if near else exports.line()
    return ToolError("symbol_not_exported", claim.pointer, "symbol not exported",
                     expected=list(exports.names), received=claim.name, hint=hint)


def check_imports(code: str, root: Path | str, importer: str = "") -> list[ToolError]:
    """All import errors in ``code``, in source order; empty when every imported name is exported."""
    claims, errors = import_claims(code, importer)
    errors += [e for e in (check_claim(c, root) for c in claims) if e is not None]
    return errors


def introduced_claims(before: str, after: str, importer: str = "") -> tuple[list[ImportClaim], list[ToolError]]:
    """The import claims present in ``after`` but not in ``before`` (an edit's new imports)."""
    old, _ = import_claims(before, importer)
    new, errors = import_claims(after, importer)
    seen = {(c.module, c.name) for c in old}
    return [c for c in new if (c.module, c.name) not in seen], errors


# ------------------------------------------------------------- the read tool
INSPECT_EXPORTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["module"],
    "properties": {
        "module": {"type": "string", "description": "dotted module name, e.g. publication_manifest",
                   "pattern": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"},
    },
    "additionalProperties": False,
}


def make_inspect_exports(workspace: Path | str) -> Tool:
    """A read-only tool that returns a workspace module's exported names (as ``Exports.to_dict()``)."""
    root = Path(workspace)

    def module_exists(args: dict, world: Any) -> bool | ToolError:
        found = read_exports(root, args["module"])
        return True if isinstance(found, Exports) else found

    def run(args: dict, world: Any) -> dict[str, Any]:
        found = read_exports(root, args["module"])
        if isinstance(found, ToolError):  # the file changed since the check
            from toolkit.core import FailureClass, Status, ToolFailure
            raise ToolFailure(Status.FAILED, found.code, found.message, FailureClass.PRECONDITION)
        return found.to_dict()

    contract = Contract(
        name="inspect_exports",
        description="Read a workspace module's exported names without importing it.",
        schema=INSPECT_EXPORTS_SCHEMA,
        permissions=("fs.read",),
        preconditions=(Condition("module_readable", "the module is a Python file in the workspace that parses",
                                 module_exists),),
        cost=1.0, risk=0.0, reversible=True, retry=Retry.SAFE, risk_category="none (read-only)",
        evidence=("the module's path", "the rule that decided the names"),
        reads=("module:{module}",),
    )
    return Tool(contract, run)


__all__ = ["Exports", "ImportClaim", "RULE_ALL", "RULE_PUBLIC", "check_claim", "check_imports", "exported_names",
           "find_module", "import_claims", "introduced_claims", "make_inspect_exports", "read_exports",
           "workspace_modules"]
