"""Chapter 01: read_file's business layer and postcondition: an existing small regular file; evidence that matches.

``file_conditions(ws)`` is both, for ``make_read_file``. The precondition is advice from an
``lstat`` (rung 3 checks again); a path the path layer refuses is the path layer's to blame."""
from __future__ import annotations

import hashlib
from typing import Any

from toolkit.kernel.contract import Condition
from toolkit.kernel.call import ToolError
from toolkit._paths import PathRefused, no_readable_file


def file_conditions(workspace: Any) -> tuple[Condition, Condition]:
    """(the precondition, the postcondition) of read_file in ``workspace``."""
    return _existing_file(workspace), _EVIDENCE_MATCHES


def _existing_file(workspace: Any) -> Condition:
    """The business layer for a ``toolkit.Workspace``: a missing config gets a hint to switch tools."""
    def exists(arguments: dict, world: Any) -> bool | ToolError:
        path = arguments.get("path") if isinstance(arguments, dict) else None
        try:
            entry = workspace.entry(path)     # lstat only: advice; rung 3 checks again
        except PathRefused:
            return True
        return no_readable_file(path, entry, workspace.max_bytes) or True
    return Condition("file_exists", f"path names an existing regular file of at most {workspace.max_bytes} bytes",
                     exists)


def _evidence_matches(arguments: dict, output: Any, world: Any) -> bool:
    """Size and sha256 describe the content returned (checked when the text is lossless)."""
    evidence = output.get("evidence", {}) if isinstance(output, dict) else {}
    if not isinstance(output, dict) or set(evidence) != {"size", "sha256"}:
        return False
    if not output.get("lossless"):
        return True
    data = output["content"].encode("utf-8")
    return evidence == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


_EVIDENCE_MATCHES = Condition("evidence_matches", "size and sha256 are those of the bytes returned",
                             _evidence_matches)
