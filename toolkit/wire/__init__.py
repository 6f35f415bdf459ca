"""Calls on the wire (chapter 08): streamed fragments, vendor formats, pairing and scheduling."""
from toolkit.wire.scheduler import (canonical, Execute, Footprint, naive_pairing, pair_results, Plan, PlannedCall,
    resources, RoundReport, run_plan, run_round, schedule, Timing, verify)
from toolkit.wire.streaming import (anthropic_stream, AnthropicStream, Assembler, COMPLETE, CUT, frames,
    openai_stream, OpenAIStream, Preview, SKETCH_FRAMES, SSEDecoder, SSEEvent, StreamBroken)
from toolkit.wire.vendors import (anthropic_assistant_message, anthropic_calls, anthropic_tool,
    anthropic_tool_results, check_conversation, fixture, fixture_names, id_problem, IdMap, mcp_annotations,
    mcp_call, mcp_request, mcp_response, mcp_tool, openai_assistant_message, openai_calls, openai_tool,
    openai_tool_messages, Refusal, result_text, strict_problems, tools_for, VENDORS)
