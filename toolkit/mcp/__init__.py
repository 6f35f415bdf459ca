"""The contract host over MCP (chapter 09): the course's tools served over MCP, and a host in front of any MCP server.

Each name below is defined in the module it is listed under; that module loads on first use."""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "adoption": ("adopt_tool", "adopted_schema", "hint", "Trust"),
    "connection": ("CALL_SECONDS", "MAX_PAGES", "McpConnection", "START_SECONDS"),
    "remote": ("Approver", "McpHost", "remote_output"),
    "server": ("answer_call", "audit_copy", "build_server", "call_result", "CATALOG", "catalog_tools",
               "LOG_KEEP", "mcp_call_id", "mcp_text", "registration", "serve_stdio", "SERVER_NAME",
               "serving_host", "tool_listing", "without_root", "workspace_roots"),
})
