"""Chapter 02: jsonschema without the second its optional format checkers spend at import.

Where JupyterLab installs them, ``import jsonschema`` imports every optional format package, and
``rfc3987_syntax`` builds a grammar at import (a second, in every kernel) for ``format: iri``, which
the course never validates: ``import_jsonschema`` defers it until an ``iri`` check runs, then loads
the real one. ``imported`` keeps the garbage collector still during a large import (SDKs, sympy)."""
from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

#: The optional format module whose import-time work is deferred until a check needs it.
DEFERRED = "rfc3987_syntax"
_LOCK = threading.Lock()


def imported(name: str) -> Any:
    """``import_module(name)`` with the garbage collector paused: it would find nothing to free."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        if was_on:
            gc.enable()


def import_jsonschema() -> Any:
    """``jsonschema``, imported once, with ``DEFERRED`` loaded only when an ``iri`` format is really checked."""
    with _LOCK:
        if "jsonschema" in sys.modules or DEFERRED in sys.modules or importlib.util.find_spec(DEFERRED) is None:
            return imported("jsonschema")
        stand_in = types.ModuleType(DEFERRED)
        stand_in.is_valid_syntax = _deferred_is_valid_syntax()
        sys.modules[DEFERRED] = stand_in
        try:
            return imported("jsonschema")
        finally:
            if sys.modules.get(DEFERRED) is stand_in:
                del sys.modules[DEFERRED]


def _deferred_is_valid_syntax() -> Any:
    """The one function jsonschema takes from ``DEFERRED``: it imports the real module on first call."""
    real: list[Any] = []

    def is_valid_syntax(*args: Any, **kwargs: Any) -> Any:
        if not real:
            with _LOCK:      # import_jsonschema took the stand-in out of sys.modules already
                real.append(importlib.import_module(DEFERRED).is_valid_syntax)
        return real[0](*args, **kwargs)

    return is_valid_syntax
