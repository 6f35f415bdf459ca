"""Chapters 01-09: a test run keeps its temporary folders in one folder, removed when it ends.

A scene's scratch folder (``course.worlds.ScratchFolder``: ``chapter01-*``, ``exercise03-*``,
``exercise09-*``) is removed when its kernel exits. nbval does not let a notebook's kernel exit:
it kills it (``shutdown_kernel(now=True)``), so no cleanup runs and every run of the suite used to
leave those folders in the machine's temporary directory.

The run therefore sets ``TMPDIR`` to a folder of its own (``course-tests-*``) before any worker,
kernel or server starts; they all inherit it, so whatever they leave behind is inside it, and the
folder is removed when the run ends. This process's own temporary files go there too (as an xdist
worker's do: it starts with ``TMPDIR`` set), and so do pytest's ``tmp_path`` folders (its base
folder, ``--basetemp``, unless one was given, is ``pytest`` inside it; each xdist worker's is a
folder inside that), so a run leaves nothing in the machine's temporary directory: not the course
copies and server logs of the browser tests, not pytest's last three runs. An xdist worker, or a
run started by a test, finds ``COURSE_TEST_TMPDIR`` already set and leaves the folder to the run
that made it.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

RUN_TMPDIR = "COURSE_TEST_TMPDIR"
_made: dict[str, str | None] = {}


@pytest.hookimpl(tryfirst=True)     # before pytest's own tmp_path plugin reads --basetemp
def pytest_configure(config) -> None:
    if os.environ.get(RUN_TMPDIR):
        return
    folder = tempfile.mkdtemp(prefix="course-tests-")
    _made.update(folder=folder, previous=os.environ.get("TMPDIR"), tempdir=tempfile.tempdir)
    os.environ["TMPDIR"] = os.environ[RUN_TMPDIR] = folder
    tempfile.tempdir = folder   # this process's own temporary files, as its workers' do
    if config.option.basetemp is None:
        config.option.basetemp = os.path.join(folder, "pytest")


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
    tempfile.tempdir = _made.pop("tempdir")
    shutil.rmtree(folder, ignore_errors=True)
