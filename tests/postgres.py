"""A throwaway PostgreSQL cluster for tests: made, started, stopped and removed by ``cluster()``.

``cluster()`` is a context manager: ``initdb`` in a new temporary folder (data, log and socket
inside it), the server started on 127.0.0.1 at a free port and on that folder's socket, and on
exit a fast stop and the folder removed. ``initdb`` refuses to run as root, so as root every
server command runs as the ``postgres`` user, in a folder that user owns. It waits on states,
never on sleeps: ``pg_ctl -w`` returns once the server accepts connections, then ``pg_isready``
and a real connection confirm it. ``needed()`` says what is missing, if anything: a test skips
then, but fails under ``CI`` or ``REQUIRE_POSTGRES=1`` (CI runs ``.ci/run`` with ``CI=true``,
and ``.ci/run`` sets ``REQUIRE_POSTGRES=1``), so CI never skips it.
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import pytest

#: True where a missing PostgreSQL is a failure, not a skip (CI, or asked for).
REQUIRED = (os.environ.get("REQUIRE_POSTGRES") == "1"
            or os.environ.get("CI", "").lower() in ("1", "true", "yes"))
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def binaries() -> Path | None:
    """The newest installed server's bin folder (Debian: /usr/lib/postgresql/N/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def missing() -> str:
    """Why a cluster cannot start here ("" when it can)."""
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    if binaries() is None:
        return "PostgreSQL's server (initdb, pg_ctl) is not installed"
    if ROOT_USER and shutil.which("su") is None:
        return "running as root without su: initdb must run as the postgres user"
    return ""


def needed() -> None:
    """Skip the calling test when PostgreSQL is missing, or fail it where it must run."""
    reason = missing()
    if reason:
        (pytest.fail if REQUIRED else pytest.skip)(reason)


@dataclass
class Cluster:
    """A running throwaway cluster: ``url(name)`` reaches a database, ``create(name)`` makes one."""

    folder: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        host = quote(str(self.folder), safe="")
        return f"postgresql://postgres@/{database}?host={host}&port={self.port}"

    def create(self, database: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{database}"')
        return self.url(database)


def _as_server_user(command: list[str], folder: Path) -> subprocess.CompletedProcess:
    """Run a server command in ``folder`` (a working folder that user may enter): as the postgres
    user when this process is root, else as itself."""
    if ROOT_USER:
        command = ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(command)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=folder)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def cluster() -> Iterator[Cluster]:
    """initdb, start and yield a ``Cluster``; on exit stop it and remove its folder, whatever
    happened."""
    bin_dir = binaries()
    assert bin_dir is not None, missing()
    # as root: a folder the postgres user can reach (the run's own temporary folder is root's alone)
    folder = Path(tempfile.mkdtemp(prefix="course-pg-", dir="/tmp" if ROOT_USER else None))
    data, log = folder / "data", folder / "server.log"
    initdb, pg_ctl, pg_isready = (str(bin_dir / n) for n in ("initdb", "pg_ctl", "pg_isready"))
    try:
        if ROOT_USER:
            shutil.chown(folder, "postgres", "postgres")
        made = _as_server_user([initdb, "-D", str(data), "-A", "trust", "-U", "postgres",
                                "-E", "UTF8", "--no-sync"], folder)
        assert made.returncode == 0, f"initdb failed: {made.stderr}"
        port = _free_port()
        settings = (f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={folder} "
                    "-c shared_buffers=16MB")
        started = _as_server_user([pg_ctl, "-D", str(data), "-l", str(log), "-w", "-t", "90",
                                   "-o", settings, "start"], folder)
        assert started.returncode == 0, f"the server did not start: {started.stdout}{_tail(log)}"
        try:
            ready = subprocess.run([pg_isready, "-h", str(folder), "-p", str(port), "-t", "60"],
                                   capture_output=True, text=True, timeout=90)
            assert ready.returncode == 0, f"pg_isready: {ready.stdout}{_tail(log)}"
            server = Cluster(folder, port)
            import psycopg

            with psycopg.connect(server.url(), connect_timeout=60) as probe:
                assert probe.execute("SELECT 1").fetchone() == (1,)
            yield server
        finally:
            stopped = _as_server_user([pg_ctl, "-D", str(data), "-m", "fast", "-w", "-t", "60",
                                       "stop"], folder)
            if stopped.returncode != 0:
                _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n" + "\n".join(lines[-20:])
