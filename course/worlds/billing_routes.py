"""Chapter 05: the billing service's routes: what it answers, and to whom (a hub's callers, or all).

``application`` is the tornado application ``course.worlds.billing_http``
serves. Every answer the service gives itself is JSON and carries the
``X-Billing-Service`` header, errors included, so a client can tell it from
a proxy's answer. Without ``hub_auth`` everyone may do everything and a POST
may name its student in the ``X-Course-Student`` header. With ``hub_auth`` (a
``jupyterhub.services.auth.HubAuth``, from ``hub_auth_from_env()`` in a hub's service)
the handler is ``HubAuthenticated``: a request without a hub token that holds
access to this service is a 403; an invoice is tagged with the token's owner,
whatever the request says; a caller sees only the invoices tagged with their
name, unless their token holds ``SEE_ALL_SCOPE`` (the hub's admin role does),
and a key another caller used is refused (409), not answered with their invoice.
"""
from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from toolkit.kernel import ToolError
from course.worlds import BillingService

#: The largest request body accepted, in bytes (a larger one is a 413).
MAX_BODY = 64 * 1024
#: The request header naming the student an invoice is made for (percent-encoded text; no hub only).
STUDENT_HEADER = "X-Course-Student"
#: The header on every answer the service gives itself (its value is "billing").
SERVICE_HEADER = "X-Billing-Service"
#: The scope that lets a caller see every student's invoices (the hub's admin role holds it).
SEE_ALL_SCOPE = "admin:users"


def _error_body(code: str, message: str) -> dict[str, Any]:
    return {"errors": [ToolError(code, "$", message, retryable=False).to_dict()]}


_ERRORS = {403: ("forbidden",
                  "a hub token with access to billing is required; nothing was created"),
           404: ("not_found", "no such route"),
           405: ("not_allowed", "this route does not take that method; nothing was created")}


def _handlers(checked: bool) -> tuple[type, type]:
    """The route handler (``checked``: asking the hub who calls) and the 404 handler.

    tornado loads on first use, not with the package; JupyterHub only for a hub's service.
    """
    from tornado import web

    class Answer(web.RequestHandler):
        """Every answer is JSON and carries ``SERVICE_HEADER``, errors included."""

        def set_default_headers(self) -> None:
            self.set_header(SERVICE_HEADER, "billing")
            self.set_header("Content-Type", "application/json")

        def answer(self, status: int, body: dict[str, Any]) -> None:
            self.set_status(status)
            self.finish(json.dumps(body, sort_keys=True))

        def compute_etag(self) -> None:
            return None

        def write_error(self, status_code: int, **kwargs: Any) -> None:
            failed = ("service_error", "the billing service failed; nothing was created")
            code, message = _ERRORS.get(status_code, failed)
            self.finish(json.dumps(_error_body(code, message), sort_keys=True))

    class Missing(Answer):
        def prepare(self) -> None:
            raise web.HTTPError(404)

    class Routes(Answer):
        def initialize(self, billing: BillingService, hub_auth: Any = None) -> None:
            self.billing = billing
            self.caller: dict[str, Any] | None = None     # the token's owner, on a hub

        def sees_all(self) -> bool:
            return self.caller is None or SEE_ALL_SCOPE in self.caller.get("scopes", ())

        def mine(self, invoice: dict[str, Any]) -> bool:
            return self.sees_all() or invoice.get("student") == self.caller["name"]

        def post(self, route: str | None) -> None:
            if route != "invoices":
                raise web.HTTPError(405)
            if len(self.request.body) > MAX_BODY:
                too_large = _error_body("too_large", f"the body must be at most {MAX_BODY} bytes")
                return self.answer(413, too_large)
            if self.caller is None:
                student = unquote(self.request.headers.get(STUDENT_HEADER, ""), errors="replace")
            else:
                student = self.caller["name"]      # who sent it, whatever the request says
            status, body = self.billing.create_invoice(self.request.body, student)
            if status == 200 and not self.mine(body):     # a replay of another caller's key
                return self.answer(409, _error_body("idempotency_conflict", "this idempotency key "
                                                    "was used by someone else; use a new key"))
            self.answer(status, body)

        def get(self, route: str | None) -> None:
            if not route:
                return self.answer(200, {"service": "billing",
                                         "honour_keys": self.billing.honour_keys})
            key = self.get_query_argument("idempotency_key", None)
            if key is None:
                seen = [i for i in self.billing.invoices() if self.mine(i)]
                return self.answer(200, {"invoices": seen})
            found = self.billing.find(key)
            if found and self.mine(found):
                return self.answer(200, found)
            self.answer(404, _error_body("not_found", "no invoice"))

    if not checked:
        return Routes, Missing
    from jupyterhub.services.auth import HubAuthenticated, UserNotAllowed

    class HubRoutes(HubAuthenticated, Routes):
        """The routes for callers the hub vouches for: a token with access to billing, or 403."""

        def initialize(self, billing: BillingService, hub_auth: Any = None) -> None:
            super().initialize(billing)
            self.hub_auth = hub_auth

        async def prepare(self) -> None:
            model = await self.hub_auth.get_user(self, sync=False)
            try:
                self.caller = self.check_hub_user(model) if model else None
            except UserNotAllowed:
                self.caller = None
            if self.caller is None:
                raise web.HTTPError(403)

    return HubRoutes, Missing


def application(billing: BillingService, prefix: str = "", hub_auth: Any = None) -> Any:
    """The tornado application: the routes at / and under ``prefix``; ``hub_auth`` (a ``HubAuth``)
    checks every caller."""
    from tornado import web

    routes, missing = _handlers(hub_auth is not None)
    stem = "/" + prefix.strip("/") if prefix.strip("/") else ""
    options = {"billing": billing, "hub_auth": hub_auth}
    rules = [(rf"{re.escape(base)}(?:/(invoices)?)?", routes, options)
             for base in dict.fromkeys(("", stem))]
    return web.Application(rules, default_handler_class=missing, log_function=lambda handler: None)


def hub_auth_from_env() -> Any:
    """The hub's view of callers, from the environment a hub gives its services (else it fails)."""
    from jupyterhub.services.auth import HubAuth

    auth = HubAuth(cache_max_age=60)
    if not auth.api_token or not auth.api_url:
        raise RuntimeError("--hub-auth needs the hub's environment "
                           "(JUPYTERHUB_API_TOKEN, JUPYTERHUB_API_URL)")
    return auth


__all__ = ["MAX_BODY", "SEE_ALL_SCOPE", "SERVICE_HEADER", "STUDENT_HEADER", "application",
           "hub_auth_from_env"]
