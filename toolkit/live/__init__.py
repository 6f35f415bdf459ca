"""A real model at the boundary (chapter 09): the official SDKs driving the same loop, offline on recordings.

Each name below is defined in the module it is listed under; that module loads on first use."""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "cli": ("command_parser", "command_status", "live_command", "open_clients"),
    "conversation": ("AnthropicChat", "chat_for", "ModelReply", "OpenAIChat"),
    "endpoint": ("Endpoint", "endpoint_from", "failure_line", "is_transient", "LIVE_VENDORS",
                 "LiveConfigError", "make_client", "retry_after"),
    "local": ("for_llama_cpp", "LOCAL_MODEL", "local_model", "packaged_model", "TOOL_CHOICES",
              "with_tool_choice"),
    "replay": ("check_body", "recording", "recording_names", "replay_server", "ReplayServer",
               "sse_body"),
    "session": ("ask_with_budget", "LiveRound", "LiveRun", "LiveRunError", "ModelPolicy", "run_task",
                "sdk_failure", "verdict_of"),
})
