"""Servers and kernels started for the browser tests never outlive them.

A kernel runs in a session of its own, so killing the server's process group alone would
leave it running; these tests start a real JupyterLab and a real kernel and check, by the
marker every process they started carries, that nothing survives:

* a normal stop (what every fixture does in its ``finally``);
* SIGTERM to the process that started them (what a CI runner sends when it gives up);
* Ctrl+C twice in the terminal where a learner ran the README's ``python scripts/open_course.py``
  (the launcher is JupyterLab itself, so the signal reaches the server, which stops its kernels).

They need JupyterLab only, not a browser, so they run on every machine.
"""
from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import browser_harness as harness

HARNESS = Path(harness.__file__)
#: What a Jupyter server prints after a first Ctrl+C in a terminal; a second one then stops it.
ASKS = b"Shut down this Jupyter server"
pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(),
                                reason="processes are found through /proc (Linux only)")


def kernel_processes(pids: list[int]) -> list[int]:
    return [pid for pid in pids if "ipykernel" in harness.command_line(pid)]


def test_stopping_the_server_stops_its_kernels(tmp_path: Path):
    harness.install_cleanup()
    lab = harness.Lab(harness.scratch_course(tmp_path / "course"), tmp_path / "lab")
    try:
        status, kernel = lab.api("/api/kernels", method="POST")
        assert status == 201, kernel
        deadline = time.monotonic() + harness.START_S
        while not lab.kernel_pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        started = lab.process.pids()
        assert lab.process.pid in started
        assert kernel_processes(started), f"no kernel process found among {started}"
    finally:
        left = lab.stop()
    assert left == []
    assert harness.processes_with_marker(lab.process.marker) == []
    assert lab.process.popen.returncode is not None


def test_sigterm_to_the_test_process_stops_server_and_kernels(tmp_path: Path):
    child = subprocess.Popen([sys.executable, str(HARNESS), "hold-lab", str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 2 * harness.START_S      # a course copy, a server, a kernel
        report = None
        while report is None and time.monotonic() < deadline and child.poll() is None:
            report = next((json.loads(line) for line in list(lines) if line.startswith("{")), None)
            time.sleep(0.1)
        assert report, f"the child did not report its server:\n{''.join(lines)}"
        assert report["kernel_status"] == 201 and report["kernels"], report
        assert set(report["kernels"]) <= set(harness.processes_with_marker(report["marker"]))

        child.send_signal(signal.SIGTERM)
        child.wait(timeout=2 * harness.GONE_S)     # it stops its server (and waits for it) first
        assert child.returncode == -signal.SIGTERM, "the child should still die of SIGTERM after cleaning up"
        left = harness.wait_gone(report["marker"], harness.GONE_S)
        assert left == [], "server or kernel outlived SIGTERM"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        marker = next((json.loads(line)["marker"] for line in list(lines) if line.startswith("{")), None)
        if marker:                        # never leave anything behind, even when the test failed
            for pid in harness.processes_with_marker(marker):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def test_ctrl_c_in_a_terminal_stops_the_course_and_its_kernels(tmp_path: Path):
    course = harness.scratch_course(tmp_path / "course")
    port, token, marker = harness.free_port(), "ctrl-c", f"ctrl-c-{os.getpid()}"
    env = {**harness.jupyter_env(tmp_path / "jupyter"), harness.MARKER_VAR: marker}
    terminal, child_side = pty.openpty()          # a terminal, as a learner has: Jupyter asks before stopping
    server = subprocess.Popen([sys.executable, *harness.OPEN_COURSE, "--no-browser", "--ip=127.0.0.1",
                               f"--port={port}", f"--IdentityProvider.token={token}"]
                              + (["--allow-root"] if os.geteuid() == 0 else []),
                              cwd=course, env=env, stdin=child_side, stdout=child_side, stderr=child_side,
                              start_new_session=True)
    os.close(child_side)
    shown: list[bytes] = []                       # what the terminal showed (read, so the server never blocks)

    def read_terminal() -> None:
        try:
            while chunk := os.read(terminal, 65536):
                shown.append(chunk)
        except OSError:                           # the server's side closed
            pass
    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()

    def status(path: str, method: str = "GET") -> int:
        try:
            return harness._get(f"http://127.0.0.1:{port}{path}", token, method)[0]
        except OSError:
            return 0

    def terminal_shows(text: bytes, seconds: float) -> bool:
        """Wait until the terminal has shown ``text`` (or the server has ended); whether it has."""
        deadline = time.monotonic() + seconds
        while text not in b"".join(shown) and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return text in b"".join(shown)

    try:
        deadline = time.monotonic() + harness.START_S
        while status("/api/status") != 200 and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.1)
        assert status("/api/kernels", method="POST") == 201, b"".join(shown).decode(errors="replace")
        while not kernel_processes(harness.processes_with_marker(marker)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert kernel_processes(harness.processes_with_marker(marker)), "no kernel started"

        # Ctrl+C twice, as a learner presses it; a terminal signals its whole foreground group. The
        # second comes once the first has been handled (the server asks whether to shut down, and
        # a second Ctrl+C then stops it): two signals sent before a busy server runs would be one.
        os.killpg(server.pid, signal.SIGINT)
        assert terminal_shows(ASKS, harness.START_S), b"".join(shown).decode(errors="replace")
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=2 * harness.GONE_S)
        assert harness.wait_gone(marker, harness.GONE_S) == [], "server or kernel outlived Ctrl+C"
        reader.join(timeout=harness.GONE_S)
        assert b"Shutting down 1 kernel" in b"".join(shown), "the server did not shut its kernel down itself"
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        for pid in harness.processes_with_marker(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.close(terminal)
