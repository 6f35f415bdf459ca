"""Chapter 05: the child processes of the crash scenarios, and how none of them outlives its run.

``process_context`` picks the ``multiprocessing`` start method (fork where the
platform has it: fast, nothing re-imported; else spawn). ``reap`` waits for a
child and kills it if it is still there: every harness registers it on an
``ExitStack`` (or calls it in ``stop()``), so a run that fails halfway leaves
no process behind.
"""
from __future__ import annotations

from typing import Any


def default_start_method() -> str:
    """fork where available (fast, nothing re-imported), else spawn."""
    import multiprocessing

    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def process_context(context: Any = None) -> Any:
    """A ``multiprocessing`` context: ``context`` itself, the start method it names, or the default."""
    import multiprocessing

    if context is None or isinstance(context, str):
        return multiprocessing.get_context(context or default_start_method())
    return context


def reap(process: Any, wait: float = 30, *, terminate: bool = False) -> None:
    """Wait up to ``wait`` seconds for ``process`` to end (asking it first with SIGTERM if ``terminate``); then kill it."""
    if terminate and process.is_alive():
        process.terminate()
    process.join(wait)
    if process.is_alive():  # a hung child is a bug; do not leave it behind
        process.kill()
        process.join(10)    # SIGKILL cannot be caught: this returns at once unless the kernel itself is stuck


__all__ = ["default_start_method", "process_context", "reap"]
