"""The contract core (chapters 01-04): calls, contracts, errors, results, schema, legality, host, loop, scoring.

Each name below is defined in the module it is listed under; that module loads on first use.
"""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "calls": ("CallIds", "request", "ToolCall"),
    "errors": ("CODES", "pointer_for", "shorten", "ToolError"),
    "limits": ("MAX_ARGUMENT_BYTES", "MAX_DEPTH"),
    "redaction": ("is_secret_name", "redact", "REDACTED", "scrub", "SECRET_NAME", "secret_values", "summarize",
                  "TOKEN_SHAPES"),
    "schema": ("compile_schema", "json_type", "parse_arguments", "schema_errors"),
    "contracts": ("CheckResult", "Condition", "Contract", "Retry"),
    "results": ("FailureClass", "MEANING", "NEXT_STEP", "POINTS_AT", "Status", "ToolFailure", "ToolResult"),
    "legality": ("Caller", "check", "Layer", "LAYER_OF", "LAYERS", "legal", "Outcome", "Test", "Verdict"),
    "keys": ("carried_key",),
    "host": ("Attempt", "Host", "Implementation", "not_a_call", "rejection", "Tool"),
    "loop": ("contract_allows", "evaluate", "invoke_with_ledger", "ledger_key", "Observation", "ScriptedPolicy",
             "State"),
    "scoring": ("Choice", "choose", "expected_value", "flip_point", "governed_score", "Option"),
    "safeguards": ("lean_path", "required_safeguards", "SAFEGUARDS", "TaskProperties", "WHEN_TO_USE"),
})
