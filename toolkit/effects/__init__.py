"""Effects that must survive (chapters 05-07): the ledger rule, retries, timeouts, records, audit, metrics.

Each name below is defined in the module it is listed under; that module loads on first use.
"""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "audit": ("AuditLog", "GENESIS", "run_audited", "Story", "Verification"),
    "backoff": ("Action", "Jitter", "NEVER_RETRY", "plan", "retry_verdict", "RetryController", "RetryDecision",
                "RetryPolicy", "RetryState", "run_with_retries", "step", "Try", "walk"),
    "ledger": ("Answer", "canonical_json", "check_arguments", "check_key", "connect", "decode_result",
               "encode_result", "fingerprint", "invoke", "Ledger", "LedgerStatus", "MemoryLedger", "SqliteLedger",
               "transaction"),
    "metrics": ("Billing", "BlindRetry", "CallRow", "drift", "invoice_contract", "MALFORMED", "measure",
                "MetricsReport", "Rate", "rows_from_attempts", "rows_from_audit", "simulate_log", "Simulation"),
    "records": ("argument_summary", "ExecutionRecord", "FINAL", "FROM_STATUS", "IllegalTransition", "open_record",
                "RecordState", "Tick", "Transition", "TRANSITIONS"),
    "timeouts": ("classify_retry", "COMPENSATION", "Compensation", "compensation_table", "create_issue_illustration",
                 "IssueTracker", "RecordUnavailable", "RemoteTimeout", "RetryKind", "TimeoutDecision",
                 "TimeoutRuntime"),
})
