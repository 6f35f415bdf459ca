"""Chapter 09: the course's host in front of any MCP server: a tools/call is a request too.

    proposal -> host.check (schema, permissions, preconditions, approval) -> ledger -> tools/call -> ToolResult

``McpHost`` adopts each listed tool as a contract (``toolkit.mcp.adoption``) in a ``Host``: a call
is checked first, asks ``approve`` when it needs approval, and goes through the ledger when
it is not safe to repeat; only a legal call reaches the server (``sent`` counts them). The answer is
a ``ToolResult``: ``structuredContent`` (or the text) as output; ``isError`` a failure with the
server's first line. A server's text is a stranger's: tools it cannot adopt or lists twice are
``skipped`` with a reason, an answer over ``MAX_ANSWER_BYTES`` is refused, every answer is redacted
(``toolkit._show``) before the model, the ledger or the log sees it."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable, Iterable

from toolkit.kernel import (Caller, Contract, FailureClass, Host, Status, Tool, ToolCall, ToolError,
                            ToolFailure, ToolResult, check, invoke_with_ledger, request)
from toolkit._ids import CallIds, refusal_result, round_refusals
from toolkit._caps import MAX_ANSWER_BYTES, MAX_ARGUMENT_BYTES, MAX_SERVER_ERROR_CHARS
from toolkit._show import echo_text, redact_arguments, shorten
from toolkit.mcp import Trust, adopt_tool

#: ``approve(call, contract)``: True lets a call that needs approval run.
Approver = Callable[[ToolCall, Contract], bool]


def remote_output(result: Any, secret_fields: Iterable[str] = ()) -> Any:
    """A ``CallToolResult``'s payload, redacted (``toolkit._show.redact_arguments``): its structured
    content, else ``{"text": ...}``. ``isError: true`` or an answer over ``MAX_ANSWER_BYTES`` raises
    ``ToolFailure``, carrying the server's text redacted and cut short."""
    content = getattr(result, "content", None) or []
    texts = [getattr(c, "text", "") for c in content if getattr(c, "type", "") == "text"]
    if getattr(result, "is_error", False):
        said = redact_arguments(shorten(" ".join(texts).strip(), MAX_ARGUMENT_BYTES))  # bounded, masked
        line = shorten(said or "the server reported an error", MAX_SERVER_ERROR_CHARS)
        error = ToolError("execution_failed", "tools/call", f"the MCP server answered isError: {line}",
                          hint="read the server's message; the effect may not have happened",
                          retryable=False)
        raise ToolFailure(Status.FAILED, "execution_failed", error.message, FailureClass.EXECUTION,
                          error=error)
    structured = getattr(result, "structured_content", None)
    output = structured if structured is not None else {"text": "\n".join(texts)}
    size = sum(map(len, texts)) if structured is None else 0    # characters: at most the bytes
    if size <= MAX_ANSWER_BYTES:
        size = sum(len(t.encode("utf-8", "replace")) for t in texts) if structured is None else \
            len(json.dumps(structured, default=repr).encode("utf-8", "replace"))
    if size > MAX_ANSWER_BYTES:
        error = ToolError("too_large", "tools/call", f"the MCP server's answer is {size} bytes, "
                          f"over the {MAX_ANSWER_BYTES} byte cap",
                          expected=f"at most {MAX_ANSWER_BYTES} bytes",
                          received=f"{size} bytes", hint="ask for less (a smaller range, a page)")
        raise ToolFailure(Status.FAILED, "too_large", error.message, FailureClass.EXECUTION,
                          error=error)
    return redact_arguments(output, secret_fields)


class McpHost:
    """The course's layers in front of one open ``McpConnection``'s tools."""

    def __init__(self, connection: Any, trust: Trust = Trust(), caller: Caller = Caller(),
                 approve: Approver | None = None, ledger: Any = None):
        from toolkit.kernel import MemoryLedger

        self.connection, self.trust, self.approve = connection, trust, approve
        self.ledger = MemoryLedger() if ledger is None else ledger
        self.ids = CallIds()
        self.asked: list[str] = []      # every approval asked for, as a call summary and the answer
        self.sent: list[str] = []       # every tools/call that reached the server, by tool name
        self.skipped: dict[str, str] = {}   # tools the host could not adopt, and why
        tools, listing = [], connection.tools()
        names = [listed.get("name") if isinstance(listed, dict) else getattr(listed, "name", None)
                 for listed in listing]
        repeated = Counter(names)
        for name, listed in zip(names, listing):
            shown = name if isinstance(name, str) else "?"
            if repeated[name] > 1:   # which one would the server run? neither is adopted
                count = repeated[name]
                self.skipped[shown] = f"{echo_text(shown)}: the listing names {count} tools so"
                continue
            contract = adopt_tool(listed, trust)
            if isinstance(contract, str):
                self.skipped[shown] = contract
            else:
                tools.append(Tool(contract, self._runner(contract)))
        self.host = Host.of(tools, caller)

    def _runner(self, contract: Contract) -> Callable[[dict, Any], Any]:
        name = contract.name

        def run(arguments: dict, world: Any) -> Any:
            self.sent.append(name)
            try:
                answer = self.connection.call(name, arguments)
            except TimeoutError:
                raise ToolFailure(Status.TIMEOUT, "timeout", "the MCP server did not answer in time",
                                  FailureClass.TIMEOUT) from None
            return remote_output(answer, contract.secret_fields)
        return run

    @property
    def contracts(self) -> dict[str, Contract]:
        """The adopted contracts, by tool name."""
        return {name: tool.contract for name, tool in self.host.tools.items()}

    def cards(self) -> list[str]:
        """Each adopted contract as the chapter's card."""
        return [c.card() for c in self.contracts.values()]

    def call(self, name: str, arguments: Any = None, call_id: str | None = None,
             idempotency_key: str | None = None) -> ToolResult:
        """One proposed call through every layer; the result answers ``call_id`` (minted when absent)."""
        call = request(name, {} if arguments is None else arguments, call_id, self.ids, idempotency_key)
        return self.execute(call)

    def execute(self, call: ToolCall) -> ToolResult:
        """Check ``call``; ask for approval when that is all it lacks; then run it (through the ledger if needed)."""
        verdict = self.host.check(call)
        contract = self.host.contract(call.name)
        if not verdict.legal and contract is not None and self.approve is not None and _lacks_only_approval(verdict):
            yes = _asked(self.approve, call, contract)
            self.asked.append(f"{call.summary(contract.secret_fields)}: {'approved' if yes else 'declined'}")
            if yes:   # the approval covers this one call: checked again with it, never kept on the host
                verdict = check(call, contract, self.host.caller.approving(call.call_id), self.host.world,
                                declared=self.host.tools)
        return invoke_with_ledger(self.host, call, self.ledger, verdict)

    def run_round(self, calls: Iterable[ToolCall]) -> list[ToolResult]:
        """One result per call, in order; the round's id rule (``toolkit._ids.round_refusals``) comes first."""
        calls = list(calls)
        answer, refusals = round_refusals(calls)
        return [refusal_result(answer[n], refusals[n]) if n in refusals else self.execute(call)
                for n, call in enumerate(calls)]


def _lacks_only_approval(verdict: Any) -> bool:
    errors = verdict.errors
    return bool(errors) and all(e.code == "approval_required" for e in errors)


def _asked(approve: Approver, call: ToolCall, contract: Contract) -> bool:
    try:
        return approve(call, contract) is True
    except Exception:   # an approver that fails has not approved
        return False
