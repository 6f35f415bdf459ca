"""Calls on the wire (chapters 01 and 08): stream framing and assembly, vendor formats, pairing, scheduling.

Each name below is defined in the module it is listed under; that module loads on first use.
"""
from toolkit._exports import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "scheduler": ("canonical", "Contracts", "Execute", "Footprint", "naive_pairing", "pair_results", "Plan",
                  "PlannedCall", "resources", "RoundReport", "run_plan", "run_round", "schedule", "Timing", "verify"),
    "streaming": ("anthropic_stream", "AnthropicStream", "Assembler", "COMPLETE", "CUT", "frames", "openai_stream",
                  "OpenAIStream", "Preview", "SKETCH_FRAMES", "SSEDecoder", "SSEEvent", "StreamBroken"),
    "vendors": ("anthropic_assistant_message", "anthropic_calls", "anthropic_tool", "anthropic_tool_results",
                "check_conversation", "fixture", "fixture_names", "id_problem", "IdMap", "mcp_annotations",
                "mcp_call", "mcp_request", "mcp_response", "mcp_tool", "openai_assistant_message", "openai_calls",
                "openai_tool", "openai_tool_messages", "Refusal", "result_text", "strict_problems", "tools_for",
                "VENDORS"),
})
