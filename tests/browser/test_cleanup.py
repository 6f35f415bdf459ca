"""Servers and kernels started for the browser tests never outlive them.

A kernel runs in a session of its own, so killing the server's process group alone would
leave it running; these tests start a real JupyterLab and a real kernel and check, by the
marker every process they started carries, that nothing survives:

* a normal stop (what every fixture does in its ``finally``);
* SIGTERM to the process that started them (what a CI runner sends when it gives up).

They need JupyterLab only, not a browser, so they run on every machine.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import browser_harness as harness

HARNESS = Path(harness.__file__)
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
        deadline = time.monotonic() + 60
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
        deadline = time.monotonic() + 120
        report = None
        while report is None and time.monotonic() < deadline and child.poll() is None:
            report = next((json.loads(line) for line in list(lines) if line.startswith("{")), None)
            time.sleep(0.1)
        assert report, f"the child did not report its server:\n{''.join(lines)}"
        assert report["kernel_status"] == 201 and report["kernels"], report
        assert set(report["kernels"]) <= set(harness.processes_with_marker(report["marker"]))

        child.send_signal(signal.SIGTERM)
        child.wait(timeout=60)
        assert child.returncode == -signal.SIGTERM, "the child should still die of SIGTERM after cleaning up"
        assert harness.wait_gone(report["marker"], 10.0) == [], "server or kernel outlived SIGTERM"
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
