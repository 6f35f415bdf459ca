"""Calls on the wire (chapters 01 and 08): stream framing, vendor formats, pairing, scheduling.

Each name below loads its module on first use (``toolkit._exports``)."""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "ids": ("id_problem", "VENDORS"),
    "pairing": ("check_conversation", "pair_results", "pairing_problems", "round_failure",
                "round_pointer", "verify"),
    "rounds": ("Execute", "RoundReport", "run_plan", "run_round", "Timing"),
    "sse": ("SSEDecoder", "SSEEvent", "StreamBroken"),
    "vendor_messages": ("anthropic_assistant_message", "anthropic_calls", "anthropic_tool_results", "mcp_call", "mcp_request", "mcp_response", "openai_assistant_message", "openai_calls", "openai_tool_messages", "result_text"),
    "vendor_streams": ("anthropic_stream", "AnthropicStream", "openai_stream", "OpenAIStream"),
    "vendors": ("anthropic_tool", "mcp_annotations", "MCP_HINTS", "mcp_tool", "openai_tool", "strict_problems", "tools_for"),
})
