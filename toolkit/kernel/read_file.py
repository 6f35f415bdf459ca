"""Chapter 01: read_file: the chapter's read-only tool, with every validation layer written down.

The contract splits the work the way the chapter does:

* schema layer: ``{"path": string}``, required, nothing else allowed;
* permission / path layer (the contract's *guard*): rungs 1 and 2 of
  ``toolkit.kernel.confinement`` (the path stays inside the workspace, as text and
  after resolving links);
* business layer (*preconditions*): by default "the path names an existing
  regular file within the read cap", so ``read_file`` on a config that does
  not exist is refused with a hint to switch tools; more can be supplied,
  e.g. ``allowed_extensions(".ts", ".md")``.

The implementation then opens the file through rung 3 (no link followed, no
FIFO or device opened, at most the cap read). Rung 3 cannot be switched off:
it is the last line, and it re-checks everything, because a file can change
between the host's check and the read.

For teaching, ``layers`` cuts layers out of the contract, to show where a bad
call is caught instead; ``READ_FILE_LAYERS`` names the switches and the layer
of ``toolkit.kernel.LAYER_OF`` each one stands for. With all three cut, a hostile
path is still refused, but by the executor after the host called the call
legal; its failure (``ReadRefused``) still knows which rung refused.
"""
from __future__ import annotations

import hashlib
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

from toolkit.kernel.legality import LAYER_OF, Layer
from toolkit.kernel.contract import Condition, Contract, Retry
from toolkit.kernel.call import Status, ToolError, ToolFailure
from toolkit.kernel.host import Tool
from toolkit.kernel.confinement import describe_entry
from toolkit._paths import MAX_BYTES, PathRefused, shown
from toolkit._workspace import Workspace

#: The layers a read_file contract can carry, by switch name, each the validation layer (and so the
#: legality test) of ``toolkit.kernel.LAYER_OF`` it stands for. All are on unless a lesson cuts one.
READ_FILE_LAYERS: dict[str, Layer] = {"schema": LAYER_OF["schema_ok"], "path": LAYER_OF["auth_ok"],
                                      "business": LAYER_OF["Pre"]}


def read_file_switch(test: str) -> str:
    """The switch that cuts the layer behind legality test ``test``: ``"auth_ok"`` -> ``"path"``."""
    return next(name for name, layer in READ_FILE_LAYERS.items() if layer.test == test)

READ_FILE_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "A path relative to the workspace."},
        "mode": {"type": "string", "enum": ["text", "lines"],
                 "description": "text (default): the content as one string; lines: also split into lines."},
    },
    "required": ["path"],
    "additionalProperties": False,
}

#: read_file as declared to a model. ``toolkit.kernel.read_file.make_read_file`` binds it to a
#: workspace, adding the path guard, the business rules and the confined executor.
READ_FILE = Contract(
    name="read_file",
    description=("Read one text file inside the workspace and return its content, size and sha256. "
                 'Read-only: repeating the call reads the same bytes. path is relative to the workspace, '
                 'e.g. "src/config.ts".'),
    schema=READ_FILE_SCHEMA,
    cost=0.1,
    risk=0.0,
    reversible=True,
    retry=Retry.SAFE,
    risk_category="read-only, inside the workspace",
    evidence=("size", "sha256"),
    reads=("file:{path}",),
)

DESCRIPTION = READ_FILE.description


def _path_of(arguments: Any) -> Any:
    return arguments.get("path") if isinstance(arguments, dict) else None


def path_guard(workspace: Workspace) -> Condition:
    """The permission/path layer: rungs 1 and 2. Opens nothing."""
    def inside(arguments: dict, world: Any) -> bool | ToolError:
        try:
            workspace.check(_path_of(arguments))
        except PathRefused as refusal:
            return refusal.error
        return True
    return Condition("path_inside_workspace", "path stays inside the workspace, as text and after resolving links",
                     inside)


def existing_file(workspace: Workspace) -> Condition:
    """Business layer: the path names an existing regular file no larger than the read cap.

    A path the path layer refuses is left to that layer (this test passes it),
    so each refusal is blamed on the layer that owns it. ``lstat`` only: this
    is advice checked before running, and rung 3 checks again at the open.
    """
    def exists(arguments: dict, world: Any) -> bool | ToolError:
        path = _path_of(arguments)
        try:
            entry = workspace.entry(path)
        except PathRefused:
            return True
        if entry is not None and stat.S_ISREG(entry.st_mode) and entry.st_size <= workspace.max_bytes:
            return True
        if entry is None:
            why, hint = "there is no such file in the workspace", (
                "read_file reads existing files only: check the name against a directory listing, "
                "or switch tools (e.g. create the file, or ask the user where it is)")
        elif stat.S_ISDIR(entry.st_mode):
            why, hint = "it is a directory", "list the directory with a listing tool instead of read_file"
        elif stat.S_ISREG(entry.st_mode):
            why, hint = (f"it is {entry.st_size} bytes, over the read cap of {workspace.max_bytes}",
                         "ask the user for the part you need, or use a tool that reads a range")
        else:
            why, hint = f"it is {describe_entry(entry.st_mode)}", "read_file reads regular files only"
        return ToolError("precondition_failed", "$.path", f"{shown(path)}: {why}",
                         expected="an existing regular file in the workspace", received=why, hint=hint,
                         retryable=False)
    return Condition("file_exists", f"path names an existing regular file of at most {workspace.max_bytes} bytes",
                     exists)


def allowed_extensions(*suffixes: str) -> Condition:
    """Business layer: only files ending in one of ``suffixes`` (e.g. ``".ts"``, ``".md"``)."""
    allowed = tuple(sorted(suffixes))

    def has_suffix(arguments: dict, world: Any) -> bool | ToolError:
        path = _path_of(arguments)
        if isinstance(path, str) and path.endswith(allowed):
            return True
        return ToolError("precondition_failed", "$.path", f"{shown(path)}: this tool reads only {', '.join(allowed)}",
                         expected=list(allowed), received=shown(path),
                         hint=f"ask for a file ending in {' or '.join(allowed)}, or switch tools", retryable=False)
    return Condition("allowed_extension", f"path ends in {' or '.join(allowed)}", has_suffix)


def _evidence_matches(arguments: dict, output: Any, world: Any) -> bool:
    """Postcondition: size and sha256 describe the content returned (checked when the text is lossless)."""
    evidence = output.get("evidence", {}) if isinstance(output, dict) else {}
    if not isinstance(output, dict) or set(evidence) != {"size", "sha256"}:
        return False
    if not output.get("lossless"):
        return True
    data = output["content"].encode("utf-8")
    return evidence == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


EVIDENCE_MATCHES = Condition("evidence_matches", "size and sha256 are those of the bytes returned",
                             _evidence_matches)


def make_read_file(workspace: Path | str | Workspace, *, max_bytes: int = MAX_BYTES, must_exist: bool = True,
                   preconditions: Iterable[Condition] = (),
                   layers: Iterable[str] = tuple(READ_FILE_LAYERS)) -> Tool:
    """Build the read_file tool for one workspace.

    ``must_exist`` adds the ``file_exists`` precondition; ``preconditions``
    adds more business rules. ``layers`` (switch names of ``READ_FILE_LAYERS``) says which
    layers the contract carries; the executor's rung-3 open runs regardless.
    When a ``Workspace`` is passed, its own ``max_bytes`` is the cap.
    The output is ``{"path", "resolved", "content", "lossless", "evidence"}``
    with evidence ``{"size", "sha256"}`` of the bytes actually read.
    """
    layers = frozenset(layers)
    unknown = layers.difference(READ_FILE_LAYERS)
    if unknown:
        raise ValueError(f"unknown layers {sorted(unknown)}; choose from {sorted(READ_FILE_LAYERS)}")
    ws = workspace if isinstance(workspace, Workspace) else Workspace(Path(workspace), max_bytes)
    business = ((existing_file(ws),) if must_exist else ()) + tuple(preconditions)
    contract = replace(
        READ_FILE,
        schema=READ_FILE_SCHEMA if "schema" in layers else {"type": "object"},
        guards=(path_guard(ws),) if "path" in layers else (),
        preconditions=business if "business" in layers else (),
        postconditions=(EVIDENCE_MATCHES,),
    )

    def run(arguments: dict, world: Any) -> dict[str, Any]:
        path = _path_of(arguments)
        try:
            got = ws.read(path)
        except PathRefused as refusal:
            raise ReadRefused(refusal) from None
        output = {"path": path, "resolved": got.path, "content": got.text, "lossless": got.lossless,
                  "evidence": got.evidence()}
        if arguments.get("mode") == "lines":
            output["lines"] = got.text.splitlines()
        return output

    return Tool(contract, run)


class ReadRefused(ToolFailure):
    """The executor's refusal as a classified failure that still knows its rung (``refusal``, ``rung``).

    Nothing was read, so the status is *rejected*; the host passes ``error`` on as the model's feedback.
    """

    def __init__(self, refusal: PathRefused):
        super().__init__(Status.REJECTED, "path_refused", refusal.error.message, refusal.failure_class,
                         error=refusal.error)
        self.refusal, self.rung = refusal, refusal.rung


def common_errors(workspace: Path | str | Workspace) -> list[dict[str, str]]:
    """The chapter's four common errors, each produced by a real call to ``read_file``.

    The workspace should hold ``src/config.ts`` and no ``config/settings.yaml``.
    Each row: the error, the example call, the error code, the pointer, and
    what goes back to the model (the structured error's message and hint).
    """
    from toolkit.kernel.host import Host
    from toolkit.kernel.call import request

    host = Host.of([make_read_file(workspace)])
    cases = [
        ("missing required field", "path absent", {}),
        ("wrong type", "path given as an array", {"path": ["src/config.ts"]}),
        ("out-of-range enum", "mode outside the list", {"path": "src/config.ts", "mode": "binary"}),
        ("wrong tool chosen", "read_file on a config that doesn't exist", {"path": "config/settings.yaml"}),
    ]
    rows = []
    for label, example, arguments in cases:
        result = host.execute(request("read_file", arguments, call_id=f"call_{len(rows) + 1}"))
        error = result.errors[0]
        rows.append({"error": label, "example": example, "arguments": arguments, "status": result.status.value,
                     "failure_class": result.failure_class.value if result.failure_class else "",
                     "code": error.code, "pointer": error.pointer,
                     "feedback": f"{error.message} — hint: {error.hint}" if error.hint else error.message})
    return rows
