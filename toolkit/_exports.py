"""Chapters 00-08: how each part of the package names its public parts, loading a module only when it is used.

Every sub-package's ``__init__`` is a table ``{module: (names it defines, ...)}``; a module is
imported on first use of one of its names, so ``import toolkit`` stays light."""
from __future__ import annotations

from importlib import import_module
from typing import Any, Callable, Mapping


def lazy_exports(package: str, table: Mapping[str, tuple[str, ...]]) -> tuple[Callable, Callable, list[str]]:
    """``(__getattr__, __dir__, __all__)`` for a package whose public names are listed by defining module."""
    home = {name: module for module, names in table.items() for name in names}
    namespace = import_module(package).__dict__

    def attribute(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home[name]}"), name)
        namespace[name] = value            # found once, then an ordinary attribute
        return value

    def listing() -> list[str]:
        return sorted(set(namespace) | set(home))

    return attribute, listing, sorted(home)
