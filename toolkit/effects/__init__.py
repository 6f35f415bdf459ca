"""Effects that must survive (chapters 05-07): the ledger rule, retries, timeouts, records, audit, metrics."""
from toolkit.effects.audit import AuditLog, GENESIS, run_audited, Story, Verification
from toolkit.effects.backoff import (Action, idempotency_key, Jitter, NEVER_RETRY, plan, retry_verdict,
    RetryController, RetryDecision, RetryPolicy, RetryState, run_with_retries, step, Try, walk)
from toolkit.effects.ledger import (Answer, canonical_json, check_arguments, check_key, connect, decode_result,
    encode_result, fingerprint, invoke, Ledger, LEDGER_SCHEMA, LedgerStatus, MAX_DEPTH, MAX_KEY_LENGTH,
    MemoryLedger, SqliteLedger, transaction, Y)
from toolkit.effects.metrics import (Billing, BlindRetry, CallRow, drift, FAILED_STATES, invoice_contract,
    MALFORMED, measure, MetricsReport, Rate, rows_from_attempts, rows_from_audit, simulate_log, Simulation)
from toolkit.effects.records import (argument_summary, ExecutionRecord, FINAL, FROM_STATUS, IllegalTransition,
    Listener, open_record, RecordState, S, Tick, Transition, TRANSITIONS)
from toolkit.effects.timeouts import (classify_retry, Compensation, COMPENSATION, compensation_table,
    create_issue_illustration, ISSUE_KEY, IssueTracker, RecordUnavailable, RemoteTimeout, RetryKind,
    TimeoutDecision, TimeoutRuntime, TITLE)
