"""Chapter 09: the official SDK stream helpers beside the course's assembler, on the same recorded streams.

Both SDKs ship a stream helper that gathers a streamed reply into a final
message (``client.messages.stream`` for Anthropic,
``client.chat.completions.stream`` for OpenAI). They are built to show text
as it arrives, and they hand back whatever they have gathered. On awkward
streams that is not a call a host may run:

=================================  ==========================================  ================================
recorded stream                    the SDK helper returns                      the course's assembler
=================================  ==========================================  ================================
Anthropic stream cut mid-call      a partial message, ``stop_reason`` None,    refuses the call
                                   the unfinished input dropped, no error      (``stream_incomplete``)
Anthropic ``max_tokens`` stop      the last block closed, its input missing    refuses every call
                                   fields, no error                            (``stream_incomplete``)
OpenAI server repeating id, name   ``read_fileread_fileread_file`` and the     one ``read_file`` call
                                   ids joined
OpenAI stream cut, non-strict      the raw partial string ``{"path": "src/co`` refuses the call
=================================  ==========================================  ================================

Each helper runs on the official client, served the recording through the
SDK's own mock transport (``httpx2.MockTransport``), so these are the SDKs'
answers, not a description of them.
"""
from __future__ import annotations

from typing import Any

from toolkit.kernel import ToolCall
from toolkit.live import Endpoint, make_client
from course.worlds import fixture
from toolkit.wire import anthropic_stream, openai_stream
from toolkit._ids import IdMap
from toolkit.kernel import Refusal

#: (case, vendor, recorded stream) shown side by side in the chapter.
CONTRAST_CASES = (
    ("Anthropic stream cut mid-call", "anthropic", "anthropic_stream_cut.txt"),
    ("Anthropic max_tokens stop", "anthropic", "anthropic_stream_max_tokens.txt"),
    ("OpenAI server repeating id and name", "openai", "openai_stream_repeats.txt"),
    ("OpenAI stream cut, non-strict tools", "openai", "openai_stream_cut.txt"),
)
_TOOL = {"type": "object", "properties": {"path": {"type": "string"}}}


def _streaming_client(vendor: str, text: str) -> Any:
    import httpx2

    def answer(request: Any) -> Any:
        return httpx2.Response(200, content=text.encode("utf-8"), headers={"content-type": "text/event-stream"})
    base = "http://recorded.invalid/v1" if vendor == "openai" else "http://recorded.invalid"
    return make_client(Endpoint(vendor, "recorded-model", base, "recorded"),
                       http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))


def anthropic_helper(text: str) -> dict[str, Any]:
    """What ``messages.stream(...).get_final_message()`` returns for a recorded stream (or what it raised)."""
    client = _streaming_client("anthropic", text)
    try:
        with client.messages.stream(model="recorded-model", max_tokens=1024,
                                    messages=[{"role": "user", "content": "read the config"}],
                                    tools=[{"name": "read_file", "input_schema": _TOOL}]) as stream:
            for _ in stream:
                pass
            message = stream.get_final_message()
    except Exception as exc:        # the contrast reports what the helper did, raising included
        return {"raised": type(exc).__name__, "stop_reason": None, "calls": []}
    calls = [{"id": b.id, "name": b.name, "input": b.input} for b in message.content if b.type == "tool_use"]
    return {"raised": None, "stop_reason": message.stop_reason, "calls": calls}


def openai_helper(text: str) -> dict[str, Any]:
    """What ``chat.completions.stream(...).get_final_completion()`` returns (non-strict tools), or what it raised."""
    client = _streaming_client("openai", text)
    try:
        with client.chat.completions.stream(model="recorded-model",
                                            messages=[{"role": "user", "content": "read the config"}],
                                            tools=[{"type": "function", "function": {"name": "read_file",
                                                                                     "parameters": _TOOL}}]) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
    except Exception as exc:        # e.g. LengthFinishReasonError on finish_reason "length"
        return {"raised": type(exc).__name__, "stop_reason": None, "calls": []}
    choice = completion.choices[0]
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in choice.message.tool_calls or []]
    return {"raised": None, "stop_reason": choice.finish_reason, "calls": calls}


def assembler_reading(vendor: str, text: str) -> list[str]:
    """The course's reading of the same stream: ``call name(arguments)`` or ``refused name: code`` per item."""
    read = openai_stream if vendor == "openai" else anthropic_stream
    out = []
    for item in read(text, IdMap()):
        if isinstance(item, ToolCall):
            out.append(f"call {item.name}({item.arguments})")
        elif isinstance(item, Refusal):
            out.append(f"refused {item.name or '?'}: {item.code}")
    return out


def helper_contrast() -> list[dict[str, Any]]:
    """One row per case: what the SDK helper returned and what the assembler did with the same bytes."""
    rows = []
    for case, vendor, name in CONTRAST_CASES:
        text = fixture(name)
        helper = openai_helper(text) if vendor == "openai" else anthropic_helper(text)
        rows.append({"case": case, "vendor": vendor, "recording": name, "helper": helper,
                     "assembler": assembler_reading(vendor, text)})
    return rows


def contrast_lines() -> list[str]:
    """The contrast as short printable lines (what the chapter shows)."""
    lines = []
    for row in helper_contrast():
        helper = row["helper"]
        got = f"raised {helper['raised']}" if helper["raised"] else (
            f"stop_reason={helper['stop_reason']}, calls="
            + "; ".join(f"{c['name']}({c.get('input', c.get('arguments'))!r})" for c in helper["calls"]))
        lines += [row["case"], f"  SDK helper: {got}", f"  assembler:  {'; '.join(row['assembler'])}"]
    return lines


__all__ = ["CONTRAST_CASES", "anthropic_helper", "assembler_reading", "contrast_lines", "helper_contrast",
           "openai_helper"]
