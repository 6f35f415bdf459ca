"""Chapters 01 and 08: a preview is not a call: what a display may show while a call is still arriving.

Only the text so far and the keys whose names have fully arrived: ``Preview`` holds exactly that
and is not a ``ToolCall``, so an executor refuses it. ``KeyScanner`` reads each character once,
however many previews are asked for, tracks at most ``MAX_DEPTH`` levels, and applies the
redaction rule (``toolkit._show``) before the JSON is whole: a secret-named key's value is masked
whatever comes next, and later repeats of it and credential shapes too."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from toolkit._caps import MAX_DEPTH, MAX_SECRETS_REMEMBERED
from toolkit._show import REDACTED, is_secret_name, pointer_for, scrub, secret_values, shorten, spellings

#: What the text of a preview shows instead of a secret-named field's value.
MASK = json.dumps(REDACTED)
#: Characters a credential shape (``toolkit._show.TOKEN_SHAPES``) can be made of, read from the end backwards.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9._~+/=\s-]*")
#: The most characters of a preview's text left unsettled, waiting for a credential to finish arriving.
_UNSETTLED = 4096
STOPPED = " [preview stopped: too many secret values to mask]"


@dataclass(frozen=True)
class Preview:
    """What a display may show of a call still arriving: ``text`` (secrets masked) and ``keys``."""

    index: int
    call_id: str | None
    name: str | None
    text: str
    keys: tuple[str, ...]
    fragments: int

    def line(self, width: int = 40) -> str:
        """One display line, e.g. ``#0 read_file  18 chars  keys $.path  | { "path": "src/co``."""
        shown = shorten(self.text, width, keep_end=True)
        keys = ", ".join(self.keys) or "-"
        return f"#{self.index} {self.name or '?'}  {len(self.text)} chars  keys {keys}  | {shown}"


class KeyScanner:
    """Finds the keys in partial JSON incrementally (``keys``) and masks secrets (``text()``)."""

    _OUTSIDE = re.compile(r'[{}\[\]",:]')
    _INSIDE = re.compile(r'["\\]')
    _VALUE = re.compile(r"\S")

    def __init__(self, secret_fields: Iterable[str] = ()) -> None:
        self.secret_fields = frozenset(secret_fields)
        self.stack: list[list[Any]] = []   # ["{", current key or None, expecting a key] or ["[", index]
        self.depth = 0                     # the real nesting; ``stack`` holds at most MAX_DEPTH frames
        self.in_string = False
        self.escape = False
        self.is_key = False
        self.key_parts: list[str] = []
        self.keys: list[str] = []
        self._listed: set[str] = set()
        self._shown: list[str] = []        # text not yet settled by ``text()``, secret values left out
        self._clean = ""                   # settled text: secret values and credential shapes masked
        self._unsettled = ""               # the tail a credential may still be arriving in
        self._hide_at: int | None = None   # the depth of the object whose secret value is hidden
        self._secret_key = False           # a secret key arrived: hide from its value's first character
        self._hidden: list[str] = []       # the secret value arriving now (kept only until it is complete)
        self._secrets: set[str] = set()    # secret values seen: masked wherever later text repeats them
        self._forms: list[str] = []        # their spellings, longest first
        self._flooded = False              # too many secret values to mask cheaply: show no more text

    def text(self) -> str:
        """The text so far, secrets and credential shapes masked, settled once up to what cannot
        still be a credential arriving (at most ``_UNSETTLED`` characters wait)."""
        if self._flooded:
            self._shown = []
            return self._clean + STOPPED
        if self._shown:
            pending = self._unsettled + "".join(self._shown)
            for form in self._forms:                     # complete repeats of a known secret, first
                pending = pending.replace(form, REDACTED)
            self._shown = []
            tail = pending[-_UNSETTLED:]
            run = _TOKEN_RUN.match(tail[::-1]).end()      # the trailing run a credential may still extend
            keep = max(run, max(map(len, self._forms), default=1) - 1)   # or a known secret, still arriving
            settle = max(len(pending) - min(keep, len(tail)), 0)
            self._clean += scrub(pending[:settle], ())
            self._unsettled = pending[settle:]
        return self._clean + self._masked_tail() if self._unsettled else self._clean

    def _masked_tail(self) -> str:
        """The unsettled tail as shown: a credential or a known secret still arriving is masked too."""
        tail = scrub(self._unsettled, ())
        for form in self._forms:
            for cut in range(min(len(form), len(tail)) - 1, 3, -1):
                if tail.endswith(form[:cut]):
                    return tail[:-cut] + REDACTED
        return tail

    def feed(self, text: str) -> str:
        """Scan one more fragment; returns what of it a display may show (a secret value starts ``MASK``)."""
        i, n, start = 0, len(text), 0         # ``start``: where the next shown (or hidden) span begins
        before = len(self._shown)
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
                    break
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
            if self._secret_key:
                m = self._VALUE.search(text, i)
                if not m:
                    break
                self._secret_key, i = False, m.start()
                self._shown += [text[start:i], MASK]
                self._hide_at, start = self.depth, i
            m = self._OUTSIDE.search(text, i)
            if not m:
                break
            ch = m.group()
            if self._hide_at is not None and self.depth == self._hide_at and ch in ",}]":
                self._remember(text[start:m.start()])
                self._hide_at, start = None, m.start()   # the secret value ended: show from here on
            self._punct(ch)
            i = m.end()
        if self._hide_at is None:
            self._shown.append(text[start:])             # a hidden value's characters are never shown
        elif not self._flooded:
            self._hidden.append(text[start:])
        return "".join(self._shown[before:])

    def _remember(self, last: str) -> None:
        """A secret value is complete: keep its text values, so free text that repeats them is masked too."""
        raw, self._hidden = "".join(self._hidden) + last, []
        if self._flooded:
            return
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw.strip().strip('"')
        self._secrets |= secret_values({"secret": value})
        if len(self._secrets) > MAX_SECRETS_REMEMBERED:
            self._flooded = True
        self._forms = spellings(self._secrets)

    def _punct(self, ch: str) -> None:
        tracked = self.depth == len(self.stack)       # the top frame is the innermost level
        top = self.stack[-1] if self.stack and tracked else None
        if ch in "{[":
            if tracked and self.depth < MAX_DEPTH:
                self.stack.append(["{", None, True] if ch == "{" else ["[", 0])
            self.depth += 1
        elif ch in "}]":
            if self.depth:
                if self.depth == len(self.stack):
                    self.stack.pop()
                self.depth -= 1
        elif ch == '"':
            self.in_string = True
            self.is_key = bool(top and top[0] == "{" and top[2])
            self.key_parts = []
        elif ch == ":" and top and top[0] == "{":
            top[2] = False
            if top[1] is not None and self._hide_at is None and is_secret_name(str(top[1]), self.secret_fields):
                self._secret_key = True
        elif ch == "," and top:
            if top[0] == "{":
                top[2] = True
            else:
                top[1] += 1

    def _key_done(self) -> None:
        raw = "".join(self.key_parts)
        self.key_parts = []
        try:
            key = json.loads(f'"{raw}"')
        except ValueError:
            key = raw
        self.stack[-1][1] = key
        if self._hide_at is not None:
            return                                    # keys inside a hidden value are not shown either
        pointer = pointer_for(tuple(frame[1] for frame in self.stack))
        if pointer not in self._listed:
            self._listed.add(pointer)
            self.keys.append(pointer)
