"""Chapter 05: the child processes of the crash scenarios, and how none of them outlives its run.

``process_context`` picks the ``multiprocessing`` start method (fork where the
platform has it: fast, nothing re-imported; else spawn). ``reap`` waits for a
child and kills it if it is still there: every harness registers it on an
``ExitStack`` (or calls it in ``stop()``), so a run that fails halfway leaves
no process behind.

``in_one_child`` runs a function that starts many processes from one forked
child, so the caller forks once: a Jupyter kernel flushes its output streams
at every fork (a round trip to its I/O thread), and that child does not.
"""
from __future__ import annotations

from typing import Any, Callable


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


def in_one_child(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` run in one forked child, which reaps whatever it starts; its (picklable) answer.

    Without fork it is simply called here. An exception in the child comes back as a ``RuntimeError`` with
    its message; the child is reaped before this returns or raises.
    """
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return function(*args)
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_answer_from_child, args=(function, args, send, receive))
    child.start()
    send.close()
    try:
        kind, value = receive.recv()
    except EOFError:
        kind, value = "error", "the child process ended without an answer"
    finally:
        receive.close()
        reap(child)
    if kind == "error":
        raise RuntimeError(value)
    return value


def _answer_from_child(function: Callable[..., Any], args: tuple, pipe: Any, other_end: Any) -> None:
    other_end.close()
    try:
        answer = ("ok", function(*args))
    except Exception as exc:     # the parent raises it again, with the same words
        answer = ("error", str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}")
    pipe.send(answer)
    pipe.close()


__all__ = ["default_start_method", "in_one_child", "process_context", "reap"]
