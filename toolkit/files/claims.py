"""Chapter 03: an import is a claim: check every name proposed code imports against the module's real exports.

``check_imports(code, root)`` parses the proposed code (never runs it) and checks each ``import
X`` / ``from X import Y`` against the module file under ``root`` (``toolkit.files.exports``): an
unknown symbol is a ``ToolError`` (``symbol not exported``) with the real exports as ``expected``
and the nearest as a hint. Standard-library modules are trusted without being read."""
from __future__ import annotations

import ast
import difflib
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from toolkit.kernel import ToolError
from toolkit._show import shorten
from toolkit.files import find_module, read_exports


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


def import_claims(code: str, importer: str = "") -> tuple[list[ImportClaim], list[ToolError]]:
    """Every import in ``code`` as claims (``importer``: for relative imports), or one error."""
    if not isinstance(code, str):
        return [], [ToolError("precondition_failed", "code", "code must be text",
                              expected="Python source", received=type(code).__name__, retryable=False)]
    claims, errors = _parsed_claims(code, importer)
    return list(claims), list(errors)      # copies: the cached lists stay as they were parsed


@lru_cache(maxsize=64)   # a host checks the same text on every call that edits a file: parsed once
def _parsed_claims(code: str, importer: str) -> tuple[list[ImportClaim], list[ToolError]]:
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [], [ToolError("precondition_failed", f"code line {exc.lineno or 1}", f"does not parse: {exc.msg}",
                              expected="Python source that parses", received=shorten((exc.text or "").strip()),
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
    """None if the claim holds, else the error naming it (the standard library is trusted)."""
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
