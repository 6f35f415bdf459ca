"""Chapter 03: Agent-427's import failure, run for real.

Agent-427 wants ``scripts/build_site.py`` to load the book's manifest through
the shared module instead of parsing the JSON by hand. Its first proposal is
two plausible claims, both wrong::

    proposal.code:  from publication_manifest import load_manifest
    proposal.tool:  edit_file({"path": "scripts/build_site.py",
                               "patch": "use load_manifest(BOOK_DIR)"})

The runtime checks both against the world as it is: the ``edit_file`` contract
(``toolkit.kernel.legality.check``) refuses the fields, and the export reader
(``toolkit.files.exports``) refuses the name, because ``publication_manifest``
exports ``load_publication_manifest``. Nothing is edited. The refusal is an
observation; the agent inspects the module's real exports and proposes again,
with the declared fields and the exported name.

Everything happens in a copy of the scenario folder (``copy_scenario``, or
``scenario_copy`` for a throwaway one), so no run ever changes the files
shipped with the package. The scripted episode is ``agent427_episode``; the
legality panel's three switches are ``agent427_switches``.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from toolkit.kernel import (Caller, Host, Outcome, Status, Test, ToolCall, ToolError, ToolResult, Verdict,
                            rejection, request)
from toolkit.files import (Exports, check_imports, make_edit_file, make_inspect_exports,
                           read_exports, sha256_bytes)
from course.worlds import CLOSE, Preferences

#: The scenario folder shipped with the package (never edited; copy it first).
SCENARIO = Path(__file__).resolve().parent / "scenarios" / "agent427"
BUILD_SCRIPT = "scripts/build_site.py"
MODULE = "publication_manifest"
TASK = "make scripts/build_site.py load the manifest with the publication_manifest module"

#: Agent-427's caller: it may read and write files in the workspace, nothing else.
AGENT = Caller("agent-427", frozenset({"fs.read", "fs.write"}))

#: The line of build_site.py that parses the manifest by hand (the line the edit replaces).
OLD_TEXT = 'MANIFEST = json.loads((BOOK_DIR / "manifest.json").read_text(encoding="utf-8"))\n'


def new_text(symbol: str) -> str:
    """What Agent-427 puts in the line's place, using ``symbol`` as the loader's name."""
    return f"from {MODULE} import {symbol}\n\nMANIFEST = {symbol}(BOOK_DIR)\n"


# ------------------------------------------------------------------ the world
def copy_scenario(destination: Path | str) -> Path:
    """Copy the scenario into ``destination`` (a workspace directory) and return its path.

    Runs work on the copy, so they never modify the package's own files.
    """
    target = Path(destination)
    shutil.copytree(SCENARIO, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "site"))
    return target


@contextmanager
def scenario_copy(prefix: str = "agent427-") -> Iterator[Path]:
    """A copy of the scenario in a temporary folder, removed when the ``with`` block ends."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield copy_scenario(Path(folder) / "workspace")


def file_sha256(path: Path | str) -> str:
    """The sha256 of a file's bytes, as ``edit_file``'s evidence spells it."""
    return sha256_bytes(Path(path).read_bytes())


def tree_digest(root: Path | str) -> str:
    """One hash over every file under ``root`` (names and bytes): "did anything change?"."""
    digest = hashlib.sha256()
    base = Path(root)
    for path in sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        name = path.relative_to(base).as_posix().encode()
        digest.update(name + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def read_build_script(workspace: Path | str) -> str:
    return (Path(workspace) / BUILD_SCRIPT).read_text(encoding="utf-8")


def inspect_exports(workspace: Path | str, module: str = MODULE) -> Exports | ToolError:
    """The module's real exported names, read (parsed, never imported) from the workspace."""
    return read_exports(workspace, module)


# ----------------------------------------------------------------- proposals
@dataclass(frozen=True)
class Proposal:
    """What Agent-427 proposes: code it claims will work, and the tool call that would put it in place.

    A proposal stands in for its tool call inside the interpreter loop
    (``name``, ``arguments``, ``call_id``, ``summary``), so the host can check
    the code and the call together.
    """

    code: str
    call: ToolCall

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def arguments(self) -> Any:
        return self.call.arguments

    @property
    def call_id(self) -> str:
        return self.call.call_id

    @property
    def idempotency_key(self) -> str | None:
        return self.call.idempotency_key

    def summary(self) -> str:
        return self.call.summary()


def first_proposal(call_id: str = "call_1") -> Proposal:
    """The chapter's calamity: an import the module does not export, and fields the tool does not declare."""
    return Proposal(f"from {MODULE} import load_manifest",
                    request("edit_file", {"path": BUILD_SCRIPT, "patch": "use load_manifest(BOOK_DIR)"}, call_id))


def corrected_proposal(symbol: str = "load_publication_manifest", call_id: str = "call_3") -> Proposal:
    """The proposal after the evidence: the exported name and the declared fields."""
    return Proposal(f"from {MODULE} import {symbol}",
                    request("edit_file", {"file_path": BUILD_SCRIPT, "old_text": OLD_TEXT,
                                          "new_text": new_text(symbol)}, call_id))


def agent427_preferences() -> Preferences:
    """Agent-427's preferences in the chapter: it would rather write ``path``/``patch``, and ``load_manifest``."""
    return Preferences(
        keys={"path": 0.9, "patch": 0.8, CLOSE: 0.5, "file_path": 0.3, "old_text": 0.28, "new_text": 0.25},
        values={
            "path": {BUILD_SCRIPT: 0.9},
            "patch": {"use load_manifest(BOOK_DIR)": 1.0},
            "file_path": {BUILD_SCRIPT: 0.9, "build_site.py": 0.2},
            "old_text": {OLD_TEXT: 0.9},
            "new_text": {new_text("load_manifest"): 0.8, new_text("load_publication_manifest"): 0.3},
        },
    )


# -------------------------------------------------------------- the validator
@dataclass(frozen=True)
class ValidatorReport:
    """The validator's verdict on one proposal: the tool call's three tests, and the code's import claims.

    The code's import errors belong to the business layer (an import of a name
    that is not exported is a precondition the world does not meet), so they
    join the ``Pre`` test of ``verdict``. They can be checked even when the
    call's own arguments did not pass the schema.
    """

    proposal: Proposal
    call_verdict: Verdict
    code_errors: tuple[ToolError, ...]

    @property
    def verdict(self) -> Verdict:
        if not self.code_errors:
            return self.call_verdict
        pre = self.call_verdict.pre
        seen = {e.line() for e in pre.errors}
        extra = tuple(e for e in self.code_errors if e.line() not in seen)   # one line per unexported name
        merged = Test("Pre", Outcome.FAIL, pre.errors + extra)
        v = self.call_verdict
        return Verdict(v.call, v.schema_ok, v.auth_ok, merged, v.arguments)

    @property
    def errors(self) -> tuple[ToolError, ...]:
        return self.verdict.errors

    @property
    def ok(self) -> bool:
        return self.verdict.legal == 1

    def lines(self) -> list[str]:
        """One line per error, ``<pointer>: <message>``, in layer order."""
        return [e.line() for e in self.errors]

    def transition(self) -> str:
        return transition(self)


def workspace_of(host: Host) -> Path:
    """The workspace directory a host works in (its ``world``)."""
    if not isinstance(host.world, (str, Path)):
        raise TypeError("this host's world is not a workspace directory")
    return Path(host.world)


def validate(proposal: Proposal, host: Host | Path | str) -> ValidatorReport:
    """Check a proposal without running anything: the call through its contract, the code through its imports.

    ``host`` is the episode's host, or just a workspace directory (the episode's host is then built for it).
    """
    if not isinstance(host, Host):
        host = episode_host(host)
    call_verdict = Host.check(host, proposal.call)
    code_errors = tuple(check_imports(proposal.code, workspace_of(host)))
    return ValidatorReport(proposal, call_verdict, code_errors)


class ProposalHost(Host):
    """A host that checks a ``Proposal``'s code together with its call; plain calls are checked as usual."""

    def check(self, call: Any) -> Verdict:
        if isinstance(call, Proposal):
            return validate(call, self).verdict
        return super().check(call)

    def execute(self, call: Any, verdict: Verdict | None = None) -> ToolResult:
        """Run a proposal's tool call under the verdict that covered its code too."""
        if not isinstance(call, Proposal):
            return super().execute(call, verdict)
        result = super().execute(call.call, verdict if verdict is not None else self.check(call))
        self.log[-1] = replace(self.log[-1], call=call)   # the log keeps the whole proposal, code included
        return result


def episode_host(workspace: Path | str) -> ProposalHost:
    """The host for the episode: ``edit_file`` and ``inspect_exports`` over one workspace, Agent-427 as caller."""
    root = Path(workspace)
    return ProposalHost.of([make_edit_file(root), make_inspect_exports(root)], AGENT, root)


# ---------------------------------------------------------------- transitions
#: The evidence each kind of error calls for, most specific first. Schema errors
#: need none: their hints already list the declared fields.
EVIDENCE_STEPS: tuple[tuple[str, str], ...] = (
    ("symbol_not_exported", "inspect_exports"),
    ("path_refused", "list_workspace"),
    ("precondition_failed", "read_file"),
    ("not_authorized", "escalate"),
    ("approval_required", "ask_for_approval"),
)


def transition(outcome: ValidatorReport | ToolResult) -> str:
    """The interpreter's next moves, read off a validation report or a tool result.

    ``rejected_<first failing layer> -> observe(errors) -> <evidence step>``, e.g.
    ``rejected_schema -> observe(errors) -> inspect_exports``.
    """
    result = outcome if isinstance(outcome, ToolResult) else (
        rejection(outcome.verdict) if not outcome.ok else ToolResult(outcome.proposal.call_id, Status.SUCCEEDED))
    if result.status is Status.SUCCEEDED:
        return "legal -> execute -> observe(result)"
    first = f"rejected_{result.failure_class.value}" if result.failure_class else result.status.value
    codes = {e.code for e in result.errors}
    step = next((s for code, s in EVIDENCE_STEPS if code in codes), "propose_again")
    return f"{first} -> observe(errors) -> {step}"


__all__ = ["AGENT", "agent427_preferences", "BUILD_SCRIPT", "EVIDENCE_STEPS", "MODULE", "OLD_TEXT", "Proposal",
           "ProposalHost", "SCENARIO", "ValidatorReport", "copy_scenario", "corrected_proposal", "episode_host",
           "first_proposal", "inspect_exports", "new_text", "read_build_script", "scenario_copy", "transition",
           "validate"]
