"""Start JupyterLab and Voila the way a learner or an instructor does, and always stop them again.

The browser tests drive the course in a real headless Chromium, so they need real servers:

* ``scratch_course(dest)`` copies the repository, as a learner's clone has it (notebooks,
  exercises, solutions, toolkit, scripts, settings; no git or cache folders), to a scratch
  folder. JupyterLab autosaves; the servers only ever see the copy.
* ``jupyter_env(base)`` gives the servers their own Jupyter, JupyterLab, IPython and
  matplotlib folders under ``base``, as on a machine that never ran Jupyter. The only user
  setting is notebook windowing off (so off-screen cells stay in the page); what keeps the
  news prompt away must be the course's own settings.
* ``Lab(course, base)`` runs the README's "open the course" command from the copy's root,
  ``python scripts/open_course.py``, plus what a headless run needs (loopback address, a free
  port, a token, ``--allow-root`` as root, the app exposed to the page). Instead of
  ``--no-browser`` the server is given a "browser" that only records the address it was asked
  to open, so a test can open exactly what a learner's browser would. ``Lab(..., command=PLAIN_LAB)``
  runs a bare ``python -m jupyter lab`` instead (what the course's settings are compared with).
* ``Voila(course, name, base)`` runs INSTRUCTORS.md's projector command from the copy's root,
  ``python scripts/show_chapter.py notebooks/<name>.ipynb --no-browser``: Voila with the course's
  template and kernel settings.

Cleanup does not rely on the process tree. Every process started here gets its own marker in
its environment, which the kernels it launches inherit (a kernel runs in its own session, so
killing the server's process group would miss it). ``ManagedProcess.stop()`` asks the server
to stop (SIGTERM: a Jupyter server then shuts its kernels down), waits, then kills by pid
whatever still carries the marker. ``install_cleanup()`` makes that happen at interpreter
exit and on SIGTERM too.

Run as a script, ``python browser_harness.py hold-lab BASE`` starts a server and a kernel,
prints their marker and pids as one JSON line, and waits to be stopped: the tests send it
SIGTERM and check that nothing it started survives.
"""
from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER_VAR = "COURSE_BROWSER_TEST_MARKER"

#: Where a Debian/Ubuntu machine keeps Chromium (``apt-get install chromium``); BROWSER_CHROMIUM overrides.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
#: Flags for a headless Chromium in a container without a GPU, a sandbox or a network.
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage")

#: JupyterLab user settings for an unattended run: every cell kept in the page. Nothing about
#: notifications: the course's own settings (lab-settings/overrides.json) must keep them away.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
#: The README's "open the course" command after the install, run from the repository's root.
OPEN_COURSE = ("scripts/open_course.py",)
#: JupyterLab with none of the course's settings: the same folder, a bare ``jupyter lab``.
PLAIN_LAB = ("-m", "jupyter", "lab")
#: How long a server may take to answer on a busy machine (other work on both cores): every wait
#: here is on a state (the server answers, a process is gone), so these bound a hang, not a step.
START_S = 180.0
#: How long one request to a server may take (starting a kernel answers only once it started).
REQUEST_S = 120.0
#: How long the processes of a stopped server (or browser) may take to be gone.
GONE_S = 60.0
#: What a learner's copy of the repository does not hold (or only this machine made).
NOT_COPIED = (".git", "artifacts", ".venv", "venv", "build", "*.egg-info", "__pycache__", ".ipynb_checkpoints",
              ".pytest_cache", ".hypothesis", ".benchmarks")


# ------------------------------------------------------------------ what the machine has
def chromium_executable() -> str | None:
    """The Chromium binary to drive (BROWSER_CHROMIUM if set, else Debian's), or None when there is none."""
    wanted = os.environ.get("BROWSER_CHROMIUM")
    for candidate in [wanted] if wanted else CHROMIUM_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def missing_for_browser_tests(need_voila: bool = False) -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (python -m pip install -e \".[test]\")"
    if need_voila and importlib.util.find_spec("voila") is None:
        return "voila is not installed (python -m pip install -e \".[test]\")"
    if chromium_executable() is None:
        where = os.environ.get("BROWSER_CHROMIUM") or " or ".join(CHROMIUM_CANDIDATES)
        return f"no Chromium at {where} (apt-get install -y chromium, or set BROWSER_CHROMIUM)"
    if not Path("/proc/self/environ").exists():
        return "the servers' processes are tracked through /proc, which this system does not have (Linux only)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ processes, found by marker
def processes_with_marker(marker: str) -> list[int]:
    """Pids of the live processes whose environment carries ``marker`` (zombies have no environment)."""
    needle = f"{MARKER_VAR}={marker}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:       # gone already, or not ours to read
            continue
    return sorted(found)


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def wait_gone(marker: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = processes_with_marker(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


_LIVE: list["ManagedProcess"] = []


class ManagedProcess:
    """A server started in its own session, with a marker that its children inherit."""

    def __init__(self, name: str, argv: list[str], cwd: Path, env: dict[str, str], log: Path):
        self.name = name
        self.marker = f"{name}-{secrets.token_hex(8)}"
        self.log_path = log
        self._log = open(log, "wb")
        self.popen = subprocess.Popen(argv, cwd=cwd, env={**env, MARKER_VAR: self.marker},
                                      stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.pid = self.popen.pid
        _LIVE.append(self)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def pids(self) -> list[int]:
        """Every live process this server started, itself included (its kernels too)."""
        return processes_with_marker(self.marker)

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self, grace: float = 30.0) -> list[int]:
        """Stop the server and everything it started; return the pids still alive afterwards (none, normally)."""
        if self in _LIVE:
            _LIVE.remove(self)
        if self.alive():
            _signal_all([self.pid], signal.SIGTERM)        # a Jupyter server shuts its kernels down on SIGTERM
        try:
            self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        left = wait_gone(self.marker, 10.0)      # a kernel the server stopped may still be exiting
        if left or self.alive():
            _signal_all(left, signal.SIGTERM)
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            _signal_all(processes_with_marker(self.marker), signal.SIGKILL)
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            left = wait_gone(self.marker, GONE_S)
        self._log.close()
        return left


def stop_all() -> None:
    """Stop every server still running (at exit, on SIGTERM)."""
    for process in list(_LIVE):
        process.stop(grace=3.0)


_INSTALLED = False


def install_cleanup() -> None:
    """Stop every server at interpreter exit and when this process is sent SIGTERM (then die of it as before)."""
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    atexit.register(stop_all)
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: object) -> None:
        stop_all()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)


# ------------------------------------------------------------------ the course, Jupyter's folders
def scratch_course(dest: Path) -> Path:
    """Copy the repository (as a learner's clone has it) to ``dest`` and return ``dest``; the servers run there."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*NOT_COPIED))
    return dest


def jupyter_env(base: Path) -> dict[str, str]:
    """This process's environment with every Jupyter/IPython/matplotlib folder moved under ``base``."""
    folders = {"JUPYTER_CONFIG_DIR": "jupyter-config", "JUPYTER_DATA_DIR": "jupyter-data",
               "JUPYTER_RUNTIME_DIR": "jupyter-runtime", "JUPYTERLAB_SETTINGS_DIR": "lab-user-settings",
               "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces", "IPYTHONDIR": "ipython",
               "MPLCONFIGDIR": "matplotlib"}
    env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
    for var, name in folders.items():
        (base / name).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / name)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for relative, values in LAB_SETTINGS.items():
        path = base / "lab-user-settings" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")
    return env


def _get(url: str, token: str | None = None, method: str = "GET",
         timeout: float = REQUEST_S) -> tuple[int, bytes]:
    request = urllib.request.Request(url, method=method, data=b"{}" if method == "POST" else None)
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _wait(what: str, process: ManagedProcess, ready, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if not process.alive():
            raise RuntimeError(f"{what} exited with {process.popen.returncode}:\n{process.log_tail()}")
        try:
            if ready():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout:.0f} s:\n{process.log_tail()}")
        time.sleep(0.1)


# ------------------------------------------------------------------ JupyterLab and Voila
class Lab:
    """A running JupyterLab: its base url, token, the address it asked a browser to open, its process.

    ``command`` is what follows ``python`` (default: the README's ``scripts/open_course.py``);
    ``up_seconds`` is how long the server took from start to answering its API.
    """

    START_PAGE = "notebooks/00_start_here.ipynb"

    def __init__(self, course: Path, base: Path, timeout: float = START_S,
                 command: tuple[str, ...] = OPEN_COURSE):
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        base.mkdir(parents=True, exist_ok=True)
        self.opened = base / "opened-url.txt"
        recorder = base / "record-url"       # the "web browser": writes down the address it is given
        recorder.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{self.opened}'\n", encoding="utf-8")
        recorder.chmod(0o755)
        env = {**jupyter_env(base), "BROWSER": str(recorder)}
        argv = [sys.executable, *command,                                # the README's command
                "--ip=127.0.0.1", f"--port={self.port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", "--LabApp.expose_app_in_browser=True",
                "--ServerApp.use_redirect_file=True"]
        if os.geteuid() == 0:
            argv.append("--allow-root")
        self.argv = argv
        started = time.monotonic()
        self.process = ManagedProcess("lab", argv, course, env, base / "lab.log")
        try:
            _wait("JupyterLab", self.process, lambda: self.api("/api/status")[0] == 200, timeout)
        except BaseException:
            self.process.stop()
            raise
        self.up_seconds = time.monotonic() - started

    def api(self, path: str, method: str = "GET") -> tuple[int, object]:
        status, body = _get(self.url + path, self.token, method)
        try:
            return status, json.loads(body or b"null")
        except ValueError:
            return status, body

    def opened_address(self, timeout: float = START_S) -> str:
        """The address the server asked the browser to open (the README command opens the start page)."""
        _wait("the browser hand-off", self.process, lambda: self.opened.is_file() and self.opened.read_text().strip(),
              timeout)
        return self.opened.read_text().split()[0]

    def kernel_pids(self) -> list[int]:
        return [pid for pid in self.process.pids() if "ipykernel" in command_line(pid)]

    def stop(self) -> list[int]:
        return self.process.stop()


class Voila:
    """``python scripts/show_chapter.py notebooks/<name>.ipynb --no-browser``: projector view."""

    def __init__(self, course: Path, name: str, base: Path, timeout: float = START_S):
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}/?token={self.token}"
        folder = base / f"voila-{name}"
        folder.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "scripts/show_chapter.py", f"notebooks/{name}.ipynb",
                "--no-browser", "--Voila.ip=127.0.0.1", f"--port={self.port}",
                f"--token={self.token}",
                "--show_tracebacks=True"]                     # a failing cell says why, on the page
        self.argv = argv
        self.process = ManagedProcess("voila", argv, course, jupyter_env(folder), folder / "voila.log")

        def listening() -> bool:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        try:
            _wait("Voila", self.process, listening, timeout)
        except BaseException:
            self.process.stop()
            raise

    def stop(self) -> list[int]:
        return self.process.stop()


# ------------------------------------------------------------------ the SIGTERM check's child
def _hold_lab(base: Path) -> None:
    """Start a server and one kernel, report them, then wait for a signal (used by a test)."""
    install_cleanup()
    course = scratch_course(base / "course")
    lab = Lab(course, base)
    status, kernel = lab.api("/api/kernels", method="POST")
    deadline = time.monotonic() + START_S
    while not lab.kernel_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    print(json.dumps({"marker": lab.process.marker, "server": lab.process.pid, "kernel_status": status,
                      "kernels": lab.kernel_pids(), "all": lab.process.pids()}), flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "hold-lab":
        _hold_lab(Path(sys.argv[2]))
    else:
        sys.exit("usage: browser_harness.py hold-lab BASE")
