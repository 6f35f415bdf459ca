"""Chapter 02: jsonschema without the time its optional format checkers spend at import.

``collector_paused`` keeps Python's cyclic garbage collector still while a large library is imported
(jsonschema here; sympy for the formulas): an import builds thousands of classes and functions that
live as long as the kernel, so the collections it triggers find nothing to free and cost a quarter
of the import or more (sympy: about 0.23 s of CPU with them, 0.17 s without).

Where JupyterLab's dependencies install them, ``import jsonschema`` imports every optional format
package: ``rfc3987_syntax`` builds a grammar (about a second), ``isoduration`` brings arrow and
dateutil, ``rfc3986_validator`` compiles a large pattern, on the first check of every kernel, for
formats (``iri``, ``duration``, ``uri``) the course never validates. ``import_jsonschema`` defers
those modules until a check of theirs really runs; then it is the real module, for everyone."""
from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import threading
import types
from contextlib import contextmanager
from typing import Any, Iterator

#: Each optional format module whose import-time work is deferred until a check needs it: the
#: functions jsonschema takes from it, and the error it names (raised in place of the real one).
DEFERRED = {"rfc3987_syntax": (("is_valid_syntax",), None),
            "rfc3986_validator": (("validate_rfc3986",), None),
            "isoduration": (("parse_duration",), "DurationParsingException")}
_LOCK = threading.Lock()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (an import), then as it was before."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def import_jsonschema() -> Any:
    """``jsonschema``, imported once; each of ``DEFERRED`` loads only when its format is checked."""
    with _LOCK:
        if "jsonschema" in sys.modules:
            return importlib.import_module("jsonschema")
        stand_ins = {name: _stand_in(name, *DEFERRED[name]) for name in DEFERRED
                     if name not in sys.modules and importlib.util.find_spec(name) is not None}
        sys.modules.update(stand_ins)
        try:
            with collector_paused():
                return importlib.import_module("jsonschema")
        finally:
            for name, stand_in in stand_ins.items():
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]


def _stand_in(name: str, functions: tuple[str, ...], error: str | None) -> types.ModuleType:
    """A module whose ``functions`` import the real one on their first call; and ``error``."""
    stand_in = types.ModuleType(name)
    real: list[Any] = []
    failed = type(error, (ValueError,), {"__module__": name}) if error else None

    def load() -> Any:
        if not real:
            with _LOCK:
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]
                real.append(importlib.import_module(name))
        return real[0]

    def deferred(function: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            module = load()
            try:
                return getattr(module, function)(*args, **kwargs)
            except Exception as exc:
                if failed is not None and isinstance(exc, getattr(module, error)):
                    raise failed(*exc.args) from exc     # the error jsonschema was told to expect
                raise
        call.__name__ = function
        return call

    for function in functions:
        setattr(stand_in, function, deferred(function))
    if failed is not None:
        setattr(stand_in, error, failed)
    return stand_in
