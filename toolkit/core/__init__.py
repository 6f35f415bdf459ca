"""The contract core (chapters 01-04): calls, contracts, errors, results, schema, legality, host, loop, scoring.

Each name below is defined in the module it is listed under; that module loads on first use.
"""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "calls": ("CallIds", "request", "ToolCall"),
    "errors": ("CODES", "echo_text", "echo_value", "pointer_for", "shorten", "SURROGATE", "ToolError"),
    "limits": ("MAX_ARGUMENT_BYTES", "MAX_CALL_ID_CHARS", "MAX_DEPTH", "MAX_ECHO_CHARS", "MAX_ERRORS_PER_CALL",
               "MAX_EVENT_BYTES", "MAX_NAME_CHARS", "MAX_OPEN_CALLS"),
    "redaction": ("is_secret_name", "name_parts", "redact", "redact_arguments", "REDACTED", "redacted_text", "scrub",
                  "scrub_error", "scrub_value", "SECRET_NAME", "SECRET_PAIRS", "secret_values", "SECRET_WORDS",
                  "spellings", "summarize", "TOKEN_SHAPES"),
    "lazy_formats": ("DEFERRED", "import_jsonschema"),
    "patterns": ("additional_names", "ecma_additional_properties", "ecma_pattern_keyword", "ecma_pattern_properties",
                 "ecma_regex", "is_ecma_regex", "pattern_matches", "pattern_problems", "schema_patterns"),
    "schema": ("compile_schema", "json_type", "parse_arguments", "schema_errors"),
    "contracts": ("CheckResult", "Condition", "Contract", "ContractError", "Retry"),
    "results": ("FailureClass", "MEANING", "NEXT_STEP", "POINTS_AT", "Status", "ToolFailure", "ToolResult"),
    "legality": ("Caller", "check", "Layer", "LAYER_OF", "LAYERS", "legal", "legal_line", "Outcome", "PRE_QUESTIONS",
                 "refused", "Test", "Verdict"),
    "keys": ("call_arguments", "carried_key"),
    "host": ("Attempt", "Host", "Implementation", "not_a_call", "rejection", "Tool"),
    "loop": ("contract_allows", "evaluate", "invoke_with_ledger", "ledger_key", "Observation", "ScriptedPolicy",
             "shown_call", "State"),
    "scoring": ("Choice", "choose", "expected_value", "flip_point", "governed_score", "Option"),
    "safeguards": ("lean_path", "required_safeguards", "SAFEGUARDS", "TaskProperties", "WHEN_TO_USE"),
    "causes": ("Cause", "cause_of", "CAUSES", "GENERAL"),
    "hostile": ("call_id_error", "call_id_problem", "duplicate_call_id_error", "not_a_call_error", "shown_call_id",
                "shown_name", "unknown_tool_error"),
    "tool_choice": ("declaration_words", "pick_tool", "ToolPick"),
})
