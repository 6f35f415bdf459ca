"""toolkit: tool calling as a contract (every chapter imports it as ``tk``).

A tool call is a request, not an action. The model proposes
``(name, arguments, call id)``; the host checks it against a ``Contract``
(schema -> permission/path -> business/approval), executes or refuses it,
and returns one ``ToolResult`` per call id.

The package is laid out like the chapter map:

    core/     chapters 01-04  calls, contracts, errors, schema, legality, keys, host, loop, scoring
    effects/  chapters 05-07  the ledger rule and the durable ledger, retries, timeouts, records, audit, metrics
    wire/     chapters 01, 08 SSE framing, stream assembly, vendor formats, pairing, scheduling
    files/    chapters 01, 03 path confinement, read_file, edit_file, exports, the open witness, constrained generation
    live/     chapter 09      a real model through the official SDKs, the same loop, offline on recordings
    mcp/      chapter 09      the course's tools served over MCP, and the contract host in front of any MCP server
    worlds/   every chapter   scenery: the billing fake and service, the crash harness, Agent-427's folder, ...
    present/  every chapter   widgets, plots and formulas, nothing a test needs

Rules of the house (``tests/test_house_rules.py`` holds them):

1. One idea per module, about 300 lines at most. The chapter's rule comes first and
   short; hardening (caps, SQLite details, vendor quirks) goes below it or beside it.
2. A module's first docstring line names the chapter it serves.
3. Fakes and scenarios live in ``worlds/``; concept modules never import them.
4. Every shared table (the layer map, the key a call carries, stop reasons, result
   pairing, path confinement, SQLite setup) has one definition; everything else imports it.
5. Imports run one way: ``core``, then ``effects`` / ``wire`` / ``files`` (which do not import
   each other), then ``live`` / ``mcp`` / ``worlds`` (nor these), then ``present``. Inside a
   part, import from the defining module; from another part, import from the part
   (``from toolkit.core import ToolCall``).
6. Class and function names are unique across the package.
7. Whatever starts threads, processes or temporary folders is a context manager that cleans up.

Importing ``toolkit`` is light: sympy, matplotlib and ipywidgets load only
inside ``course.present``, when a chapter draws or shows something, and
``worlds`` loads only when a chapter asks for its scenery.
"""
from toolkit.core import (Attempt, CallIds, Caller, Choice, Condition, Contract, FailureClass, Host, Option, Outcome,
                          Retry, ScriptedPolicy, State, Status, Test, Tool, ToolCall, ToolError, ToolFailure, ToolResult,
                          Verdict, check, choose, contract_allows, evaluate, expected_value, governed_score,
                          invoke_with_ledger, legal, redact, rejection, request)
from toolkit.effects import Answer, Ledger, LedgerStatus, MemoryLedger, SqliteLedger, invoke
from toolkit.files import PathRefused, Workspace, make_read_file

__version__ = "0.1.0"

__all__ = [
    "Answer", "Attempt", "CallIds", "Caller", "Choice", "Condition", "Contract", "FailureClass", "Host", "Ledger", "LedgerStatus", "MemoryLedger",
    "Option", "Outcome", "PathRefused", "Retry", "ScriptedPolicy", "SqliteLedger", "State", "Status", "Test", "Tool", "ToolCall", "ToolError",
    "ToolFailure", "ToolResult", "Verdict", "Workspace", "check", "choose", "contract_allows", "evaluate", "expected_value",
    "governed_score", "invoke", "invoke_with_ledger", "legal", "make_read_file", "redact", "rejection", "request",
]
