"""Effects that must survive (chapters 05-07): the ledger rule, retries, records, audit.

Each name below loads its module on first use (``toolkit._exports``)."""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "audit": ("AuditLog", "run_audited", "Story"),
    "audit_chain": ("against_anchor", "Anchor", "AUDIT_COLUMNS", "AUDIT_SCHEMA", "chain_digest", "chain_key", "check_chain", "GENESIS", "schema_problems", "Verification", "verify_audit_file", "walk_chain"),
    "database": ("as_sent", "busy", "columns", "connect", "dialect", "DIALECTS", "transaction",
                 "URL_VARIABLE"),
    "durable_ledger": ("CLAIM", "DurableLedger", "FIND", "LEDGER_SCHEMA"),
    "leases": ("claim_owner", "existing_answer", "lease_length", "lease_state", "LIVE",
               "settle_row", "SETTLE", "storage_failure"),
    "records": ("ExecutionRecord", "FINAL", "FROM_STATUS", "IllegalTransition", "open_record", "RecordState", "Tick", "Transition", "TRANSITIONS"),
    "retries": ("run_with_retries", "Try"),
    "stored_results": ("decode_result", "encode_result"),
})
