"""Chapter 09: recorded responses, served to the official SDK through its own mock HTTP transport.

Offline, the chapter runs the very client code a live run uses: ``httpx2.MockTransport`` answers the
SDK's request with the next recorded body. The recordings (``toolkit/live/recordings``) are written
by hand in each vendor's documented wire format, never captured from a model; ``recording`` checks
every body against the SDK's own types before it is served, and ``ReplayServer`` keeps every request
body the SDK sent, so a test can read exactly what went back to the model."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from toolkit._formats import imported
from toolkit.live import Endpoint, LiveConfigError, make_client

_PIECE = 16   # characters of arguments per streamed fragment


def recording_names() -> list[str]:
    """The recorded conversations shipped with the course."""
    return sorted(p.name[:-5] for p in (files("toolkit.live") / "recordings").iterdir() if p.name.endswith(".json"))


def check_body(vendor: str, body: Any) -> None:
    """Raise ``pydantic.ValidationError`` unless ``body`` is a valid response for the vendor's SDK."""
    kind = (imported("openai.types.chat").ChatCompletion if vendor == "openai"
            else imported("anthropic.types").Message)     # the first check imports the SDK
    kind.model_validate(body)


def recording(name: str, vendor: str) -> dict[str, Any]:
    """A recorded conversation: ``{"about", "task", "responses"}``, every response checked against the SDK types."""
    if name not in recording_names():
        raise LiveConfigError(f"no recording named {name!r}: choose one of {', '.join(recording_names())}")
    data = json.loads((files("toolkit.live") / "recordings" / f"{name}.json").read_text(encoding="utf-8"))
    for body in data[vendor]:
        check_body(vendor, body)
    return {"about": data["about"], "task": data["task"], "responses": data[vendor]}


def _pieces(text: str) -> list[str]:
    return [text[i:i + _PIECE] for i in range(0, len(text), _PIECE)] or [""]


def _sse(data: dict[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


def _openai_events(body: dict[str, Any]) -> str:
    choice = body["choices"][0]
    message = choice["message"]
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    out = [chunk({"role": "assistant", "content": message.get("content") or ""})]
    for n, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": n, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
                for piece in _pieces(call["function"]["arguments"])]
    out.append(chunk({}, choice["finish_reason"]))
    return "".join(out) + "data: [DONE]\n\n"


def _anthropic_events(body: dict[str, Any]) -> str:
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    out = [_sse({"type": "message_start", "message": start}, "message_start")]
    for n, block in enumerate(body["content"]):
        if block["type"] == "text":
            opened, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": t}
                                                             for t in _pieces(block["text"])]
        else:
            opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": t} for t in _pieces(json.dumps(block["input"]))]
        out.append(_sse({"type": "content_block_start", "index": n, "content_block": opened}, "content_block_start"))
        out += [_sse({"type": "content_block_delta", "index": n, "delta": d}, "content_block_delta") for d in deltas]
        out.append(_sse({"type": "content_block_stop", "index": n}, "content_block_stop"))
    out.append(_sse({"type": "message_delta", "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                     "usage": {"output_tokens": body["usage"]["output_tokens"]}}, "message_delta"))
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return "".join(out)


def sse_body(vendor: str, body: dict[str, Any]) -> str:
    """A recorded whole response as the vendor's stream of events (same calls, arguments in fragments)."""
    return _openai_events(body) if vendor == "openai" else _anthropic_events(body)


@dataclass
class ReplayServer:
    """Answers each SDK request with the next recorded body (or raw stream text); keeps every request body."""

    vendor: str
    responses: list[Any]
    requests: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, request: Any) -> Any:
        import httpx2

        try:
            sent = json.loads(request.content or b"{}")
        except ValueError:
            sent = {}
        self.requests.append(sent)
        if len(self.requests) > len(self.responses):
            return httpx2.Response(500, json={"error": {"type": "api_error", "message": "the recording has no "
                                                                                        "more responses"}})
        body = self.responses[len(self.requests) - 1]
        if isinstance(body, str) or sent.get("stream"):
            text = body if isinstance(body, str) else sse_body(self.vendor, body)
            return httpx2.Response(200, content=text.encode("utf-8"), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=body)

    def client(self, model: str = "recorded-model") -> Any:
        """The official SDK client, wired to this server through ``httpx2.MockTransport``."""
        import httpx2

        endpoint = Endpoint(self.vendor, model, "http://recorded.invalid/v1" if self.vendor == "openai"
                            else "http://recorded.invalid", "recorded")
        return make_client(endpoint, http_client=httpx2.Client(transport=httpx2.MockTransport(self)))


def replay_server(name: str, vendor: str) -> ReplayServer:
    """A ``ReplayServer`` for a named recording (its bodies checked against the SDK's types first)."""
    return ReplayServer(vendor, list(recording(name, vendor)["responses"]))
