"""toolkit: tool calling as a contract.

A tool call is a request, not an action. The model proposes
``(name, arguments, call id)``; the host checks it against a ``Contract``
(schema -> permission/path -> business/approval), executes or refuses it,
and returns one ``ToolResult`` per call id.

Importing ``toolkit`` is light: sympy, matplotlib and ipywidgets load only
inside ``toolkit.present``, when a chapter draws or shows something.
"""
from toolkit.core.calls import CallIds, ToolCall, request
from toolkit.core.contracts import Condition, Contract, Retry
from toolkit.core.errors import ToolError
from toolkit.core.host import Attempt, Host, Tool, rejection
from toolkit.core.loop import ScriptedPolicy, State, contract_allows, evaluate, invoke_with_ledger
from toolkit.effects.ledger import Answer, Ledger, LedgerStatus, MemoryLedger, SqliteLedger, invoke
from toolkit.core.legality import Caller, Outcome, Test, Verdict, check, legal
from toolkit.core.results import FailureClass, Status, ToolFailure, ToolResult
from toolkit.files.read_file import make_read_file
from toolkit.core.redaction import redact
from toolkit.core.scoring import Choice, Option, choose, expected_value, governed_score
from toolkit.files.workspace import PathRefused, Workspace

__version__ = "0.1.0"

__all__ = [
    "Answer", "Attempt", "CallIds", "Caller", "Choice", "Condition", "Contract", "FailureClass", "Host", "Ledger", "LedgerStatus", "MemoryLedger",
    "Option", "Outcome", "PathRefused", "Retry", "ScriptedPolicy", "SqliteLedger", "State", "Status", "Test", "Tool", "ToolCall", "ToolError",
    "ToolFailure", "ToolResult", "Verdict", "Workspace", "check", "choose", "contract_allows", "evaluate", "expected_value",
    "governed_score", "invoke", "invoke_with_ledger", "legal", "make_read_file", "redact", "rejection", "request",
]
