"""Students apart on the class hub's machine: a course every user can run; throwaway students.

For tests/test_class_hub.py and benchmarks/bench_class_hub.py, run as root. With one Unix user per
student (deploy/jupyterhub_config.py, COURSE_HUB_ISOLATION=users) every student's server runs the
course's Python as that student, so the interpreter, its standard library, the environment's
packages and the course folder must be open to every user. A test's own environment often is not
(this machine's Python lives under /root, mode 0700; CI's environment in a ``mktemp -d`` folder,
mode 0700).

``course_for_everyone()`` therefore lays out, in a fresh folder of /var/tmp (or /tmp) open to all,
the interpreter (its ``bin/python3.X``, ``lib/`` without the base's site-packages), the virtual
environment and the course's parts, as hard links of the same files (a copy where links cannot
be made): nothing is written through them, and every file keeps its own mode. Only the venv's
``pyvenv.cfg`` and ``python`` links are made anew, pointing at the laid-out interpreter. The folder
also holds the hub's state folder (``state/``), so that only that folder's own mode keeps students
out of it. Leaving the block removes the folder.

``throwaway_students()`` gives a random tag for the students' names and their group; on leaving,
however the block ends, it ends the students' processes (by pid), removes every file they own
anywhere on the machine's disk and in /dev/shm, then the users with their homes (``userdel -r``) and
the group. It touches only users whose names carry its tag.
"""
from __future__ import annotations

import grp
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import psutil

ROOT = Path(__file__).resolve().parent.parent
#: What of the course folder a student's server, its kernels and the hub use.
COURSE_PARTS = ("course", "toolkit", "deploy", "scripts", "notebooks", "exercises", "lab-settings",
                "pyproject.toml")
#: Folders open to every user where the laid-out course may go, first found first.
OPEN_FOLDERS = ("/var/tmp", "/tmp")
#: Where a student could leave files outside their home: the root file system, and shared memory.
STUDENT_WRITABLE = ("/", "/dev/shm")
NOT_LAID_OUT = {".ipynb_checkpoints", ".pytest_cache", "artifacts"}


def hub_may_isolate() -> str | None:
    """Why this machine cannot run students apart, or None when it can (root, adduser, userdel)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "students apart needs root: the hub creates a Unix user per student"
    missing = [tool for tool in ("adduser", "usermod", "userdel", "groupadd")
               if not shutil.which(tool)]
    return f"missing {', '.join(missing)}" if missing else None


def _lay_out(source: Path, target: Path, skip: set[str] = frozenset()) -> int:
    """``target`` mirrors ``source``: folders made (0755), files hard-linked (copied across file
    systems), symbolic links as they were; folders whose path relative to ``source`` is in ``skip``
    are left out. The number of files."""
    count = 0
    for folder, dirs, files in os.walk(source):
        here = Path(folder)
        rel = here.relative_to(source)
        (target / rel).mkdir(exist_ok=True)
        os.chmod(target / rel, 0o755)
        for name in list(dirs):
            if (here / name).is_symlink() or name in NOT_LAID_OUT or str(rel / name) in skip:
                dirs.remove(name)
                if (here / name).is_symlink():
                    os.symlink(os.readlink(here / name), target / rel / name)
        for name in files:
            src, dst = here / name, target / rel / name
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
                continue
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
            count += 1
    return count


@dataclass
class Everyone:
    """Laid out for all: run ``python`` with ``env`` added; the hub's ``config``."""

    root: Path
    python: Path
    course: Path
    state: Path
    env: dict[str, str] = field(default_factory=dict)
    files: int = 0

    @property
    def config(self) -> Path:
        return self.course / "deploy" / "jupyterhub_config.py"


def open_folder() -> Path:
    for candidate in OPEN_FOLDERS:
        mode = os.stat(candidate).st_mode if os.path.isdir(candidate) else 0
        if mode & stat.S_IXOTH and mode & stat.S_IWOTH:
            return Path(candidate)
    raise RuntimeError(f"none of {OPEN_FOLDERS} is open to every user")


@contextmanager
def course_for_everyone() -> Iterator[Everyone]:
    """The interpreter, this environment and the course, where every user may read and run them."""
    root = Path(tempfile.mkdtemp(prefix="course-everyone-", dir=open_folder()))
    try:
        os.chmod(root, 0o755)
        base, prefix = Path(sys.base_prefix), Path(sys.prefix)
        binary = Path(os.path.realpath(sys.executable))
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        in_venv = prefix != base
        python_dir = root / "python"
        (python_dir / "bin").mkdir(parents=True)
        os.link(binary, python_dir / "bin" / version)
        files = 1 + _lay_out(base / "lib", python_dir / "lib",
                             {f"{version}/site-packages", f"{version}/test"} if in_venv else set())
        python = python_dir / "bin" / version
        jupyter = python_dir / "share" / "jupyter"
        if in_venv:
            venv = root / "venv"
            files += _lay_out(prefix, venv)
            for name in os.listdir(venv / "bin"):
                if name.startswith("python") and (venv / "bin" / name).is_symlink():
                    os.unlink(venv / "bin" / name)          # the link, not the file it names
                    os.symlink(python, venv / "bin" / name)
            cfg = venv / "pyvenv.cfg"
            lines = [line for line in cfg.read_text().splitlines()
                     if not line.startswith(("home", "executable", "command"))]
            os.unlink(cfg)                                  # a new file: this one is a hard link
            cfg.write_text("\n".join([f"home = {python.parent}", *lines, ""]))
            python, jupyter = venv / "bin" / "python", venv / "share" / "jupyter"
        course = root / "course"
        course.mkdir(mode=0o755)
        for part in COURSE_PARTS:
            if (ROOT / part).is_dir():
                files += _lay_out(ROOT / part, course / part)
            elif (ROOT / part).is_file():
                os.link(ROOT / part, course / part)
                files += 1
        env = {"PYTHONPATH": str(course), "JUPYTER_PATH": str(jupyter)}
        libdir = Path(sysconfig.get_config_var("LIBDIR") or "")
        if sysconfig.get_config_var("Py_ENABLE_SHARED") and libdir.is_relative_to(base):
            env["LD_LIBRARY_PATH"] = str(python_dir / libdir.relative_to(base))   # before RUNPATH
        yield Everyone(root, python, course, root / "state", env, files)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Throwaway:
    """The tag in every throwaway student's name, and their group."""

    tag: str
    group: str

    def name(self, student: str) -> str:
        return f"{self.tag}-{student}"

    def accounts(self) -> list[pwd.struct_passwd]:
        return [a for a in pwd.getpwall() if a.pw_name.startswith(self.tag + "-")]


def files_owned_by(uids: set[int]) -> list[Path]:
    """Every file and folder owned by one of ``uids`` on the root file system and in /dev/shm."""
    if not uids:
        return []
    who = [arg for uid in sorted(uids) for arg in ("-o", "-uid", str(uid))][1:]
    found = subprocess.run(["find", *STUDENT_WRITABLE, "-xdev", "(", *who, ")", "-print0"],
                           capture_output=True, timeout=600)
    return sorted({Path(p.decode()) for p in found.stdout.split(b"\0") if p})


def _end_processes(uids: set[int], within: float = 30) -> None:
    """Whatever runs as one of ``uids`` gets SIGKILL, one pid at a time; wait until it is gone."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [p for p in psutil.process_iter(["uids"])
                if p.info["uids"] and p.info["uids"].real in uids]
        if not left:
            return
        for process in left:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(left, timeout=5)


def remove_students(throwaway: Throwaway) -> list[str]:
    """Every trace of the throwaway students: processes, files anywhere, users, homes, group. What
    could not be removed (empty when all went)."""
    accounts = throwaway.accounts()
    uids = {a.pw_uid for a in accounts}
    _end_processes(uids)
    homes = [Path(a.pw_dir) for a in accounts]
    problems = []
    for path in reversed(files_owned_by(uids)):              # deepest first
        if any(path == home or path.is_relative_to(home) for home in homes):
            continue                                         # userdel -r removes the homes
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            pass
        except OSError as failure:
            problems.append(f"{path}: {failure}")
    for account in accounts:
        gone = subprocess.run(["userdel", "-r", account.pw_name], capture_output=True, text=True)
        if gone.returncode not in (0, 12) or Path(account.pw_dir).exists():   # 12: a mail spool
            shutil.rmtree(account.pw_dir, ignore_errors=True)
            again = subprocess.run(["userdel", account.pw_name], capture_output=True)
            if again.returncode not in (0, 6):
                problems.append(f"userdel {account.pw_name}: {gone.stderr.strip()}")
    try:
        grp.getgrnam(throwaway.group)
        subprocess.run(["groupdel", throwaway.group], capture_output=True, check=True)
    except KeyError:
        pass
    except subprocess.CalledProcessError as failure:
        problems.append(f"groupdel {throwaway.group}: {failure.stderr!r}")
    return problems + [f"{a.pw_name} is still a user" for a in throwaway.accounts()]


@contextmanager
def throwaway_students() -> Iterator[Throwaway]:
    """A tag for the students the hub will create; afterwards, however the block ends, all gone."""
    tag = "t" + secrets.token_hex(3)
    throwaway = Throwaway(tag, f"{tag}-students")
    failed = True
    try:
        yield throwaway
        failed = False
    finally:
        problems = remove_students(throwaway)
        if problems and not failed:
            raise AssertionError(f"the throwaway students left traces: {problems}")
