"""The kernel (chapters 01-08): the rules of tool calling as a contract, one rule per file, in reading order.

    call.py         a call is a request; every call id gets one result          (chapter 01)
    contract.py     what a tool needs, promises, costs and risks                 (chapter 02)
    legality.py     legal(u) = 1{schema_ok ∧ auth_ok ∧ Pre}                     (chapter 02)
    host.py         the host checks, runs or refuses, and answers by call id     (chapter 01)
    loop.py         evaluate: the model proposes, the contract disposes          (chapter 03)
    choice.py       u* = argmax E[Q] − λc·C − λr·R over legal calls              (chapter 04)
    read_file.py    the ladder (lexical, real path, no-follow open), read_file   (chapter 01)
    ledger.py       invoke(f, x, k, L): replay a known key, run a new one once   (chapter 05)
    backoff.py      n' = min(n_max, n + 1), d' = β·d, escalate at n_max          (chapter 06)
    stream.py       a call runs only after its completion signal                 (chapter 08)
    scheduler.py    read-read together, write-write and read-write in order      (chapter 08)

Every name is imported here by name, so an editor's "go to definition" finds it; only the rules' own
names: hardening (caps, echoes, JSON and fingerprints, schemas and patterns, id rules) lives in the
private modules beside the kernel (``toolkit/_*.py``), each reached through one function, and a name
defined there is imported from there.
"""
from toolkit.kernel.call import (FailureClass, NEXT_STEP, request, Status, ToolCall, ToolError, ToolFailure,
                                 ToolResult)
from toolkit.kernel.contract import Condition, Contract, ContractError, Retry
from toolkit.kernel.legality import (Caller, check, Layer, LAYER_OF, LAYERS, legal, Outcome, PRE_QUESTIONS,
                                     refused, Test, Verdict)
from toolkit.kernel.host import Attempt, Host, rejection, Tool
from toolkit.kernel.loop import contract_allows, evaluate, invoke_with_ledger, ledger_key, Observation, State
from toolkit.kernel.choice import Choice, choose, expected_value, governed_score, Option
from toolkit.kernel.read_file import (check_lexical, check_realpath, confine, make_read_file, open_confined,
                                      path_guard, READ_FILE, READ_FILE_LAYERS, READ_FILE_SCHEMA, read_confined,
                                      write_confined)
from toolkit.kernel.ledger import Answer, invoke, invoke_effect, Ledger, LedgerStatus, MemoryLedger
from toolkit.kernel.backoff import (Action, Jitter, NEVER_RETRY, retry_verdict, RetryController, RetryDecision,
                                    RetryPolicy, RetryState, step)
from toolkit.kernel.stream import Assembler, COMPLETE, completion_problem, CUT, is_cut, Refusal
from toolkit.kernel.scheduler import conflict, Contracts, Footprint, Plan, PlannedCall, resources, schedule
