"""Chapter 03: what a module really exports, read without running a line of it.

Grammar cannot tell whether ``publication_manifest`` exports ``load_manifest``; only the module
can, so the runtime *parses* it with ``ast`` and never imports it (importing runs code). Exported
means: the strings of a literal ``__all__`` (rule ``"__all__"``), else the public top-level
definitions (rule ``"public top-level names"``; imported names do not count).
``read_exports(root, module)`` finds the file through rungs 1 and 2 and reads it through rung 3;
``make_inspect_exports`` offers that to a model."""
from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from toolkit.kernel import Condition, Contract, Retry, Tool, ToolError, open_confined
from toolkit._workspace import locate
from toolkit._caps import MAX_FILE_BYTES
from toolkit._paths import PathRefused

RULE_ALL = "__all__"
RULE_PUBLIC = "public top-level names"


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


@lru_cache(maxsize=64)   # the same module is read for every claim on it: parsed once per text
def exported_names(source: str) -> tuple[tuple[str, ...], str]:
    """The names ``source`` exports and the rule used; parses, never executes."""
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
    """The file for module ``dotted`` under ``root`` that passes rungs 1 and 2, or None."""
    found = _locate_module(root, dotted)
    return found[0] / found[1] if found else None


def _locate_module(root: Path | str, dotted: str) -> tuple[Path, str] | None:
    """``(the workspace's real path, the real path of module dotted's file relative to it)``, or None."""
    parts = dotted.split(".") if isinstance(dotted, str) else []
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    for candidate in ("/".join(parts) + ".py", "/".join(parts + ["__init__.py"])):
        try:
            real, relative = locate(root, candidate)
            if real.is_file():
                return Path(root).resolve(), relative.as_posix()
        except (PathRefused, OSError):   # outside the workspace, or unreadable directories
            continue
    return None


def read_exports(root: Path | str, dotted: str) -> Exports | ToolError:
    """Read module ``dotted`` under ``root`` and return its ``Exports``; a ``ToolError`` if that is impossible."""
    found = _locate_module(root, dotted)
    if found is None:
        return _module_not_found(root, str(dotted))
    base, relative = found
    try:
        data = open_confined(base, relative, MAX_FILE_BYTES).data
    except PathRefused as refusal:      # too large, or changed since it was found
        return ToolError("precondition_failed", f"import {dotted}", f"module file cannot be read: {refusal.why}",
                         expected=f"a source file of at most {MAX_FILE_BYTES} bytes", received=relative,
                         retryable=False)
    try:
        names, rule = exported_names(data.decode("utf-8"))
    except (SyntaxError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        return ToolError("precondition_failed", f"import {dotted}", "module does not parse",
                         expected="a Python source file", received=f"{relative}: {type(exc).__name__}",
                         retryable=False)
    return Exports(dotted, relative, rule, names)


def workspace_modules(root: Path | str) -> list[str]:
    """Dotted names of the ``.py`` modules under ``root`` that ``find_module`` finds (for "did you mean" hints)."""
    base = Path(root)
    names = []
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts) and find_module(base, ".".join(parts)) is not None:
            names.append(".".join(parts))
    return names


def _module_not_found(root: Path | str, dotted: str) -> ToolError:
    known = workspace_modules(root)
    near = difflib.get_close_matches(dotted, known, n=1, cutoff=0.5)
    return ToolError("precondition_failed", f"import {dotted}", "module not found in the workspace",
                     expected=known, received=dotted,
                     hint=f"did you mean {near[0]}?" if near else "import a module that exists in the workspace")


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
            from toolkit.kernel import FailureClass, Status, ToolFailure
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
