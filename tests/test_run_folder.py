"""A test run keeps its temporary folders in one folder, which the root conftest.py removes at the end.

Here: that folder is the temporary directory of this process and of what the tests start, and
pytest's own ``tmp_path`` folders are inside it too, so nothing is left in the machine's temporary
directory.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_tmp_path_lies_inside_the_runs_folder(tmp_path: Path):
    run = Path(os.environ["COURSE_TEST_TMPDIR"])
    assert run.name.startswith("course-tests-") and run.is_dir()
    assert run in tmp_path.parents
    assert os.environ["TMPDIR"] == str(run) and tempfile.gettempdir() == str(run)


def test_a_run_removes_its_folder_and_pytests_folders(tmp_path: Path):
    """A whole pytest run in a child, given a temporary directory of its own: it leaves nothing there."""
    machine_tmp = tmp_path / "machine-tmp"
    machine_tmp.mkdir()
    test = tmp_path / "test_writes.py"
    test.write_text("import tempfile\n\n\ndef test_writes(tmp_path):\n"
                    "    (tmp_path / 'x').write_text('x')\n"
                    "    tempfile.mkdtemp(prefix='left-')\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_TEST_TMPDIR", "PYTEST_XDIST_WORKER")}
    env["TMPDIR"] = str(machine_tmp)
    # the test file lies outside the repository, so the root conftest.py is loaded by name (-p)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-n", "0",
                           "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), str(test)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    assert list(machine_tmp.iterdir()) == [], "the run left something in the temporary directory"
