"""Chapters 01 and 08: a preview is not a call: what a display may show while a call is still arriving.

While fragments arrive, the only honest things to show are the raw text so
far and the keys whose names have fully arrived. ``Preview`` holds exactly
that and is a different type from ``ToolCall``, so an executor handed one
refuses it (``toolkit.core.host.not_a_call``). ``KeyScanner`` finds the keys
in partial JSON incrementally: each character is read once, however many
previews are asked for.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from toolkit.core import pointer_for


@dataclass(frozen=True)
class Preview:
    """What a progress display may show while a call is still arriving.

    Deliberately *not* a ``ToolCall``: it has no ``arguments``, only ``text``
    (the raw characters so far) and ``keys`` (JSON paths of the keys whose
    names have fully arrived, e.g. ``$.path``). No value is ever guessed: a
    half-sent ``"amount": 1`` may be the start of ``100``.
    """

    index: int
    call_id: str | None
    name: str | None
    text: str
    keys: tuple[str, ...]
    fragments: int

    def line(self, width: int = 40) -> str:
        """One display line, e.g. ``#0 read_file  18 chars  keys $.path  | { "path": "src/co``."""
        shown = self.text if len(self.text) <= width else "..." + self.text[-(width - 3):]
        keys = ", ".join(self.keys) or "-"
        return f"#{self.index} {self.name or '?'}  {len(self.text)} chars  keys {keys}  | {shown}"


class KeyScanner:
    """Finds the keys in partial JSON text, incrementally (each character is read once)."""

    _OUTSIDE = re.compile(r'[{}\[\]",:]')
    _INSIDE = re.compile(r'["\\]')

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []   # ["{", current key or None, expecting a key] or ["[", index]
        self.in_string = False
        self.escape = False
        self.is_key = False
        self.key_parts: list[str] = []
        self.keys: list[str] = []

    def feed(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n:
            if self.in_string:
                if self.escape:
                    self.escape = False
                    if self.is_key:
                        self.key_parts.append(text[i])
                    i += 1
                    continue
                m = self._INSIDE.search(text, i)
                end = m.start() if m else n
                if self.is_key:
                    self.key_parts.append(text[i:end])
                if not m:
                    return
                if m.group() == "\\":
                    self.escape = True
                    if self.is_key:
                        self.key_parts.append("\\")
                else:
                    self.in_string = False
                    if self.is_key:
                        self._key_done()
                i = end + 1
                continue
            m = self._OUTSIDE.search(text, i)
            if not m:
                return
            self._punct(m.group())
            i = m.end()

    def _punct(self, ch: str) -> None:
        top = self.stack[-1] if self.stack else None
        if ch == "{":
            self.stack.append(["{", None, True])
        elif ch == "[":
            self.stack.append(["[", 0])
        elif ch in "}]":
            if self.stack:
                self.stack.pop()
        elif ch == '"':
            self.in_string = True
            self.is_key = bool(top and top[0] == "{" and top[2])
            self.key_parts = []
        elif ch == ":" and top and top[0] == "{":
            top[2] = False
        elif ch == "," and top:
            if top[0] == "{":
                top[2] = True
            else:
                top[1] += 1

    def _key_done(self) -> None:
        raw = "".join(self.key_parts)
        try:
            key = json.loads(f'"{raw}"')
        except ValueError:
            key = raw
        self.stack[-1][1] = key
        path = tuple(frame[1] for frame in self.stack)
        pointer = pointer_for(path)
        if pointer not in self.keys:
            self.keys.append(pointer)
