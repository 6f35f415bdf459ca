"""Effects that must survive (chapters 05-07): the ledger rule, retries, timeouts, records, audit, metrics."""
from toolkit.effects.audit import AuditLog, GENESIS, run_audited, Story, Verification
from toolkit.effects.backoff import (Action, Jitter, NEVER_RETRY, plan, retry_verdict, RetryController,
    RetryDecision, RetryPolicy, RetryState, run_with_retries, step, Try, walk)
from toolkit.effects.ledger import (Answer, canonical_json, check_arguments, check_key, connect, decode_result,
    encode_result, fingerprint, invoke, Ledger, LedgerStatus, MemoryLedger, SqliteLedger, transaction)
from toolkit.effects.metrics import (Billing, BlindRetry, CallRow, drift, invoice_contract, MALFORMED, measure,
    MetricsReport, Rate, rows_from_attempts, rows_from_audit, simulate_log, Simulation)
from toolkit.effects.records import (argument_summary, ExecutionRecord, FINAL, FROM_STATUS, IllegalTransition,
    open_record, RecordState, Tick, Transition, TRANSITIONS)
from toolkit.effects.timeouts import (classify_retry, Compensation, COMPENSATION, compensation_table,
    create_issue_illustration, IssueTracker, RecordUnavailable, RemoteTimeout, RetryKind, TimeoutDecision,
    TimeoutRuntime)
