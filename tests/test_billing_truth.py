"""Chapter 05: a billing service that stays up and tells the truth: it comes back when it dies, a
client never takes a proxy's answer for the service's, and on a hub it knows who asks."""
from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler

import psutil
import pytest
from processes import reply, serving

from course.worlds import KEY, ORDER, SERVICE_HEADER, BillingClient, start
from toolkit.kernel import Status, ToolFailure


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(client: BillingClient) -> bool:
    try:
        client.invoices()
        return True
    except ToolFailure:
        return False


def test_a_killed_service_is_reaped_and_answers_again_under_its_supervisor(tmp_path):
    """SIGKILL used to leave a zombie and 503s until the hub stopped; the supervisor reaps it and
    starts it again."""
    port = free_port()
    command = [sys.executable, "-m", "course.worlds.billing_http", "serve",
               "--db", str(tmp_path / "b.db"), "--port", str(port), "--honour-keys", "--restart"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    with subprocess.Popen(command, **pipes) as supervisor:
        try:
            assert supervisor.stdout.readline().strip() == f"billing listening on 127.0.0.1:{port}"
            client = BillingClient(port, timeout=10)
            made = client.create_invoice(dict(ORDER))
            (first,) = psutil.Process(supervisor.pid).children()
            first.send_signal(signal.SIGKILL)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                children = psutil.Process(supervisor.pid).children()
                if children and children[0].pid != first.pid and answers(client):
                    break
                time.sleep(0.1)
            else:
                pytest.fail("the killed service did not answer again within 60 s")
            assert not psutil.pid_exists(first.pid), "the killed service was reaped (no zombie)"
            (second,) = psutil.Process(supervisor.pid).children()
            assert client.find(KEY) == {**made, "replayed": False}, "the same books after it"
            assert client.create_invoice(dict(ORDER))["invoice_id"] == made["invoice_id"]
            supervisor.send_signal(signal.SIGTERM)            # a hub stops its service so
            assert supervisor.wait(30) == 0
            assert not psutil.pid_exists(second.pid), "stopping the supervisor stops the service"
            assert "starting it again" in supervisor.stderr.read()
        finally:
            if supervisor.poll() is None:
                for child in psutil.Process(supervisor.pid).children():
                    child.kill()
                supervisor.kill()
                supervisor.wait(10)


def forwarding_then_503(port: int) -> type[BaseHTTPRequestHandler]:
    """A proxy like the hub's: it forwards the request, loses the answer, and says 503 itself."""

    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            upstream = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            upstream.request("POST", self.path.removeprefix("/v1"), body=body,
                             headers={"Content-Type": "application/json"})
            assert upstream.getresponse().status == 201      # the service committed the invoice
            upstream.close()
            reply(self, 503, b'{"error": "Service Unavailable"}')   # and the proxy answers

        def log_message(self, *args: object) -> None:
            return

    return Proxy


def test_a_proxy_503_after_a_commit_is_an_unknown_outcome(tmp_path, monkeypatch):
    for name in ("JUPYTERHUB_API_TOKEN", "COURSE_ADMIN_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with start(tmp_path / "b.db", honour_keys=True) as service:
        direct = BillingClient(service.port, timeout=10)
        with serving(forwarding_then_503(service.port)) as url:
            with pytest.raises(ToolFailure) as lost:
                BillingClient(url=url, timeout=10).create_invoice(dict(ORDER))
        assert lost.value.status is Status.TIMEOUT and "unknown" in lost.value.message
        assert "nothing was created" not in lost.value.message
        assert direct.find(KEY)["invoice_id"] == "INV-9", "the invoice the 503 hid exists"
        connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=10)
        connection.request("GET", "/nowhere")
        answer = connection.getresponse()
        assert (answer.status, answer.getheader(SERVICE_HEADER)) == (404, "billing"), \
            "the service marks its errors too"
        connection.close()


#: What a scripted hub says about each token (the shape of JupyterHub's GET /hub/api/user).
MODELS = {
    "token-ada": {"kind": "user", "name": "ada", "admin": False,
                  "scopes": ["access:services!service=billing", "read:users:name!user=ada"]},
    "token-bo": {"kind": "user", "name": "bo", "admin": False,
                 "scopes": ["access:services!service=billing"]},
    "token-cy": {"kind": "user", "name": "cy", "admin": False,
                 "scopes": ["read:users:name!user=cy"]},
    "token-admin": {"kind": "service", "name": "course-admin",
                    "scopes": ["access:services", "admin:users"]},
}


class ScriptedHub(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        token = self.headers.get("Authorization", "").removeprefix("token ")
        if self.path.endswith("/user") and token in MODELS:
            return reply(self, 200, json.dumps(MODELS[token]).encode())
        reply(self, 403, b'{"status": 403, "message": "Forbidden"}')

    def log_message(self, *args: object) -> None:
        return


def test_on_a_hub_the_service_knows_who_asks(tmp_path):
    """Tags come from the token's owner, a student lists their own, the admin all, and without a
    valid token nothing is served."""
    from jupyterhub.services.auth import HubAuth

    from course.worlds import BillingServer, BillingService

    with serving(ScriptedHub) as hub_api:
        auth = HubAuth(api_url=hub_api, api_token="service-token", cache_max_age=0,
                       access_scopes={"access:services", "access:services!service=billing"})
        books = BillingService(tmp_path / "b.db", honour_keys=True)
        with BillingServer(books, 0, "/services/billing/", hub_auth=auth) as server:
            url = f"http://127.0.0.1:{server.port}/services/billing/"
            ada, bo, admin = (BillingClient(url=url, token=f"token-{who}")
                              for who in ("ada", "bo", "admin"))
            assert ada.create_invoice(dict(ORDER))["student"] == "ada"
            posing = BillingClient(url=url, token="token-bo", student="ada")   # bo says he is ada
            bos = {**ORDER, "order_id": "order-432", "idempotency_key": "key-bo"}
            assert posing.create_invoice(bos)["student"] == "bo"
            with pytest.raises(ToolFailure) as taken:                 # ada's key, ada's order
                bo.create_invoice(dict(ORDER))
            assert (taken.value.status, taken.value.reason) == (Status.REJECTED,
                                                                "idempotency_conflict")
            assert "INV-9" not in taken.value.message, "nothing of ada's invoice shows"
            assert [i["student"] for i in ada.invoices()] == ["ada"]
            assert [i["student"] for i in bo.invoices()] == ["bo"]
            assert [i["student"] for i in admin.invoices()] == ["ada", "bo"]
            assert bo.find(KEY) is None, "another student's key is not found"
            assert admin.find(KEY)["student"] == "ada"
            for token in ("", "forged", "token-cy"):     # none, unknown, a user without access
                for path in ("/invoices", "/services/billing/invoices", "/"):
                    for method in ("GET", "POST"):
                        connection = http.client.HTTPConnection("127.0.0.1", server.port,
                                                                timeout=10)
                        headers = {"Authorization": f"token {token}"} if token else {}
                        body = json.dumps(ORDER) if method == "POST" else None
                        connection.request(method, path, body=body, headers=headers)
                        answer = connection.getresponse()
                        marked = (answer.status, answer.getheader(SERVICE_HEADER))
                        assert marked == (403, "billing"), (token, method, path)
                        assert json.loads(answer.read())["errors"][0]["code"] == "forbidden"
                        connection.close()
            with pytest.raises(ToolFailure) as refused:
                BillingClient(url=url, token="forged").create_invoice(dict(ORDER))
            assert refused.value.status is Status.REJECTED and refused.value.reason == "forbidden"
            assert len(admin.invoices()) == 2, "refused requests created nothing"
