"""Chapter 05: the billing service's client: what each failure says about whether an invoice exists.

The chapter's timeout is only honest if the client tells three cases apart.
The service answered and refused (nothing was created: change the arguments);
nothing was created and a retry may work (the service is not listening, or it
answered that it is busy); the request went out and no answer came back (the
outcome is unknown: ask with the same key before anything else). Arguments
that cannot even be encoded are refused here, before a socket is opened.

Only an answer the service gives itself says anything about the outcome: the
service marks each one (the ``X-Billing-Service`` header). An answer without
that mark, a hub proxy's 502/503/504 for a service that died after it
committed, is treated like no answer at all: the outcome is unknown.

By default the client talks to a port on 127.0.0.1; given a ``url`` (the
class hub's ``http://127.0.0.1:8000/services/billing/``) it talks to that
address and path instead, showing a hub token: ``token``, or else the one the
hub gives a student's kernel (``JUPYTERHUB_API_TOKEN``), or else the
instructor's ``COURSE_ADMIN_TOKEN``. Given a ``student``, every invoice it
creates asks to be tagged with that name (a service without a hub honours it;
a hub's service tags the token's owner instead).
"""
from __future__ import annotations

import http.client
import json
import os
from typing import Any
from urllib.parse import quote, urlsplit

from toolkit.kernel import Status, ToolFailure
from course.worlds import LOOPBACK, SERVICE_HEADER, STUDENT_HEADER

#: Where a client given a ``url`` finds its hub token, first found first: a student's kernel, then
#: the instructor.
TOKEN_VARIABLES = ("JUPYTERHUB_API_TOKEN", "COURSE_ADMIN_TOKEN")


class BillingClient:
    """Talks to a billing service on 127.0.0.1 (or at ``url``).

    ``create_invoice`` returns the invoice, or raises ``ToolFailure`` that
    says what is known about the outcome:

    * rejected: the service answered and refused, or the arguments could not
      even be sent (nothing was created);
    * recoverable: nothing was created and a retry may work: the service is
      not listening (nothing was sent), or it answered that it is busy or failed;
    * timeout: the request was sent but no answer came back from the service
      itself (none at all, a reset, or an answer without the service's mark):
      the outcome is unknown: ask with the same key before anything else.
    """

    def __init__(self, port: int | None = None, timeout: float = 5.0, *, url: str | None = None,
                 student: str | None = None, token: str | None = None):
        if url is None:
            self.scheme, self.host, self.base = "http", LOOPBACK, ""
            self.port = int(port or 0)
        else:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"a billing URL is http(s)://host[:port]/path, not {url!r}")
            self.scheme, self.host, self.base = parts.scheme, parts.hostname, parts.path.rstrip("/")
            self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.timeout, self.student = timeout, student or ""
        found = (os.environ.get(name, "").strip() for name in TOKEN_VARIABLES if url is not None)
        self.token = token or next((value for value in found if value), "")

    @property
    def url(self) -> str:
        """The service's address, as this client reaches it."""
        return f"{self.scheme}://{self.host}:{self.port}{self.base}/"

    def _connection(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=self.timeout)

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        """The service's own answer: its status and JSON body. No answer from the service itself
        is a ``ToolFailure``: unreachable (nothing was sent) or timeout (sent; outcome unknown)."""
        try:
            data = None if body is None else json.dumps(body, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError):
            raise ToolFailure(Status.REJECTED, "invalid_json",
                              "the arguments cannot be sent as JSON; nothing was sent") from None
        connection = self._connection()
        headers = {"Content-Type": "application/json"}
        if self.student and body is not None:
            headers[STUDENT_HEADER] = quote(self.student, safe="")
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        try:
            try:
                connection.connect()
            except OSError:
                raise ToolFailure(Status.RECOVERABLE_FAILURE, "unreachable",
                                  "the billing service is not listening; nothing was sent") from None
            try:
                connection.request(method, self.base + path, body=data, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException):
                raise ToolFailure(Status.TIMEOUT, "timeout",
                                  "the request was sent but no answer came back; the outcome is unknown") from None
            if response.getheader(SERVICE_HEADER) != "billing":    # a proxy answered, not billing
                raise ToolFailure(Status.TIMEOUT, "timeout",
                                  f"the request was sent and the answer ({response.status}) "
                                  "did not come from the billing service; the outcome is unknown")
            try:
                answer = json.loads(raw or b"{}")
            except ValueError:
                answer = {}
            return response.status, answer if isinstance(answer, dict) else {}
        finally:
            connection.close()

    def create_invoice(self, arguments: dict) -> dict[str, Any]:
        status, body = self._request("POST", "/invoices", arguments)
        error = (body.get("errors") or [{}])[0] if status >= 400 else {}
        if status in (500, 503):
            raise ToolFailure(Status.RECOVERABLE_FAILURE, error.get("code", "busy"),
                              error.get("message", "billing could not serve the request; nothing was created"))
        if status >= 400:
            raise ToolFailure(Status.REJECTED, error.get("code", "rejected"), error.get("message", "refused"))
        if "invoice_id" not in body:
            raise ToolFailure(Status.TIMEOUT, "timeout", "billing's answer carried no invoice; the outcome is unknown")
        return body

    def find(self, key: str) -> dict[str, Any] | None:
        status, body = self._request("GET", "/invoices?idempotency_key=" + quote(key, safe=""))
        return body if status == 200 else None

    def invoices(self) -> list[dict[str, Any]]:
        """The invoices this caller may see (on a hub: a student's own, the instructor's all)."""
        status, body = self._request("GET", "/invoices")
        if status != 200:
            error = (body.get("errors") or [{}])[0]
            raise ToolFailure(Status.REJECTED, error.get("code", "refused"),
                              error.get("message", "refused"))
        return body.get("invoices", [])


__all__ = ["BillingClient"]
