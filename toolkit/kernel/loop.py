"""Chapter 03: the interpreter loop: the model proposes, the contract checker disposes.

    evaluate(state):
      proposal = policy(state)
      if not contract_allows(proposal):
        return evaluate(state.with_observation("rejected", reason))
      result = invoke_with_ledger(proposal)
      return evaluate(state.with_observation(result))

``evaluate`` below is those lines, made iterative so a long episode cannot overflow the stack. A refusal is a
normal transition, not a crash: it becomes an observation the policy reads on its next step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolError, ToolResult
from toolkit.kernel.contract import Contract, Retry
from toolkit.kernel.host import Host
from toolkit.kernel.legality import Verdict
from toolkit._json import carried_key, parsed_arguments
from toolkit._printed import observation_line


def evaluate(state: "State", policy: "Policy", host: Host, ledger: Any = None, max_steps: int = 50) -> "State":
    """Run the loop until the policy stops proposing (or ``max_steps`` is reached)."""
    for _ in range(max_steps):
        proposal = policy(state)
        if proposal is None:
            return State(state.task, state.observations, done=True)
        verdict = contract_allows(host, proposal)
        hidden = getattr(host.contract(proposal.name), "secret_fields", ())
        if not verdict.legal:
            refused = host.execute(proposal, verdict)  # logs the attempt; returns the rejection
            state = state.with_observation("rejected", proposal, refused, hidden)
            continue
        state = state.with_observation("result", proposal, invoke_with_ledger(host, proposal, ledger, verdict),
                                       hidden)
    return state


@dataclass(frozen=True)
class Observation:
    """What one step taught the policy: ``rejected`` or ``result``, with the result itself."""

    kind: str
    call: ToolCall
    result: ToolResult
    secret_fields: tuple[str, ...] = ()   # the contract's secret fields, masked in the transcript

    def __repr__(self) -> str:   # the call's arguments may hold secrets: shown as the transcript shows them
        return f"Observation({self.line()!r}, result={self.result!r})"

    def line(self) -> str:
        """One transcript line: what was proposed (secret fields masked) and what came of it."""
        return observation_line(self)


@dataclass(frozen=True)
class State:
    """The task and everything observed so far (immutable: each step makes a new state)."""

    task: str
    observations: tuple[Observation, ...] = ()
    done: bool = False

    def with_observation(self, kind: str, call: ToolCall, result: ToolResult,
                         secret_fields: tuple[str, ...] = ()) -> "State":
        """A new state with one more observation; the old state is unchanged."""
        return State(self.task, self.observations + (Observation(kind, call, result, tuple(secret_fields)),))

    @property
    def last(self) -> Observation | None:
        return self.observations[-1] if self.observations else None

    def transcript(self) -> list[str]:
        return [f"step {i}: {o.line()}" for i, o in enumerate(self.observations, 1)]


#: A policy reads the state and proposes the next call, or None to stop.
Policy = Callable[[State], "ToolCall | None"]


def contract_allows(host: Host, proposal: ToolCall) -> Verdict:
    """The contract checker: all three tests for the proposal (``.legal`` is 1 when it may run)."""
    return host.check(proposal)


def ledger_key(proposal: ToolCall, contract: Contract | None, arguments: Any) -> str | ToolError:
    """The key the call carries, else its call id (a retry without its key is visibly new); two keys that
    disagree are an error."""
    return carried_key(proposal, contract, arguments) or proposal.call_id


def invoke_with_ledger(host: Host, proposal: ToolCall, ledger: Any = None,
                       verdict: Verdict | None = None) -> ToolResult:
    """Run an allowed proposal; an effect not plainly safe to repeat goes through the ledger, which sees the
    validated arguments: the same key replays the first result, with other arguments it is a conflict."""
    contract = host.contract(proposal.name)
    verdict = verdict if verdict is not None and verdict.call == proposal else host.check(proposal)
    if ledger is None or contract is None or contract.retry is Retry.SAFE or not verdict.legal:
        return host.execute(proposal, verdict)      # a refusal is logged and returned: it never reaches the ledger
    arguments = verdict.arguments if verdict.arguments is not None else parsed_arguments(proposal.arguments)
    key = ledger_key(proposal, contract, arguments)
    if isinstance(key, ToolError):
        return ToolResult(proposal.call_id, Status.REJECTED, failure_class=FailureClass.PRECONDITION,
                          reason=key.code, errors=(key,))
    answer = ledger.call(key, lambda _: host.execute(proposal, verdict), arguments,
                         tool=proposal.name, principal=host.caller.name, secret_fields=contract.secret_fields)
    return answer.to_result(proposal.call_id)   # replayed or refused, the result answers *this* call id
