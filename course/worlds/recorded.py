"""Chapters 01, 08 and 09: the recorded vendor messages and raw streams the chapters replay.

They live in ``course/worlds/recordings``, written by hand in each vendor's documented shape (no
network involved, never captured from a model). ``fixture`` reads one by name: a request, a
response, a follow-up, or a stream body (the ``*_stream_cut.txt`` ones end in the middle of a
call's arguments, with no stop reason)."""
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
    text = (files("course.worlds") / "recordings" / name).read_text(encoding="utf-8")
    return json.loads(text) if name.endswith(".json") else text


def fixture_names() -> list[str]:
    """The recorded example messages in ``course/worlds/recordings``."""
    return sorted(p.name for p in (files("course.worlds") / "recordings").iterdir()
                  if _FIXTURE_NAME.fullmatch(p.name))
