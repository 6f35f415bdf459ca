"""Worlds (scenery for every chapter): the billing fake and service, the crash harness, Agent-427's folder.

Each name below is defined in the module it is listed under; that module loads on first use.
"""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agent427": ("AGENT", "agent427_preferences", "BUILD_SCRIPT", "copy_scenario", "corrected_proposal",
                 "episode_host", "EVIDENCE_STEPS", "first_proposal", "inspect_exports", "MODULE", "new_text",
                 "OLD_TEXT", "Proposal", "ProposalHost", "read_build_script", "SCENARIO", "scenario_copy",
                 "transition", "validate", "ValidatorReport"),
    "agent427_episode": ("correct_step", "Episode", "format_call", "inspect_step", "run_agent427",
                         "transcript_lines"),
    "agent427_switches": ("agent427_scenario", "proposal_for", "READER"),
    "billing_client": ("BillingClient",),
    "billing_http": ("billing_main", "BillingProcess", "BillingServer", "IDLE_TIMEOUT", "LOOPBACK", "MAX_BODY",
                     "MAX_CONNECTIONS", "serve", "start"),
    "billing_service": ("BillingService", "check_invoice", "FIRST_NUMBER", "INVOICES_INDEX", "INVOICES_SCHEMA",
                        "issue_invoice", "list_invoices", "MAX_AMOUNT", "open_books", "trace_sentence"),
    "books": ("Books", "LOG_FAULTS"),
    "catalog": ("CREATE_INVOICE", "invoice_contract"),
    "children": ("default_start_method", "process_context", "reap"),
    "crash": ("AGENT_TEXT", "crash_matrix", "guarded_run", "GuardedRun", "matrix_table", "run_scenario"),
    "crash_agents": ("agent", "CRASH_POINTS", "EventLog", "KEY", "MODES", "ORDER"),
    "demo_tree": ("attempt", "Attempted", "demo_workspace", "DemoRequest", "DemoTree", "FILES", "HOSTILE",
                  "LINK_OUT", "REQUESTS", "SECRETS"),
    "deploy": ("accepted_adapter", "compare_adapters", "DEPLOY_ACCEPTED", "deploy_host", "DEPLOY_SETTLED",
               "DEPLOYER", "DeployService", "Rollout", "run_deploy_episode", "rushed_versions", "settled_adapter",
               "table"),
    "exercise_ledger": ("attempts", "crash_counts", "find", "KILLED", "LEDGER_TABLE", "RACE_PAUSE", "race_requests"),
    "invoice_log": ("BILLING_AGENT", "BlindRetry", "drift", "log_books", "MALFORMED", "simulate_log", "Simulation"),
    "issue_tracker": ("create_issue_illustration", "IssueTracker"),
    "ledger_race": ("race",),
})
