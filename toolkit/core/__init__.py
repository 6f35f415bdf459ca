"""The contract core (chapters 01-04): calls, contracts, errors, results, schema, legality, host, loop, scoring."""
from toolkit.core.calls import CallIds, request, ToolCall
from toolkit.core.errors import CODES, pointer_for, shorten, ToolError
from toolkit.core.redaction import (is_secret_name, redact, REDACTED, scrub, SECRET_NAME, secret_values, summarize,
    TOKEN_SHAPES)
from toolkit.core.schema import (compile_schema, json_type, MAX_ARGUMENT_BYTES, MAX_DEPTH, parse_arguments,
    schema_errors)
from toolkit.core.contracts import CheckResult, Condition, Contract, Retry
from toolkit.core.results import FailureClass, MEANING, NEXT_STEP, POINTS_AT, Status, ToolFailure, ToolResult
from toolkit.core.legality import Caller, check, Layer, LAYER_OF, LAYERS, legal, Outcome, Test, Verdict
from toolkit.core.keys import carried_key
from toolkit.core.host import Attempt, Host, Implementation, not_a_call, rejection, Tool
from toolkit.core.loop import (contract_allows, evaluate, invoke_with_ledger, ledger_key, Observation,
    ScriptedPolicy, State)
from toolkit.core.scoring import Choice, choose, expected_value, flip_point, governed_score, Option
from toolkit.core.safeguards import lean_path, required_safeguards, SAFEGUARDS, TaskProperties, WHEN_TO_USE
