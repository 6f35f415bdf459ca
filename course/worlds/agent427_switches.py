"""Chapter 03: Agent-427's proposal under three switches, each one real input to the validator.

* **the call uses the declared fields** switches the proposal's tool call between
  ``edit_file({"path", "patch"})`` (the first proposal) and
  ``edit_file({"file_path", "old_text", "new_text"})`` (the corrected one);
* **the caller holds fs.write** switches the host's caller between Agent-427
  (``fs.read`` and ``fs.write``) and a reader holding ``fs.read`` only;
* **the imported symbol is exported** switches the name the proposal imports
  between ``load_manifest`` and ``load_publication_manifest``.

``agent427_scenario`` validates each combination for real
(``course.worlds.agent427.validate``: the call through the ``edit_file``
contract, the code through the export reader) against a copy of the scenario
that is only ever read. The legality panel of chapter 03 shows the verdicts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from toolkit.kernel import Caller, Test, ToolError, Verdict, request
from toolkit.files import make_edit_file, make_inspect_exports
from course.worlds import (AGENT, BUILD_SCRIPT, MODULE, Proposal, ProposalHost, corrected_proposal, episode_host,
                           scenario_copy, validate)

#: The same agent, with its write scope taken away.
READER = Caller(AGENT.name, frozenset({"fs.read"}))

EXPORTED, UNEXPORTED = "load_publication_manifest", "load_manifest"


def proposal_for(declared_fields: bool, exported: bool) -> Proposal:
    """Agent-427's proposal with the two switches that shape it: the call's fields and the imported name."""
    symbol = EXPORTED if exported else UNEXPORTED
    if declared_fields:
        return corrected_proposal(symbol, call_id="call_panel")
    return Proposal(f"from {MODULE} import {symbol}",
                    request("edit_file", {"path": BUILD_SCRIPT, "patch": f"use {symbol}(BOOK_DIR)"}, "call_panel"))


def _each_error_once(verdict: Verdict) -> Verdict:
    """The verdict with each Pre error listed once.

    When the call's ``new_text`` and the proposal's code import the same
    unexported name, both checks report it; the verdict keeps the line once.
    """
    seen: dict[tuple[str, str, str], ToolError] = {}
    for error in verdict.pre.errors:
        seen.setdefault((error.code, error.pointer, error.message), error)
    if len(seen) == len(verdict.pre.errors):
        return verdict
    pre = Test(verdict.pre.name, verdict.pre.outcome, tuple(seen.values()))
    return Verdict(verdict.call, verdict.schema_ok, verdict.auth_ok, pre, verdict.arguments)


def agent427_scenario(workspace: Path | str | None = None) -> Callable[[bool, bool, bool], Verdict]:
    """``(declared_fields, holds_write, exported) -> Verdict``, the three switches' verdicts.

    With a ``workspace`` (a copy made by ``course.worlds.agent427.copy_scenario``), every
    verdict is computed against it; it is read, never written. Without one, each
    verdict is computed in a fresh copy of the scenario that is deleted as soon as
    the verdict is known, so a panel leaves no folder behind however its kernel ends.
    """
    if workspace is None:
        def fresh(declared_fields: bool, holds_write: bool, exported: bool) -> Verdict:
            with scenario_copy("agent427-panel-") as copy:
                return agent427_scenario(copy)(declared_fields, holds_write, exported)
        return fresh

    root = Path(workspace)
    hosts = {True: episode_host(root),
             False: ProposalHost.of([make_edit_file(root), make_inspect_exports(root)], READER, root)}

    def scenario(declared_fields: bool, holds_write: bool, exported: bool) -> Verdict:
        return _each_error_once(validate(proposal_for(declared_fields, exported), hosts[holds_write]).verdict)

    return scenario


__all__ = ["EXPORTED", "READER", "UNEXPORTED", "agent427_scenario", "proposal_for"]
