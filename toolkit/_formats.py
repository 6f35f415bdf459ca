"""Chapter 02: jsonschema without the time its optional format checkers spend at import.

Where JupyterLab installs them, ``import jsonschema`` imports every optional format package:
``rfc3987_syntax`` builds a grammar (a second, in every kernel), ``isoduration`` loads ``arrow`` and
``dateutil``. ``import_jsonschema`` defers the modules in ``DEFERRED`` until a check of their format
really runs. ``imported`` keeps the garbage collector still during a large import (SDKs, sympy), then
freezes what it built."""
from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

#: The optional format modules whose import waits until a check needs them, and what jsonschema takes
#: from each: a function (the real module loads on its first call) or an exception class (stood in for
#: by ``ValueError``, its real class's base, so ``except`` still catches the real one).
DEFERRED = {"rfc3987_syntax": ("is_valid_syntax",), "rfc3986_validator": ("validate_rfc3986",),
            "isoduration": ("parse_duration", "DurationParsingException")}
_LOCK = threading.Lock()


def imported(name: str) -> Any:
    """``import_module(name)``, the garbage collector paused, then ``gc.freeze()``: what an import
    builds lives as long as the process, so no collection need free or walk it (chapter 09: -20%)."""
    if name in sys.modules:     # imported already: nothing to build, nothing new to freeze
        return sys.modules[name]
    was_on = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        gc.freeze()
        if was_on:
            gc.enable()


def import_jsonschema() -> Any:
    """``jsonschema``, imported once, each module of ``DEFERRED`` loaded only when its format is checked."""
    with _LOCK:
        if "jsonschema" in sys.modules:
            return sys.modules["jsonschema"]
        stand_ins = {name: _stand_in(name, taken) for name, taken in DEFERRED.items()
                     if name not in sys.modules and importlib.util.find_spec(name) is not None}
        sys.modules.update(stand_ins)
        try:
            return imported("jsonschema")
        finally:
            for name, stand_in in stand_ins.items():
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]


def _stand_in(name: str, taken: tuple[str, ...]) -> types.ModuleType:
    """A module ``name`` holding what jsonschema takes from it, the real module loaded on first call."""
    stand_in = types.ModuleType(name)
    vars(stand_in).update({a: ValueError if a.endswith("Exception") else _deferred(name, a) for a in taken})
    return stand_in


def _deferred(name: str, attribute: str) -> Any:
    """``name.attribute``, a function: it imports the real module on its first call."""
    real: list[Any] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not real:
            with _LOCK:      # import_jsonschema took the stand-in out of sys.modules already
                real.append(getattr(importlib.import_module(name), attribute))
        return real[0](*args, **kwargs)

    return call
