"""Chapters 01-09: a test run keeps its temporary folders in one folder, removed when it ends.

A scene's scratch folder (``course.worlds.ScratchFolder``: ``chapter01-*``, ``exercise03-*``,
``exercise09-*``) is removed when its kernel exits. nbval does not let a notebook's kernel exit:
it kills it (``shutdown_kernel(now=True)``), so no cleanup runs and every run of the suite used to
leave those folders in the machine's temporary directory.

The run therefore sets ``TMPDIR`` to a folder of its own (``course-tests-*``) before any worker,
kernel or server starts; they all inherit it, so whatever they leave behind is inside it, and the
folder is removed when the run ends. pytest's own ``tmp_path`` folders stay where they were (this
process had already chosen its temporary directory). An xdist worker, or a run started by a test,
finds ``COURSE_TEST_TMPDIR`` already set and leaves the folder to the run that made it.
"""
from __future__ import annotations

import os
import shutil
import tempfile

RUN_TMPDIR = "COURSE_TEST_TMPDIR"
_made: dict[str, str | None] = {}


def pytest_configure(config) -> None:
    if os.environ.get(RUN_TMPDIR):
        return
    tempfile.gettempdir()                       # this process keeps the temporary directory it had
    folder = tempfile.mkdtemp(prefix="course-tests-")
    _made.update(folder=folder, previous=os.environ.get("TMPDIR"))
    os.environ["TMPDIR"] = os.environ[RUN_TMPDIR] = folder


def pytest_unconfigure(config) -> None:
    folder = _made.pop("folder", None)
    if folder is None:
        return
    previous = _made.pop("previous")
    if previous is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = previous
    os.environ.pop(RUN_TMPDIR, None)
    shutil.rmtree(folder, ignore_errors=True)
