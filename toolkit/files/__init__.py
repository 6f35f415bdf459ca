"""File tools (chapters 01 and 03): path confinement, read_file, edit_file, exports, the open witness.

Each name below is defined in the module it is listed under; that module loads on first use.
"""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "claims": ("check_claim", "check_imports", "import_claims", "ImportClaim", "introduced_claims"),
    "confinement": ("check_lexical", "check_realpath", "confine", "describe_entry", "FileRead", "locate",
                    "open_confined", "read_confined", "Refuse", "stat_entry"),
    "constrained": ("CLOSE", "compare_masking", "effective_required", "generate", "Generation", "Preferences",
                    "SchemaMask", "TokenChoice"),
    "edit_file": ("edit_file_contract", "EDIT_FILE_SCHEMA", "file_sha256", "make_edit_file", "MAX_FILE_BYTES",
                  "module_name", "resolve_in_workspace", "sha256_bytes", "tree_digest", "unique_offset"),
    "exports": ("exported_names", "Exports", "find_module", "make_inspect_exports", "read_exports", "RULE_ALL",
                "RULE_PUBLIC", "workspace_modules"),
    "read_file": ("allowed_extensions", "common_errors", "DESCRIPTION", "EVIDENCE_MATCHES", "existing_file",
                  "make_read_file", "path_guard", "READ_FILE", "READ_FILE_LAYERS", "READ_FILE_SCHEMA",
                  "read_file_switch", "ReadRefused"),
    "refusals": ("AUTHORIZATION_KINDS", "HINTS", "MAX_BYTES", "MAX_NAME_BYTES", "MAX_PATH_BYTES", "PathRefused",
                 "RUNG_NAMES", "shown"),
    "witness": ("files_opened", "Open", "opened_outside", "recording_opens"),
    "workspace": ("RungStep", "Workspace"),
})
