"""Chapter 02: jsonschema without the second its optional format checkers spend at import.

Where JupyterLab's dependencies install them, ``import jsonschema`` imports every optional format
package, and ``rfc3987_syntax`` builds a grammar at import: about a second on the first check of
every kernel, for ``format: iri``, which the course never validates. ``import_jsonschema`` defers
that one module until an ``iri`` check really runs; then it is the real module, for everyone."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

#: The optional format module whose import-time work is deferred until a check needs it.
DEFERRED = "rfc3987_syntax"
_LOCK = threading.Lock()


def import_jsonschema() -> Any:
    """``jsonschema``, imported once, with ``DEFERRED`` loaded only when an ``iri`` format is really checked."""
    with _LOCK:
        if "jsonschema" in sys.modules or DEFERRED in sys.modules or importlib.util.find_spec(DEFERRED) is None:
            return importlib.import_module("jsonschema")
        stand_in = types.ModuleType(DEFERRED)
        stand_in.is_valid_syntax = _deferred_is_valid_syntax(stand_in)
        sys.modules[DEFERRED] = stand_in
        try:
            return importlib.import_module("jsonschema")
        finally:
            if sys.modules.get(DEFERRED) is stand_in:
                del sys.modules[DEFERRED]


def _deferred_is_valid_syntax(stand_in: types.ModuleType) -> Any:
    """The one function jsonschema takes from ``DEFERRED``: it imports the real module on first call."""
    real: list[Any] = []

    def is_valid_syntax(*args: Any, **kwargs: Any) -> Any:
        if not real:
            with _LOCK:
                if sys.modules.get(DEFERRED) is stand_in:
                    del sys.modules[DEFERRED]
                real.append(importlib.import_module(DEFERRED).is_valid_syntax)
        return real[0](*args, **kwargs)

    return is_valid_syntax
