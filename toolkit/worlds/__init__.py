"""Worlds (scenery for every chapter): the billing fake and service, the crash harness, Agent-427's folder.

Each name below is defined in the module it is listed under; that module loads on first use.
"""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agent427": ("AGENT", "agent427_preferences", "BUILD_SCRIPT", "copy_scenario", "correct_step",
                 "corrected_proposal", "Episode", "episode_host", "EVIDENCE_STEPS", "first_proposal", "format_call",
                 "inspect_exports", "inspect_step", "MODULE", "new_text", "OLD_TEXT", "Proposal", "ProposalHost",
                 "read_build_script", "run_agent427", "SCENARIO", "transcript_lines", "transition", "validate",
                 "ValidatorReport"),
    "billing_service": ("billing_main", "BillingClient", "BillingProcess", "BillingServer", "BillingService",
                        "check_invoice", "default_start_method", "FIRST_NUMBER", "INVOICES_INDEX", "INVOICES_SCHEMA",
                        "issue_invoice", "list_invoices", "LOOPBACK", "MAX_BODY", "open_books", "serve", "start",
                        "trace_sentence"),
    "catalog": ("Books", "CREATE_INVOICE"),
    "crash": ("agent", "crash_matrix", "CRASH_POINTS", "EventLog", "KEY", "matrix_table", "MODES", "ORDER", "race",
              "run_scenario"),
    "deploy": ("accepted_adapter", "compare_adapters", "DEPLOY_ACCEPTED", "deploy_host", "DEPLOY_SETTLED",
               "DEPLOYER", "DeployService", "Rollout", "run_deploy_episode", "rushed_versions", "settled_adapter",
               "table"),
})
