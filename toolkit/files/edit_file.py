"""Chapter 03: a real ``edit_file`` tool: replace one exact piece of text in one workspace file.

The schema asks for ``file_path`` first (``if``/``then``), so a call that names no file is told so
first. Retry is UNSAFE: when ``new_text`` contains ``old_text`` a blind retry edits twice, so after
a timeout compare the file's hash with the evidence. The file is located by rungs 1 and 2, read
and written through rung 3 (``write_confined``), never through a link."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from toolkit.kernel import (Condition, Contract, FailureClass, Retry, Status, Tool, ToolError,
                            ToolFailure, open_confined, write_confined)
from toolkit._workspace import locate
from toolkit.files import check_claim, introduced_claims
from toolkit._caps import MAX_FILE_BYTES
from toolkit._paths import HINTS, PathRefused

EDIT_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["file_path"],
    "if": {"required": ["file_path"]},
    "then": {"required": ["old_text", "new_text"]},
    "properties": {
        "file_path": {"type": "string", "minLength": 1,
                      "description": "path of the file, relative to the workspace, e.g. scripts/build_site.py"},
        "old_text": {"type": "string", "minLength": 1,
                     "description": "the exact text to replace; it must occur exactly once"},
        "new_text": {"type": "string", "description": "the text that takes its place"},
    },
    "additionalProperties": False,
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolve_in_workspace(root: Path | str, file_path: Any) -> Path | ToolError:
    """The real path ``file_path`` names inside ``root``, or the ``path_refused`` error saying why not."""
    found = _confined(root, file_path)
    return found if isinstance(found, ToolError) else found[0]


def _confined(root: Path | str, file_path: Any) -> tuple[Path, str] | ToolError:
    """``(real path, real path relative to the root)`` for ``file_path``, or the ``path_refused`` error."""
    def refuse(message: str, hint: str = "give a path relative to the workspace, e.g. scripts/build_site.py"):
        return ToolError("path_refused", "$.file_path", message, expected="a relative path inside the workspace",
                         received=file_path if isinstance(file_path, str) else type(file_path).__name__,
                         hint=hint, retryable=False)

    if not isinstance(file_path, str) or not file_path:
        return refuse("file_path must be a non-empty string")
    if "\x00" in file_path:
        return refuse("file_path contains a NUL byte")
    if Path(file_path).is_absolute():
        return refuse("absolute paths are refused")
    try:
        real, relative = locate(root, file_path)          # rungs 1 and 2
    except PathRefused as refusal:
        if refusal.kind == "outside":
            return refuse("file_path resolves outside the workspace", hint="symlinks may not lead out of the workspace")
        if refusal.kind == "unresolvable":
            return refuse("file_path cannot be resolved")
        return refuse(f"file_path is refused: {refusal.why}", hint=HINTS[refusal.kind][1])
    return real, relative.as_posix()


def _read_text(root: Path, args: dict) -> tuple[str, str] | ToolError:
    """``(relative name, text)`` of the file the call names, read through rung 3, or why not."""
    found = _confined(root, args.get("file_path"))
    if isinstance(found, ToolError):
        return ToolError("precondition_failed", "$.file_path", "not checked: file_path is refused",
                         expected="a path the guard accepts", received=args.get("file_path"), retryable=False)
    rel = found[1]
    try:
        data = open_confined(root, rel, MAX_FILE_BYTES).data
    except PathRefused as refusal:
        if refusal.kind == "not_found":
            return ToolError("precondition_failed", "$.file_path", f"no such file: {rel}",
                             expected="an existing regular file", received=rel, hint="check the path")
        if refusal.kind == "not_regular":       # a directory, a FIFO (reading it would block), a device
            return ToolError("precondition_failed", "$.file_path", f"{rel} is not a regular file",
                             expected="an existing regular file", received=rel, retryable=False)
        if refusal.kind == "too_large":
            return ToolError("precondition_failed", "$.file_path", f"{rel} is over {MAX_FILE_BYTES} bytes",
                             expected=f"at most {MAX_FILE_BYTES} bytes", received=rel, retryable=False)
        return ToolError("precondition_failed", "$.file_path", f"{rel} cannot be read: {refusal.why}",
                         expected="a regular file inside the workspace", received=rel, hint=HINTS[refusal.kind][1],
                         retryable=refusal.kind == "changed")
    try:
        return rel, data.decode("utf-8")
    except UnicodeDecodeError:
        return ToolError("precondition_failed", "$.file_path", f"{rel} is not readable UTF-8 text",
                         expected="a UTF-8 text file", received=rel, retryable=False)


def unique_offset(text: str, old_text: str) -> int | None:
    """Where ``old_text`` starts if it occurs exactly once (overlaps counted), else None."""
    first = text.find(old_text)
    if first < 0 or not old_text or text.find(old_text, first + 1) >= 0:
        return None
    return first


def module_name(rel: str) -> str:
    """``scripts/build_site.py`` -> ``scripts.build_site`` (used for relative imports)."""
    return ".".join(Path(rel).with_suffix("").parts)


def edit_file_contract(workspace: Path | str) -> Contract:
    """The ``edit_file`` contract for one workspace directory."""
    root = Path(workspace).resolve()

    def inside_workspace(args: dict, world: Any) -> bool | ToolError:
        found = resolve_in_workspace(root, args["file_path"])
        return found if isinstance(found, ToolError) else True

    def file_exists(args: dict, world: Any) -> bool | ToolError:
        found = _read_text(root, args)
        return found if isinstance(found, ToolError) else True

    # The two conditions below read the file. When it cannot be read, file_exists
    # already fails the Pre test and says why; they defer to it rather than repeat it.
    def old_text_once(args: dict, world: Any) -> bool | ToolError:
        found = _read_text(root, args)
        if isinstance(found, ToolError):
            return True
        rel, text = found
        if unique_offset(text, args["old_text"]) is not None:
            return True
        count = text.count(args["old_text"])
        return ToolError("precondition_failed", "$.old_text", f"old_text occurs {count} times in {rel}",
                         expected="exactly one occurrence", received=count,
                         hint="read the file and quote a longer, unique piece of it" if count else
                         "read the file first; old_text must be copied from it exactly")

    # Module names resolve from the workspace root, as the build script's sys.path does.
    def imports_exported(args: dict, world: Any) -> bool | ToolError:
        found = _read_text(root, args)
        if isinstance(found, ToolError):
            return True
        rel, text = found
        offset = unique_offset(text, args["old_text"])
        if not rel.endswith(".py") or offset is None:
            return True  # not Python, or the edit is already refused by old_text_once
        after = text[:offset] + args["new_text"] + text[offset + len(args["old_text"]):]
        claims, errors = introduced_claims(text, after, module_name(rel))
        if errors:
            e = errors[0]
            return ToolError("precondition_failed", "$.new_text", f"the edited {rel} would not parse "
                             f"({e.pointer.removeprefix('code ')}: {e.message.removeprefix('does not parse: ')})",
                             expected="an edit that leaves valid Python", received=e.received, hint=e.hint)
        for claim in claims:
            error = check_claim(claim, root)
            if error is not None:
                return error
        return True

    def replaced_once(args: dict, output: Any, world: Any) -> bool:
        found = _read_text(root, args)
        if isinstance(found, ToolError) or not isinstance(output, dict):
            return False
        now = found[1]
        offset, new = output.get("offset", -1), args["new_text"]
        undone = now[:offset] + args["old_text"] + now[offset + len(new):]
        evidence = output.get("evidence", {})
        return (0 <= offset and now[offset:offset + len(new)] == new
                and sha256_bytes(undone.encode()) == evidence.get("sha256_before")
                and sha256_bytes(now.encode()) == evidence.get("sha256_after"))

    return Contract(
        name="edit_file",
        description="Replace one exact, unique piece of text in a workspace file with new text.",
        schema=EDIT_FILE_SCHEMA,
        permissions=("fs.write",),
        guards=(Condition("inside_workspace", "file_path stays inside the workspace", inside_workspace),),
        preconditions=(
            Condition("file_exists", "the file exists", file_exists),
            Condition("old_text_once", "old_text occurs exactly once", old_text_once),
            Condition("imports_exported", "every import new_text introduces is exported", imports_exported),
        ),
        postconditions=(Condition("replaced_once", "the file holds new_text where old_text was, and nothing "
                                  "else changed", replaced_once),),
        cost=2.0, risk=6.0, reversible=True, retry=Retry.UNSAFE, risk_category="writes one workspace file",
        evidence=("sha256 before", "sha256 after"),
        reads=("file:{file_path}",), writes=("file:{file_path}",),
    )


def make_edit_file(workspace: Path | str) -> Tool:
    """The ``edit_file`` tool for one workspace; the run checks the path and ``old_text`` again."""
    root = Path(workspace).resolve()
    contract = edit_file_contract(root)

    def run(args: dict, world: Any) -> dict[str, Any]:
        found = _read_text(root, args)
        if isinstance(found, ToolError):
            raise ToolFailure(Status.REJECTED, "precondition_failed", found.message, FailureClass.PRECONDITION)
        rel, text = found
        old, new = args["old_text"], args["new_text"]
        offset = unique_offset(text, old)
        if offset is None:
            raise ToolFailure(Status.REJECTED, "precondition_failed",
                              f"{rel} changed since the check: old_text no longer occurs exactly once",
                              FailureClass.PRECONDITION)
        before = text.encode("utf-8")
        after = (text[:offset] + new + text[offset + len(old):]).encode("utf-8")
        try:
            write_confined(root, rel, after)          # no link followed; a new file renamed over the old one
        except PathRefused as refusal:
            raise ToolFailure(Status.REJECTED, "path_refused", refusal.error.message, refusal.failure_class,
                              error=refusal.error) from None
        return {"file_path": rel, "line": text.count("\n", 0, offset) + 1, "offset": offset, "replaced": 1,
                "evidence": {"sha256_before": sha256_bytes(before), "sha256_after": sha256_bytes(after)}}

    return Tool(contract, run)
