"""toolkit: tool calling as a contract (every chapter imports it as ``tk``).

The model proposes ``(name, arguments, call id)``; the host checks it against a ``Contract``,
executes or refuses it, and returns one ``ToolResult`` per call id.

    kernel/   chapters 01-08  the rules, one per file, formula first (``toolkit/READING.md``)
    _*.py     the hardening the kernel calls: caps, echoes, JSON, schemas, ids, paths, streams
    effects/  chapters 05-07  the durable ledger, retries, records, audit
    wire/     chapters 01, 08 SSE framing, vendor formats and streams, pairing, running a round
    files/    chapters 01, 03 edit_file, exports, import claims
    live/     chapter 09      a real model through the official SDKs, offline on recordings
    mcp/      chapter 09      the course's tools over MCP, and the contract host before any server

Scenery and panels live in ``course``. ``__all__`` is read off the imports below; it stays light."""

from types import ModuleType as _ModuleType

from toolkit.kernel.call import FailureClass, Status, ToolCall, ToolError, ToolFailure, ToolResult, request
from toolkit._ids import CallIds
from toolkit.kernel.contract import Condition, Contract, Retry
from toolkit.kernel.legality import LAYERS, Caller, Outcome, Test, Verdict, check, legal
from toolkit.kernel.host import Attempt, Host, Tool, rejection
from toolkit.kernel.loop import State, contract_allows, evaluate, invoke_with_ledger
from toolkit.kernel.choice import Choice, Option, choose, expected_value, governed_score
from toolkit.kernel.read_file import confine, make_read_file, read_confined
from toolkit.kernel.ledger import Answer, Ledger, LedgerStatus, MemoryLedger, invoke
from toolkit.kernel.backoff import RetryController, RetryPolicy, RetryState, retry_verdict, step
from toolkit.kernel.stream import COMPLETE, CUT, Refusal, completion_problem
from toolkit.kernel.scheduler import Plan, conflict, resources, schedule
from toolkit.effects.durable_ledger import DurableLedger
from toolkit._paths import PathRefused
from toolkit._show import redact
from toolkit._workspace import Workspace

__version__ = "0.1.0"

#: The public names, read off the imports above (each is written once, where it is imported).
__all__ = sorted(name for name, value in dict(globals()).items()
                 if not name.startswith("_") and not isinstance(value, _ModuleType) and name != "annotations")
