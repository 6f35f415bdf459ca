"""A class on one hub: deploy/jupyterhub_config.py, five students, one shared billing service, the dashboard.

The test starts JupyterHub from deploy/ on 127.0.0.1 (free ports, a state folder of its own,
Jupyter's folders isolated), creates five students through the hub's API with the admin token,
starts their servers at once, and runs chapter 05's class experiment in each student's kernel
through the kernel websocket under /user/<name>/: three with keys off, two with keys on. The
shared service must then count one duplicate for each student without keys and none for those
with keys, and the instructor's dashboard (deploy/class_dashboard.ipynb, run with nbclient) must
say the same. Then the service must know who asks: no hub token, a forged one, or a request on
its own port without one is refused; an invoice one student tags as another's is the sender's; a
student lists only their own invoices and the admin token all. A SIGKILLed service must be reaped
and answer again. Then every server, the hub and the service stop, and no process they started is
left. The cycle time and each student's memory (server + kernel RSS) are printed (pytest -s).
Those five run in the shared mode (every server as the user who started the hub).

Students apart (as root): the same cycle with two throwaway students, one Unix user each, the
course laid out where every user can run it (tests/hub_students.py). Each server and kernel runs
as its student; the first student, in their own kernel, tries to read the other's note (in a home
of mode 0700), the hub's state (database, cookie secret, proxy token, billing books), the
environments of the hub, the proxy, the service and the other's processes: every try is a
PermissionError. With their own token the hub's API, the other's server (through the proxy and
on its own port) and the proxy's API answer 403. The admin token is on no command line and in no
environment or file the student can read (sought by its SHA-256). An invoice they tag as the
other's is theirs, they list only their own, and the dashboard shows both. Neither root nor a
name adduser refuses can log in. Afterwards the students, their homes and their files are gone.

The short tests first: the experiment off the hub (a local service, the same lines every run),
the service under the hub's prefix with student tags, the tally, the dashboard's watch, and the
configuration's own checks (both modes, the student's folder copied once).
"""
from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import nbformat
import psutil
import pytest
import requests
import websocket
from hub_students import Throwaway, course_for_everyone, hub_may_isolate, throwaway_students
from nbclient import NotebookClient
from processes import live_children

from toolkit.kernel import Status, ToolFailure
from course.worlds import BillingClient
from course.worlds import BillingServer, SERVICE_HEADER
from course.worlds import BillingService, open_books
from course.worlds import LOCAL_WHERE, class_billing_url, run_class_experiment
from course.worlds import UNTAGGED, CountsWatch, tally

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "deploy" / "jupyterhub_config.py"
DASHBOARD = ROOT / "deploy" / "class_dashboard.ipynb"
STUDENTS = {"ada": False, "bram": False, "chen": False, "dara": True, "emil": True}   # name -> keys on
ADMIN_TOKEN = uuid.uuid4().hex
PASSWORD = uuid.uuid4().hex[:12]
MIB = 1024 * 1024
#: The longest a student's kernel may work on one request before the test gives up on it.
KERNEL_WORK_SECONDS = 600


# ------------------------------------------------------------------ off the hub, and the parts

def test_off_the_hub_the_experiment_runs_against_a_local_service_and_says_so(monkeypatch, tmp_path):
    monkeypatch.delenv("COURSE_BILLING_URL", raising=False)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert class_billing_url() is None
    threads_before = set(threading.enumerate())
    children_before = set(live_children())   # e.g. multiprocessing's resource tracker, started by an earlier test
    off, on = run_class_experiment(keyed=False), run_class_experiment(keyed=True)
    assert set(live_children()) <= children_before and set(threading.enumerate()) <= threads_before and not any(tmp_path.iterdir()), \
        "the local service, its folder and the agent's ledger are gone when the call returns"
    assert (off.where, off.student, off.order_id, off.invoices, off.duplicates) == \
        (LOCAL_WHERE, "you", "order-431", 2, 1)
    assert (on.where, on.student, on.invoices, on.duplicates, on.invoice_ids) == (LOCAL_WHERE, "you", 1, 0, ("INV-9",))
    assert off.lines() == run_class_experiment(keyed=False).lines(), "off the hub the same lines every run"
    assert off.invoice_ids == ("INV-9", "INV-10") and "(1 duplicate)" in off.lines()[-1]
    assert any("ask billing first" in line for line in on.lines()) and "no duplicate" in on.lines()[-1]
    assert not any(ch.isdigit() for ch in off.where), "no ports or paths in what a student prints"


def test_the_hub_names_the_student_and_the_service(monkeypatch):
    monkeypatch.setenv("COURSE_BILLING_URL", " http://127.0.0.1:9/services/billing/ ")
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    assert class_billing_url() == "http://127.0.0.1:9/services/billing/"
    with pytest.raises(ToolFailure) as refused:          # nobody listens on port 9: said plainly, nothing made
        run_class_experiment()
    assert refused.value.status is Status.RECOVERABLE_FAILURE and "not listening" in refused.value.message
    with pytest.raises(ValueError):
        run_class_experiment(student="bad\nname", url=None)


def prefixed_service(path: Path) -> BillingServer:
    return BillingServer(BillingService(path), 0, "/services/billing/")


def test_the_service_answers_under_the_hub_prefix_and_tags_invoices(tmp_path):
    with prefixed_service(tmp_path / "billing.db") as server:
        url = f"http://127.0.0.1:{server.port}/services/billing/"
        ada = BillingClient(url=url, student="ada")
        order = {"order_id": "order-431", "amount": 120.0, "currency": "EUR", "idempotency_key": "k1"}
        assert ada.create_invoice(order)["student"] == "ada"
        assert "student" not in BillingClient(server.port).create_invoice(order), "no tag, no field"
        assert BillingClient(url=url, student="zoë h.").create_invoice(order)["student"] == "zoë h."
        tags = [i.get("student", UNTAGGED) for i in BillingClient(server.port).invoices()]
        assert tags == ["ada", UNTAGGED, "zoë h."]
        assert requests.get(url, timeout=5).json() == {"honour_keys": False, "service": "billing"}
        assert requests.get(f"http://127.0.0.1:{server.port}/services/other/invoices", timeout=5).status_code == 404
        for bad in ("x" * 65, "tab\there", " padded"):
            with pytest.raises(ToolFailure) as refused:
                BillingClient(url=url, student=bad).create_invoice(order)
            assert refused.value.status is Status.REJECTED
        assert len(ada.invoices()) == 3, "a refused tag creates nothing"
        with pytest.raises(ValueError):
            BillingClient(url="ftp://127.0.0.1/x")


def test_books_made_before_tags_gain_the_column(tmp_path):
    import sqlite3
    old = sqlite3.connect(tmp_path / "old.db")
    old.execute("CREATE TABLE invoices (number INTEGER PRIMARY KEY, order_id TEXT NOT NULL, amount REAL NOT NULL, "
                "currency TEXT NOT NULL, idempotency_key TEXT NOT NULL, fingerprint TEXT NOT NULL)")
    old.execute("INSERT INTO invoices VALUES (9, 'order-431', 120.0, 'EUR', 'k', 'f')")
    old.commit()
    old.close()
    service = BillingService(tmp_path / "old.db")
    try:
        assert service.invoices()[0]["invoice_id"] == "INV-9" and "student" not in service.invoices()[0]
        status, body = service.create_invoice({"order_id": "order-431", "amount": 1, "currency": "EUR",
                                               "idempotency_key": "k2"}, "bo")
        assert (status, body["invoice_id"], body["student"]) == (201, "INV-10", "bo")
    finally:
        service.close()
    open_books(tmp_path / "old.db").close()                  # opening again changes nothing


def test_the_tally_counts_duplicates_per_order_and_per_student():
    made = [{"order_id": "order-431", "student": "ada"}, {"order_id": "order-431", "student": "ada"},
            {"order_id": "order-431", "student": "bo"}, {"order_id": "order-432", "student": "ada"},
            {"order_id": "order-10", "student": ""}]
    counts = tally(made)
    assert [(r.name, r.among, r.invoices, r.duplicates) for r in counts.per_order] == [
        ("order-10", 1, 1, 0), ("order-431", 2, 3, 1), ("order-432", 1, 1, 0)]
    assert [(r.name, r.among, r.invoices, r.duplicates) for r in counts.per_student] == [
        (UNTAGGED, 1, 1, 0), ("ada", 2, 3, 1), ("bo", 1, 1, 0)]
    assert (counts.invoices, counts.duplicates) == (5, 1) and counts.student("nobody") is None
    assert counts.text() == tally(reversed(made)).text() and counts.lines()[-1] == "in all: 5 invoices, 1 duplicate"


def test_the_dashboard_watch_refreshes_and_stops(tmp_path):
    seen: list[Any] = []
    with prefixed_service(tmp_path / "billing.db") as server:
        url = f"http://127.0.0.1:{server.port}/services/billing/"
        with CountsWatch(url, seen.append, every=0.05) as watch:
            deadline = time.monotonic() + 10
            while len(seen) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
        assert not watch.running and len(seen) >= 2 and seen[-1].invoices == 0
    gone = CountsWatch(url, seen.append)
    assert "could not be read" in gone.read_once()


def load_config(env: dict[str, str], monkeypatch) -> Any:
    return config_and_names(env, monkeypatch)[0]


def config_and_names(env: dict[str, str], monkeypatch) -> tuple[Any, dict[str, Any]]:
    """The hub's configuration read with ``env`` as the only COURSE_ settings, and its names."""
    import runpy
    from traitlets.config import Config
    for name in [k for k in os.environ if k.startswith("COURSE_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = Config()
    names = runpy.run_path(str(CONFIG), init_globals={"get_config": lambda: config})
    return config, names


def test_the_hub_config_refuses_to_start_without_a_password_and_reads_its_settings(tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as refused:
        load_config({"COURSE_HUB_STATE_DIR": str(tmp_path)}, monkeypatch)
    assert "COURSE_CLASS_PASSWORD" in str(refused.value.code)
    with pytest.raises(SystemExit) as refused:
        load_config({"COURSE_CLASS_PASSWORD": "long enough", "COURSE_HUB_PORT": "http",
                     "COURSE_HUB_STATE_DIR": str(tmp_path)}, monkeypatch)
    assert "COURSE_HUB_PORT" in str(refused.value.code)
    c = load_config({"COURSE_CLASS_PASSWORD": "long enough", "COURSE_ADMIN_TOKEN": "t" * 32,
                     "COURSE_HUB_PORT": "8123", "COURSE_HUB_STATE_DIR": str(tmp_path),
                     "COURSE_HUB_ISOLATION": "shared"}, monkeypatch)
    assert "COURSE_ADMIN_TOKEN" not in os.environ and "COURSE_CLASS_PASSWORD" not in os.environ, \
        "read, then gone from the hub's environment: the proxy and the services do not inherit them"
    assert c.JupyterHub.bind_url == "http://127.0.0.1:8123"
    assert c.Spawner.environment == {"COURSE_BILLING_URL": "http://127.0.0.1:8123/services/billing/"}
    assert (c.JupyterHub.authenticator_class, c.JupyterHub.spawner_class) == \
        ("shared-password", "simple")
    assert ("--allow-root" in c.Spawner.args) == (os.geteuid() == 0)
    assert "--KernelManager.transport_encryption=auto" in c.Spawner.args, "kernels get keys"
    assert c.Spawner.cmd == [sys.executable, "-m", "jupyterhub.singleuser"]
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o700
    assert {stat.S_IMODE(os.stat(tmp_path / n).st_mode)
            for n in ("jupyterhub.sqlite", "billing.db", "proxy_auth_token")} == {0o600}
    billing, admin = c.JupyterHub.services
    assert billing["name"] == "billing"
    assert billing["command"][:3] == [sys.executable, "-m", "course.worlds.billing_http"]
    assert admin == {"name": "course-admin", "api_token": "t" * 32}
    assert {"--hub-auth", "--restart"} <= set(billing["command"]), "it asks the hub; it comes back"
    assert c.JupyterHub.load_roles == [
        {"name": "user", "scopes": ["self", "access:services!service=billing"]},
        {"name": "admin", "services": ["course-admin"]}]
    assert "access:services!service=billing" in c.Spawner.server_token_scopes, \
        "a kernel's token reaches billing"
    assert c.ConfigurableHTTPProxy.auth_token == (tmp_path / "proxy_auth_token").read_text()
    words = [*c.Spawner.cmd, *c.Spawner.args, *billing["command"], *c.ConfigurableHTTPProxy.command]
    secret = ("t" * 32, "long enough", c.ConfigurableHTTPProxy.auth_token)
    assert not [w for w in words if any(s in w for s in secret)], \
        "no secret on a command line: every user of the machine may read those"


def test_students_apart_is_the_default_for_a_hub_run_as_root(tmp_path, monkeypatch):
    settings = {"COURSE_CLASS_PASSWORD": "long enough", "COURSE_HUB_STATE_DIR": str(tmp_path)}
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert load_config(settings, monkeypatch).JupyterHub.spawner_class == "simple", "not root"
    for isolation, says in (("users", "needs a hub run as root"), ("none", "'users' or 'shared'")):
        with pytest.raises(SystemExit) as refused:
            load_config({**settings, "COURSE_HUB_ISOLATION": isolation}, monkeypatch)
        assert says in str(refused.value.code)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    c, names = config_and_names(settings, monkeypatch)
    from jupyterhub.auth import LocalAuthenticator
    students = c.JupyterHub.authenticator_class
    assert issubclass(students, LocalAuthenticator) and c.LocalAuthenticator.create_system_users
    assert c.JupyterHub.spawner_class == "jupyterhub.spawner.LocalProcessSpawner"
    assert "--allow-root" not in c.Spawner.args
    assert c.LocalProcessSpawner.popen_kwargs == {"umask": 0o077}
    assert c.Authenticator.username_pattern == names["STUDENT_NAME"]
    import re
    assert [n for n in ("ada", "zoe-h", "b_2", "Ada", "zoe.h", "2ada", "a" * 33)
            if re.match(names["STUDENT_NAME"], n)] == ["ada", "zoe-h", "b_2"]
    checker = students(user_password="long enough", allow_all=True)
    assert not checker.is_student("root") and not checker.is_student("daemon"), \
        "a user of this machine outside the students' group is no student"
    assert not checker.is_student("sudo") and not checker.is_student("users"), \
        "nor is the name of a group: each student gets a group of their own name"
    assert checker.is_student("new-" + uuid.uuid4().hex[:8]), "a new name: the hub makes the user"
    assert not checker.check_blocked_users("root")
    assert checker.check_blocked_users("new-" + uuid.uuid4().hex[:6])
    closed_to_others = names["closed_to_others"]
    assert closed_to_others("/usr/bin/env") is None
    assert closed_to_others(tmp_path / "x") is not None, "pytest's folders are its user's alone"
    from hub_students import open_folder
    folder = Path(tempfile.mkdtemp(dir=open_folder()))
    try:
        (folder / "f").write_text("x")
        assert closed_to_others(folder / "f") == folder            # mkdtemp makes it 0700
        os.chmod(folder, 0o755)
        assert closed_to_others(folder / "f") is None
    finally:
        shutil.rmtree(folder)


def test_a_students_folder_starts_as_a_copy_of_the_course_and_keeps_changes(tmp_path, monkeypatch):
    import asyncio
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace
    c = load_config({"COURSE_CLASS_PASSWORD": "long enough", "COURSE_HUB_STATE_DIR": str(tmp_path),
                     "COURSE_HUB_ISOLATION": "shared"}, monkeypatch)
    spawner = SimpleNamespace(user=SimpleNamespace(name="ada"))

    def hook() -> None:    # in a thread of its own: an earlier test may leave this one's loop running
        with ThreadPoolExecutor(1) as one:
            one.submit(asyncio.run, c.Spawner.pre_spawn_hook(spawner)).result()

    hook()
    folder = tmp_path / "students" / "ada"
    assert sorted(p.name for p in folder.iterdir()) == ["exercises", "notebooks", "pyproject.toml"]
    assert (folder / "notebooks" / "00_start_here.ipynb").read_bytes() == \
        (ROOT / "notebooks" / "00_start_here.ipynb").read_bytes()
    (folder / "notebooks" / "00_start_here.ipynb").write_text("mine")
    (folder / "exercises").rename(folder / "moved")
    hook()
    assert (folder / "notebooks" / "00_start_here.ipynb").read_text() == "mine", "never overwritten"
    assert (folder / "exercises").is_dir(), "what is missing comes back"


# ------------------------------------------------------------------ the class on a hub

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class HubSetup:
    """How a test starts the class hub: the Python that runs it, its configuration, the settings it
    adds to the environment; ``apart``: one Unix user per student."""

    python: str = sys.executable
    config: Path = CONFIG
    env: dict[str, str] = field(default_factory=lambda: {"COURSE_HUB_ISOLATION": "shared"})
    apart: bool = False

    def folder(self, base: Path, student: str) -> Path:
        """Where the student's server opens: their home (apart), or their folder in the state."""
        if self.apart:
            return Path(pwd.getpwnam(student).pw_dir)
        return base / "state" / "students" / student

    def state(self, base: Path) -> Path:
        return Path(self.env.get("COURSE_HUB_STATE_DIR", base / "state"))


#: Every student runs as the user who started the hub (the laptop demo).
SHARED = HubSetup()


@contextmanager
def students_apart() -> Iterator[tuple[HubSetup, Throwaway]]:
    """One Unix user per student: the course laid out for every user, and throwaway students (and
    their group) who are gone afterwards, however the block ends."""
    with throwaway_students() as throwaway, course_for_everyone() as everyone:
        env = {"COURSE_HUB_ISOLATION": "users", "COURSE_STUDENT_GROUP": throwaway.group,
               "COURSE_HUB_STATE_DIR": str(everyone.state), **everyone.env}
        yield HubSetup(str(everyone.python), everyone.config, env, apart=True), throwaway


def hub_env(base: Path, setup: HubSetup = SHARED) -> dict[str, str]:
    """This process's environment without Jupyter's or the course's settings, then the class's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "COURSE_", "IPYTHON", "MPL"))}
    folders = {"JUPYTER_CONFIG_DIR": "jupyter-config", "JUPYTER_DATA_DIR": "jupyter-data",
               "JUPYTER_RUNTIME_DIR": "jupyter-runtime", "IPYTHONDIR": "ipython", "MPLCONFIGDIR": "matplotlib"}
    for name, folder in folders.items():
        (base / folder).mkdir(parents=True, exist_ok=True)
        env[name] = str(base / folder)
    env.update({"JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"), "JUPYTER_PLATFORM_DIRS": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "COURSE_CLASS_PASSWORD": PASSWORD, "COURSE_ADMIN_TOKEN": ADMIN_TOKEN,
                "COURSE_HUB_STATE_DIR": str(base / "state"), "COURSE_HUB_PORT": str(free_port()),
                "COURSE_HUB_API_PORT": str(free_port()), "COURSE_PROXY_API_PORT": str(free_port()),
                "COURSE_BILLING_PORT": str(free_port())})
    env.update(setup.env)
    return env


class Hub:
    """A running hub: its process, its public URL, and every process seen under it."""

    def __init__(self, process: subprocess.Popen, env: dict[str, str], log: Path):
        self.process, self.log = process, log
        self.url = f"http://127.0.0.1:{env['COURSE_HUB_PORT']}"
        self.billing_port = int(env["COURSE_BILLING_PORT"])   # its own port, behind the proxy
        self.proxy_api = f"http://127.0.0.1:{env['COURSE_PROXY_API_PORT']}"
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"token {ADMIN_TOKEN}"
        self.seen: set[int] = {process.pid}

    def note_processes(self) -> None:
        try:
            self.seen.update(p.pid for p in psutil.Process(self.process.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            pass

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.api.request(method, f"{self.url}/hub/api{path}", timeout=30, **kwargs)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""


def wait_for(what: str, check, seconds: float, hub: Hub) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if hub.process.poll() is not None:
            raise AssertionError(f"the hub exited ({hub.process.returncode}) while waiting for {what}:\n"
                                 f"{hub.log_tail()}")
        try:
            found = check()
        except requests.RequestException:
            found = None
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}:\n{hub.log_tail()}")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextmanager
def running_hub(base: Path, setup: HubSetup = SHARED) -> Iterator[Hub]:
    """Start the hub in its own process group; on leaving, however the block ends, nothing it started is left."""
    env = hub_env(base, setup)
    log = base / "hub.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([setup.python, "-m", "jupyterhub", "-f", str(setup.config)],
                                   cwd=base, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    hub = Hub(process, env, log)
    try:
        wait_for("the hub's API through the proxy",
                 lambda: hub.call("GET", "/").status_code == 200, 60, hub)
        wait_for("the billing service through the proxy",
                 lambda: hub.api.get(f"{hub.url}/services/billing/", timeout=5).status_code == 200,
                 60, hub)
        hub.note_processes()
        yield hub
    finally:
        hub.note_processes()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)          # the hub stops its services, its servers and its proxy
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        for pid in sorted(hub.seen):                     # the fallback: whatever is still there goes
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait(10)


def _message(kind: str, content: dict, session: str) -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": kind, "session": session, "username": "test",
                       "version": "5.3", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": []}


#: Answers that come from the proxy, not from the student's server: on a busy machine the proxy may give up on a
#: handshake the server was still about to accept. The kernel is there (its REST call answered 201): ask again.
PROXY_GAVE_UP = (502, 503, 504, 599)


def kernel_channels(url: str, token: str, within: float = 120) -> websocket.WebSocket:
    """The kernel's websocket, asked for again while the proxy answers for a server it could not reach in time."""
    give_up = time.monotonic() + within
    while True:
        try:
            return websocket.create_connection(url, header=[f"Authorization: token {token}"], timeout=60)
        except websocket.WebSocketBadStatusException as refused:
            if refused.status_code not in PROXY_GAVE_UP or time.monotonic() > give_up:
                raise
        time.sleep(0.5)


def run_in_kernel(hub: Hub, student: str, token: str, code: str) -> str:
    """Start a kernel in the student's server, wake it with kernel_info_request, run ``code``; its stdout."""
    base = f"{hub.url}/user/{student}/api"
    auth = {"Authorization": f"token {token}"}
    kernel = requests.post(f"{base}/kernels", json={"name": "python3"}, headers=auth, timeout=30)
    assert kernel.status_code == 201, (student, kernel.status_code, kernel.text[:300])
    url = f"ws://127.0.0.1:{hub.url.rsplit(':', 1)[1]}/user/{student}/api/kernels/{kernel.json()['id']}/channels"
    session = uuid.uuid4().hex
    ws = kernel_channels(url, token)
    # Connected: from here the kernel is at work, and its idle state is what ends the wait. A
    # student's search of every readable file can take minutes on a busy machine with a full /tmp.
    ws.settimeout(KERNEL_WORK_SECONDS)
    try:
        def reply_to(request: dict, collect: list[str] | None = None) -> dict:
            ws.send(json.dumps(request))
            while True:
                message = json.loads(ws.recv())
                if message.get("parent_header", {}).get("msg_id") != request["header"]["msg_id"]:
                    continue
                kind = message["msg_type"]
                if collect is not None and kind == "stream":
                    collect.append(message["content"]["text"])
                if kind == "error":
                    raise AssertionError(f"{student}'s kernel: {message['content']['ename']}: "
                                         f"{message['content']['evalue']}")
                if kind == "status" and message["content"]["execution_state"] == "idle" and collect is not None:
                    return message
                if kind == "kernel_info_reply" and collect is None:
                    return message

        reply_to(_message("kernel_info_request", {}, session))
        out: list[str] = []
        reply_to(_message("execute_request", {"code": code, "silent": False, "store_history": False,
                                               "user_expressions": {}, "allow_stdin": False,
                                               "stop_on_error": True}, session), out)
        return "".join(out)
    finally:
        ws.close()


EXPERIMENT = """
import json, os
from course.worlds.class_experiment import class_billing_url, run_class_experiment
run = run_class_experiment(keyed={keyed})
print("\\n".join(run.lines()))
print("RUN " + json.dumps({{"where": run.where, "student": run.student, "keyed": run.keyed, "invoices": run.invoices,
                          "duplicates": run.duplicates, "url": class_billing_url(),
                          "user": os.environ.get("JUPYTERHUB_USER")}}))
"""


def log_in(hub: Hub, name: str, password: str) -> tuple[requests.Session, int]:
    """Log in through the hub's login form as a browser does: the session and the status of the final answer."""
    browser = requests.Session()
    browser.get(f"{hub.url}/hub/login", timeout=30)
    answer = browser.post(f"{hub.url}/hub/login", timeout=30,
                          data={"username": name, "password": password, "_xsrf": browser.cookies.get("_xsrf", "")})
    return browser, answer.status_code


def student_processes(hub: Hub, student: str) -> tuple[psutil.Process, list[psutil.Process]]:
    """The student's single-user server and everything under it (its kernels)."""
    pid = hub.call("GET", f"/users/{student}").json()["servers"][""]["state"]["pid"]
    server = psutil.Process(pid)
    under = server.children(recursive=True)
    assert under, f"{student}'s kernel is not under its server"
    return server, under


def student_memory(hub: Hub, student: str) -> tuple[int, int]:
    """RSS of the student's single-user server, and of everything under it (the kernel), in bytes."""
    server, under = student_processes(hub, student)
    return server.memory_info().rss, sum(p.memory_info().rss for p in under)


def shared_processes(hub: Hub) -> dict[str, list[psutil.Process]]:
    """The hub, the proxy and the billing service (under its supervisor: both), by name."""
    hub_process = psutil.Process(hub.process.pid)
    found = {"hub": [hub_process]}
    for child in hub_process.children():
        line = " ".join(child.cmdline())
        for name, marker in (("proxy", "configurable-http-proxy"), ("billing", "course.worlds.billing_http")):
            if marker in line:
                found[name] = [child, *child.children(recursive=True)]
    return found


def shared_memory(hub: Hub) -> dict[str, int]:
    """RSS of the hub, the proxy and the billing service (the hub's children that are no student's server)."""
    return {name: sum(p.memory_info().rss for p in tree)
            for name, tree in shared_processes(hub).items()}


def run_dashboard(url: str, base: Path) -> str:
    """Execute the dashboard notebook against ``url``; the text its counts cell printed."""
    nb = nbformat.read(DASHBOARD, as_version=4)
    env = {**hub_env(base / "dashboard"), "COURSE_BILLING_URL": url}
    NotebookClient(nb, kernel_name="python3", timeout=60, resources={"metadata": {"path": str(base)}}).execute(env=env)
    cell = next(c for c in nb.cells if "counts-text" in c.metadata.get("tags", []))
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def who_is_asking(hub: Hub, billing: str, tokens: dict[str, str],
                  students: dict[str, bool]) -> None:
    """The service knows its callers from their hub tokens: no token, no service (also on its own
    port); a student's invoice is tagged with the student whatever it says; a student sees their
    own invoices; the admin all."""
    admin = BillingClient(url=billing, token=ADMIN_TOKEN)
    before = admin.invoices()
    order = {"order_id": "order-900", "amount": 120.0, "currency": "EUR",
             "idempotency_key": "order-900:v1"}
    own_port = f"http://127.0.0.1:{hub.billing_port}/invoices"
    forged = {"Authorization": "token forged"}
    for url, headers in ((f"{billing}invoices", {}), (own_port, {}), (own_port, forged),
                         (f"{billing}invoices", forged)):
        for method in ("POST", "GET"):
            answer = requests.request(method, url, json=order, headers=headers, timeout=30)
            marked = (answer.status_code, answer.headers.get(SERVICE_HEADER))
            assert marked == (403, "billing"), (method, url)
            assert answer.json()["errors"][0]["code"] == "forbidden"
    first, second = list(students)[:2]
    posed = BillingClient(url=billing, token=tokens[first], student=second).create_invoice(order)
    assert posed["student"] == first, f"an invoice tagged {second!r} by {first} is {first}'s"
    own = BillingClient(url=billing, token=tokens[first]).invoices()
    assert own and {i["student"] for i in own} == {first}, "a student lists only their own invoices"
    theirs = [i["invoice_id"] for i in admin.invoices() if i["student"] == first]
    assert [i["invoice_id"] for i in own] == theirs
    everything = admin.invoices()
    assert len(everything) == len(before) + 1
    assert {i["student"] for i in everything} == set(students)
    assert BillingClient(url=billing, token=tokens[second]).find(order["idempotency_key"]) is None


def killed_service_comes_back(hub: Hub, billing: str) -> None:
    """SIGKILL the billing service: its supervisor reaps it and starts it again; the proxy's path
    answers again."""
    (supervisor,) = [p for p in psutil.Process(hub.process.pid).children()
                     if "course.worlds.billing_http" in " ".join(p.cmdline())]
    (service,) = supervisor.children()
    service.send_signal(signal.SIGKILL)
    admin = BillingClient(url=billing, token=ADMIN_TOKEN, timeout=10)

    def answers_again() -> bool:
        children = supervisor.children()     # read once: the supervisor may reap between reads
        try:
            return bool(children) and children[0].pid != service.pid and bool(admin.invoices())
        except ToolFailure:
            return False
    wait_for("the billing service again after SIGKILL", answers_again, 90, hub)
    assert not psutil.pid_exists(service.pid), "the killed service was reaped, not left a zombie"
    hub.note_processes()


@dataclass
class ClassCycle:
    """What one cycle measured and found: seconds per phase, RSS per student (server, kernel) and shared, outputs."""

    figures: dict[str, float] = field(default_factory=dict)
    memory: dict[str, tuple[int, int]] = field(default_factory=dict)
    shared: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    billing: str = ""
    counts: Any = None
    shown: str = ""
    seen: set[int] = field(default_factory=set)
    uids: dict[str, set[int]] = field(default_factory=dict)    # who each student's processes run as
    log: str = ""

    def report(self) -> list[str]:
        n = len(self.memory)
        server, kernel = (sum(m[i] for m in self.memory.values()) / n / MIB for i in (0, 1))
        return [f"class hub, {n} students: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.figures.items()),
                f"memory per student (RSS, average of {n}): {server + kernel:.0f} MiB = server {server:.0f} + kernel "
                f"{kernel:.0f}; each: " + ", ".join(f"{s} {sum(m) / MIB:.0f}" for s, m in self.memory.items()),
                "shared: " + ", ".join(f"{name} {rss / MIB:.0f} MiB" for name, rss in self.shared.items())]


def class_cycle(base: Path, students: dict[str, bool], ready_within: float = 180,
                setup: HubSetup = SHARED,
                students_side: Callable[[Hub, dict[str, str]], None] | None = None) -> ClassCycle:
    """Hub up, students made and started at once, the experiment in every kernel, the dashboard, everything stopped.

    ``students_side(hub, tokens)`` runs after the experiments, before the counts are read.
    """
    cycle = ClassCycle()
    figures = cycle.figures
    started = time.monotonic()
    with running_hub(base, setup) as hub:
        figures["hub up"] = time.monotonic() - started
        made = hub.call("POST", "/users", json={"usernames": list(students)})
        assert made.status_code == 201, made.text
        figures["students made"] = time.monotonic() - started - figures["hub up"]
        spawn = time.monotonic()
        first, *others = students
        browser, status = log_in(hub, first, PASSWORD)     # a student's own way in: the login page starts the server
        assert status == 200, status
        for student in others:                              # the others start at once through the API: 202
            answer = hub.call("POST", f"/users/{student}/server")
            assert answer.status_code in (201, 202), (student, answer.status_code, answer.text)
        assert log_in(hub, "intruder", "not the class password")[1] == 403

        def all_ready() -> bool:
            users = {u["name"]: u for u in hub.call("GET", "/users").json()}
            return all(users[s]["servers"].get("", {}).get("ready") for s in students)

        wait_for("every server ready", all_ready, ready_within, hub)
        figures["servers ready"] = time.monotonic() - spawn
        tokens = {s: hub.call("POST", f"/users/{s}/tokens", json={"note": "class test"}).json()["token"]
                  for s in students}
        page = browser.get(f"{hub.url}/user/{first}/", timeout=30)      # the server opens on the start page
        assert page.status_code == 200 and page.url.endswith(f"/user/{first}/lab/tree/notebooks/00_start_here.ipynb")
        assert (setup.folder(base, first) / "notebooks" / "00_start_here.ipynb").is_file()

        experiments = time.monotonic()
        failures: list[BaseException] = []

        def one(student: str) -> None:
            try:
                cycle.outputs[student] = run_in_kernel(hub, student, tokens[student],
                                                       EXPERIMENT.format(keyed=students[student]))
            except BaseException as failure:                # reported below, in the caller's own thread
                failures.append(failure)

        threads = [threading.Thread(target=one, args=(s,)) for s in students]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
        assert not failures, failures
        figures["experiments"] = time.monotonic() - experiments
        hub.note_processes()
        cycle.memory = {s: student_memory(hub, s) for s in students}
        cycle.uids = {s: {p.uids().real for server, under in [student_processes(hub, s)]
                          for p in (server, *under)} for s in students}
        cycle.shared = shared_memory(hub)
        if students_side is not None:
            students_side(hub, tokens)

        cycle.billing = f"{hub.url}/services/billing/"
        cycle.counts = tally(BillingClient(url=cycle.billing, token=ADMIN_TOKEN).invoices())
        board = time.monotonic()
        cycle.shown = run_dashboard(cycle.billing, base)
        figures["dashboard"] = time.monotonic() - board
        who_is_asking(hub, cycle.billing, tokens, students)
        back = time.monotonic()
        killed_service_comes_back(hub, cycle.billing)
        figures["billing back after SIGKILL"] = time.monotonic() - back

        stopping = time.monotonic()
        for student in students:
            assert hub.call("DELETE", f"/users/{student}/server").status_code in (202, 204)
        wait_for("every server stopped",
                 lambda: all(not u["servers"] for u in hub.call("GET", "/users").json()), 60, hub)
        hub.process.send_signal(signal.SIGTERM)
        assert hub.process.wait(30) == 0, hub.log_tail()
        figures["stopping"] = time.monotonic() - stopping
    cycle.seen, cycle.log = hub.seen, hub.log.read_text(errors="replace")
    left = [pid for pid in sorted(hub.seen) if _alive(pid)]
    assert not left, [psutil.Process(p).cmdline() for p in left if _alive(p)]
    figures["whole cycle"] = time.monotonic() - started
    return cycle


@pytest.mark.slow
def test_a_class_of_five_counts_its_duplicates_on_one_shared_service(tmp_path):
    cycle = class_cycle(tmp_path, STUDENTS)
    for student, keyed in STUDENTS.items():
        run = json.loads(cycle.outputs[student].split("RUN ", 1)[1])
        assert run == {"where": f"the class's shared billing service at {cycle.billing}", "student": student,
                       "keyed": keyed, "invoices": 1 if keyed else 2, "duplicates": 0 if keyed else 1,
                       "url": cycle.billing, "user": student}, cycle.outputs[student]
        assert ("no duplicate" if keyed else "(1 duplicate)") in cycle.outputs[student]
        row = cycle.counts.student(student)
        assert (row.among, row.invoices, row.duplicates) == ((1, 1, 0) if keyed else (1, 2, 1)), row
    assert (cycle.counts.invoices, cycle.counts.duplicates) == (8, 3)
    assert [(r.name, r.among, r.invoices, r.duplicates) for r in cycle.counts.per_order] == [("order-431", 5, 8, 3)]
    assert cycle.shown.strip() == cycle.counts.text().strip(), cycle.shown
    assert "in all: 8 invoices, 3 duplicates" in cycle.shown
    assert len(cycle.seen) >= 1 + 1 + 1 + 2 * len(STUDENTS), cycle.seen   # hub, proxy, billing, servers, kernels
    assert all(uids == {os.getuid()} for uids in cycle.uids.values()), "all as the hub's user"
    assert EAVESDROPPING not in cycle.log, "every kernel got keys from its server"
    print("\n" + "\n".join(cycle.report()))


# ------------------------------------------------------------------ students apart

#: What ipykernel prints when its sockets have no keys from the server that started it.
EAVESDROPPING = "susceptible to eavesdropping"
#: The hub's state: its database, cookie secret and proxy token, and the billing books.
STATE_FILES = ("jupyterhub.sqlite", "jupyterhub_cookie_secret", "proxy_auth_token", "billing.db")
NOTE = "the other student's note"

#: Run in a student's kernel (as that student): a note anyone could read, in a home only they open.
LEAVE_A_NOTE = f"""
import os
path = os.path.join(os.path.expanduser("~"), "note.txt")
with open(path, "w") as note:
    note.write({NOTE!r})
os.chmod(path, 0o644)
print("NOTE " + path)
"""

#: Run in a student's kernel (as that student), after ``GIVEN = json.loads(...)``: every attempt
#: on what is not theirs, and what it met; where the admin token could be (every command line and
#: environment they may read, the files they may read), compared by its SHA-256 only; billing.
STUDENT_ATTEMPTS = r"""
import hashlib, json, os, re, urllib.error, urllib.request
from course.worlds import BillingClient

tried = {}

def attempt(name, action):
    try:
        action()
        tried[name] = "allowed"
    except OSError as refused:                     # PermissionError is one
        tried[name] = type(refused).__name__

def read(path):
    return lambda: open(path, "rb").read(1)

attempt("read the other student's note", read(GIVEN["note"]))
attempt("list the other student's home", lambda: os.listdir(GIVEN["other_home"]))
attempt("list the hub's state", lambda: os.listdir(GIVEN["state"]))
for name in GIVEN["state_files"]:
    attempt(f"read {name}", read(os.path.join(GIVEN["state"], name)))
attempt("write billing.db", lambda: open(os.path.join(GIVEN["state"], "billing.db"), "r+b"))
for name, pid in GIVEN["pids"].items():
    attempt(f"read the environment of the {name}", read(f"/proc/{pid}/environ"))
attempt("read my own environment", read("/proc/self/environ"))
left = os.path.join("/tmp", f"left-by-{os.environ['JUPYTERHUB_USER']}")
with open(left, "w") as file:                  # outside the home: for the clean-up to find
    file.write("left behind")

def http(url, token, method):
    headers = {"Authorization": f"token {os.environ['JUPYTERHUB_API_TOKEN']}"} if token else {}
    request = urllib.request.Request(url, method=method, headers=headers,
                                     data=b"{}" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code

answers = {name: http(*call) for name, call in GIVEN["calls"].items()}

def holds_admin_token(data):
    for run in re.findall(rb"[0-9a-f]{%d,}" % GIVEN["token_length"], data):
        for i in range(len(run) - GIVEN["token_length"] + 1):
            window = run[i:i + GIVEN["token_length"]]
            if hashlib.sha256(window).hexdigest() == GIVEN["admin_sha256"]:
                return True
    return False

found, looked = [], {"command lines": 0, "environments": 0, "environments refused": 0, "files": 0}
for pid in filter(str.isdigit, os.listdir("/proc")):
    for part, counted in (("cmdline", "command lines"), ("environ", "environments")):
        try:
            data = open(f"/proc/{pid}/{part}", "rb").read()
        except PermissionError:
            looked["environments refused"] += 1
            continue
        except OSError:
            continue                               # it ended while we looked
        looked[counted] += 1
        if holds_admin_token(data):
            found.append(f"/proc/{pid}/{part}")
for top in GIVEN["folders"]:
    for folder, _, files in os.walk(top):
        for name in files[:5000]:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as file:
                    data = file.read(1 << 20)
            except OSError:
                continue
            looked["files"] += 1
            if holds_admin_token(data):
                found.append(path)

billing = os.environ["COURSE_BILLING_URL"]
tagged = BillingClient(url=billing, student=GIVEN["other"]).create_invoice(
    {"order_id": "order-950", "amount": 50.0, "currency": "EUR", "idempotency_key": "order-950:v1"})
mine = BillingClient(url=billing).invoices()
print("ATTEMPTS " + json.dumps({"tried": tried, "answers": answers, "found": found,
                                "looked": looked, "tagged": tagged["student"],
                                "listed": sorted({i["student"] for i in mine}),
                                "listed_count": len(mine), "uid": os.getuid(), "left": left,
                                "left_mode": os.stat(left).st_mode & 0o777}))
"""


def proxy_target(hub: Hub, state: Path, student: str) -> str:
    """The student's own server's address, from the proxy's routes (as root, with its token)."""
    token = (state / "proxy_auth_token").read_text().strip()
    routes = requests.get(f"{hub.proxy_api}/api/routes", timeout=30,
                          headers={"Authorization": f"token {token}"}).json()
    (target,) = [r["target"] for path, r in routes.items()
                 if path.rstrip("/").endswith(f"/user/{student}")]
    return target


def secrets_nowhere_in_sight(hub: Hub, state: Path) -> None:
    """As root: no process the hub started has a secret on its command line (every user may read
    those), and neither the proxy nor the billing service inherited the admin token or the
    password."""
    kept = {name: (state / name).read_text().strip()
            for name in ("jupyterhub_cookie_secret", "proxy_auth_token")}
    secrets = {"admin token": ADMIN_TOKEN, "class password": PASSWORD, **kept}
    hub.note_processes()
    lines = {pid: " ".join(psutil.Process(pid).cmdline()) for pid in hub.seen if _alive(pid)}
    assert len(lines) >= 5, lines
    shown = [(name, pid) for pid, line in lines.items()
             for name, secret in secrets.items() if secret in line]
    assert not shown, shown
    for name, tree in shared_processes(hub).items():
        if name == "hub":
            continue                           # its own environment, readable by root alone
        for process in tree:
            env = Path(f"/proc/{process.pid}/environ").read_bytes()
            assert ADMIN_TOKEN.encode() not in env and PASSWORD.encode() not in env, name


def students_cannot_reach_each_other(hub: Hub, setup: HubSetup, base: Path, tokens: dict[str, str],
                                     found: dict[str, Any]) -> None:
    """The first student, in their own kernel, tries what is not theirs; every try is refused."""
    first, second = list(tokens)[:2]
    state = setup.state(base)
    assert (stat.S_IMODE(os.stat(state).st_mode), os.stat(state).st_uid) == (0o700, 0)
    for name in STATE_FILES:
        held = os.stat(state / name)
        assert (stat.S_IMODE(held.st_mode), held.st_uid) == (0o600, 0), name
    for student in (first, second):
        home, account = os.stat(setup.folder(base, student)), pwd.getpwnam(student)
        assert (stat.S_IMODE(home.st_mode), home.st_uid) == (0o700, account.pw_uid), student
    note = run_in_kernel(hub, second, tokens[second], LEAVE_A_NOTE).split("NOTE ", 1)[1].strip()
    assert Path(note).read_text() == NOTE and stat.S_IMODE(os.stat(note).st_mode) == 0o644
    server, kernels = student_processes(hub, second)
    services = shared_processes(hub)
    pids = {"hub": hub.process.pid, "proxy": services["proxy"][0].pid,
            "billing service": services["billing"][-1].pid,
            "other student's server": server.pid, "other student's kernel": kernels[0].pid}
    direct = proxy_target(hub, state, second)
    calls = {"the hub's list of users": (f"{hub.url}/hub/api/users", True, "GET"),
             "a token for the other student": (f"{hub.url}/hub/api/users/{second}/tokens", True,
                                               "POST"),
             "the other student's server": (f"{hub.url}/user/{second}/api/status", True, "GET"),
             "the other student's server, on its own port": (f"{direct}/user/{second}/api/status",
                                                              True, "GET"),
             "the proxy's routes": (f"{hub.proxy_api}/api/routes", False, "GET"),
             "the proxy's routes, with my token": (f"{hub.proxy_api}/api/routes", True, "GET"),
             "my own server": (f"{hub.url}/user/{first}/api/status", True, "GET")}
    given = {"note": note, "other_home": str(setup.folder(base, second)), "state": str(state),
             "state_files": STATE_FILES, "pids": pids, "calls": calls, "other": second,
             "token_length": len(ADMIN_TOKEN),
             "admin_sha256": hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest(),
             "folders": [str(setup.config.parent.parent), str(setup.folder(base, first)),
                         "/dev/shm", "/tmp"]}
    code = f"import json\nGIVEN = json.loads({json.dumps(given)!r})\n" + STUDENT_ATTEMPTS
    said = run_in_kernel(hub, first, tokens[first], code)
    found.update(json.loads(said.split("ATTEMPTS ", 1)[1]))
    secrets_nowhere_in_sight(hub, state)
    assert log_in(hub, "root", PASSWORD)[1] == 403, "a user of this machine is no student"
    assert log_in(hub, "Zoe.H", PASSWORD)[1] == 403, "not a name adduser takes"
    made = hub.call("POST", "/users", json={"usernames": ["daemon"]})
    assert made.status_code == 400, made.text
    assert hub.call("GET", "/users/daemon").status_code == 404


@pytest.mark.slow
@pytest.mark.skipif(hub_may_isolate() is not None, reason=str(hub_may_isolate()))
def test_two_students_apart_cannot_reach_each_other_the_hub_or_its_tokens(tmp_path):
    found: dict[str, Any] = {}
    with students_apart() as (setup, throwaway):
        students = {throwaway.name("ada"): False, throwaway.name("bram"): True}
        first, second = students
        cycle = class_cycle(tmp_path, students, setup=setup,
                            students_side=lambda hub, tokens: students_cannot_reach_each_other(
                                hub, setup, tmp_path, tokens, found))
        accounts = {s: pwd.getpwnam(s) for s in students}
        assert all(s in grp.getgrnam(throwaway.group).gr_mem for s in students)
    assert not throwaway.accounts() and not any(Path(a.pw_dir).exists() for a in accounts.values())
    assert found["left_mode"] == 0o600 and not Path(found["left"]).exists(), \
        "what a student writes in /tmp is theirs alone, and it goes with them"
    for student in students:                       # each server and kernel ran as the student
        assert cycle.uids[student] == {accounts[student].pw_uid}, cycle.uids
    assert found["uid"] == accounts[first].pw_uid
    refused = {name: outcome for name, outcome in found["tried"].items()
               if name != "read my own environment"}
    assert len(refused) == 4 + len(STATE_FILES) + 5, refused
    assert set(refused.values()) == {"PermissionError"}, refused
    assert found["tried"]["read my own environment"] == "allowed"
    assert found["answers"] == {"the hub's list of users": 403,
                                "a token for the other student": 403,
                                "the other student's server": 403,
                                "the other student's server, on its own port": 403,
                                "the proxy's routes": 403, "the proxy's routes, with my token": 403,
                                "my own server": 200}, found["answers"]
    looked = found["looked"]
    assert found["found"] == [] and looked["command lines"] >= 10 and looked["files"] >= 50, looked
    assert looked["environments"] >= 1 and looked["environments refused"] >= 5, looked
    assert (found["tagged"], found["listed"], found["listed_count"]) == (first, [first], 3), \
        "an invoice tagged as another student is the sender's; a student lists their own only"
    rows = {s: (cycle.counts.student(s).invoices, cycle.counts.student(s).duplicates)
            for s in students}
    assert rows == {first: (3, 1), second: (1, 0)}, rows        # the dashboard's token sees both
    assert cycle.shown.strip() == cycle.counts.text().strip() and second in cycle.shown
    assert EAVESDROPPING not in cycle.log, "every kernel got keys from its server"
    print("\n" + "\n".join(cycle.report()))
