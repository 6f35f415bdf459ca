"""Chapters 01 and 08: the recorded vendor messages shipped in ``toolkit/wire/recordings``.

Written in each vendor's documented shape (no network involved); ``fixture`` reads one by name."""
from __future__ import annotations

import json
import re
from importlib.resources import files
from typing import Any

_FIXTURE_NAME = re.compile(r"[a-z0-9_]+\.(json|txt)")


def fixture(name: str) -> Any:
    """A recorded example message: parsed JSON for ``*.json``, the raw stream text for ``*.txt``."""
    if not _FIXTURE_NAME.fullmatch(name):
        raise ValueError(f"not a fixture name: {name!r}")
    text = (files("toolkit.wire") / "recordings" / name).read_text(encoding="utf-8")
    return json.loads(text) if name.endswith(".json") else text


def fixture_names() -> list[str]:
    """The recorded example messages shipped in ``toolkit/wire/recordings``."""
    return sorted(p.name for p in (files("toolkit.wire") / "recordings").iterdir()
                  if _FIXTURE_NAME.fullmatch(p.name))
