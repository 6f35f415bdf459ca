"""File tools (chapters 01 and 03): edit_file, exports and import claims.

Each name below loads its module on first use (``toolkit._exports``)."""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "claims": ("check_claim", "check_imports", "import_claims", "ImportClaim", "introduced_claims"),
    "edit_file": ("edit_file_contract", "EDIT_FILE_SCHEMA", "make_edit_file", "module_name",
                  "resolve_in_workspace", "sha256_bytes", "unique_offset"),
    "exports": ("exported_names", "Exports", "find_module", "make_inspect_exports", "read_exports", "RULE_ALL", "RULE_PUBLIC", "workspace_modules"),
})
