"""Chapter 09: reaching a model: which vendor, which endpoint, which key, and one clear line when it fails.

The official SDKs (``openai`` for OpenAI and OpenAI-compatible servers such as Ollama, vLLM or
llama.cpp; ``anthropic``) load only here, when a client is asked for, never at ``import toolkit``.
Arguments come first, then ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``; a
local ``base_url`` needs no real key (``"local"``). The SDK never retries (``max_retries=0``): the
host owns the retry budget (``toolkit.live.session``), waiting at least a ``Retry-After``. A missing
key or SDK, or an endpoint out of reach, is a ``LiveConfigError`` with one line, never a traceback.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from toolkit._formats import imported
from toolkit._show import shorten

#: The vendors a live run can speak to.
LIVE_VENDORS = ("openai", "anthropic")
_KEY_VARIABLE = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_OFFICIAL_HOSTS = ("api.openai.com", "api.anthropic.com")


class LiveConfigError(Exception):
    """A live run cannot start or reach its endpoint; ``str(error)`` is one line a student can act on."""


@dataclass(frozen=True)
class Endpoint:
    """Where a live run sends its requests. ``repr`` never shows the key."""

    vendor: str
    model: str
    base_url: str | None = None
    api_key: str = ""

    def __repr__(self) -> str:
        key = "set" if self.api_key else "none"
        return f"Endpoint(vendor={self.vendor!r}, model={self.model!r}, base_url={self.base_url!r}, key={key})"

    @property
    def where(self) -> str:
        return self.base_url or f"the {self.vendor} API"


def endpoint_from(vendor: str, model: str, base_url: str | None = None, api_key: str | None = None,
                  environ: Mapping[str, str] | None = None) -> Endpoint:
    """An ``Endpoint`` from arguments, else the environment; raises ``LiveConfigError`` when it cannot be one."""
    env = os.environ if environ is None else environ
    if vendor not in LIVE_VENDORS:
        raise LiveConfigError(f"unknown vendor {vendor!r}: choose one of {', '.join(LIVE_VENDORS)}")
    if not isinstance(model, str) or not model.strip():
        raise LiveConfigError("no model name: pass --model NAME (the name your endpoint serves)")
    if vendor == "openai" and not base_url:
        base_url = env.get("OPENAI_BASE_URL") or None
    if base_url is not None and not str(base_url).startswith(("http://", "https://")):
        raise LiveConfigError(f"the base URL must start with http:// or https://, got {shorten(str(base_url))!r}")
    key = api_key or env.get(_KEY_VARIABLE[vendor], "")
    if not key and base_url and not any(host in base_url for host in _OFFICIAL_HOSTS):
        key = "local"        # a server on your own machine takes any key
    if not key:
        raise LiveConfigError(f"no API key for {vendor}: set {_KEY_VARIABLE[vendor]} or pass --api-key "
                              "(or point --base-url at a local OpenAI-compatible server)")
    return Endpoint(vendor, model.strip(), base_url, key)


def make_client(endpoint: Endpoint, http_client: Any = None, timeout: float = 60.0) -> Any:
    """The official SDK client for ``endpoint`` (``http_client``: an ``httpx2.Client``, e.g. a mock transport)."""
    options: dict[str, Any] = {"api_key": endpoint.api_key, "max_retries": 0, "timeout": timeout}
    if endpoint.base_url:
        options["base_url"] = endpoint.base_url
    if http_client is not None:
        options["http_client"] = http_client
    try:
        sdk = imported("openai" if endpoint.vendor == "openai" else "anthropic")
    except ImportError:
        raise LiveConfigError(f"the {endpoint.vendor} SDK is not installed: pip install -e .") from None
    return (sdk.OpenAI if endpoint.vendor == "openai" else sdk.Anthropic)(**options)


def failure_line(exc: BaseException, where: str = "the endpoint") -> str:
    """One line for an SDK failure at ``where``: what happened and what to do, never a key or a traceback."""
    kind = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if kind in ("APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout"):
        return f"cannot reach {where}: is the server running and the URL right?"
    if status in (401, 403) or kind in ("AuthenticationError", "PermissionDeniedError"):
        return f"{where} refused the key ({status or kind}): check the API key"
    if status == 404 or kind == "NotFoundError":
        return f"{where} answered 404: check the model name and that the base URL ends in /v1"
    if status == 429 or kind == "RateLimitError":
        return f"{where} is rate limiting this key (429): wait, or check the account's quota"
    if status is not None:
        return f"{where} answered HTTP {status} ({kind})"
    return f"the request to {where} failed: {kind}"


def is_transient(exc: BaseException) -> bool:
    """Whether the host may spend one of its retries on this failure (a dropped connection, 429, 5xx)."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        return status == 429 or status >= 500
    return type(exc).__name__ in ("APIConnectionError", "APITimeoutError")


def retry_after(exc: BaseException) -> float | None:
    """The seconds an HTTP answer's ``Retry-After`` header asks for, or ``None`` (absent, a date, or not a number)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        seconds = float(headers.get("retry-after", "")) if headers is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and 0 <= seconds < float("inf") else None
