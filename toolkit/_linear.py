"""Chapter 02: a pattern is checked in time linear in the text: its ECMA-262 meaning, run by RE2.

An ECMA-262 engine backtracks: ``^(a+)+$`` takes seconds on 24 characters, and even ``\\d+x`` is
quadratic (half a second on 16,000 digits). RE2 never backtracks: every check costs at most the
text's length times the pattern's size. So a pattern is read by ``regress`` (what it means, and
whether it is an ECMA-262 pattern at all) and *run* by RE2, rewritten here so that RE2 accepts
exactly the texts ECMA-262 accepts: ``.`` stops at every line terminator, ``\\s`` is ECMA's white
space, ``\\uXXXX`` and ``\\cX`` are the characters they name. Whether a pattern matches depends
only on the set of texts it accepts, so greedy or lazy, capturing or not, the answer is the same.

What RE2 cannot run in linear time is refused when a contract is declared, with the reason:
lookaround and backreferences (I-Regexp, RFC 9485, the interoperable subset for JSON, leaves them
out too), a repetition over 1000, a program too large, a property RE2 does not know."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

_TOP = 0x10FFFF
#: ECMA-262 WhiteSpace and LineTerminator: what ``\\s`` means (RE2's ``\\s`` is ASCII only).
_SPACE = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
          (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
_DIGIT = ((0x30, 0x39),)
_WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_LINE_END = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_CLASSES = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CONTROL = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B}
_SYNTAX = set("^$\\.*+?()[]{}|/")
#: General categories by their long names (ECMA-262 accepts both; RE2 knows the short ones).
_CATEGORIES = {"Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
               "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M",
               "Number": "N", "Decimal_Number": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
               "Punctuation": "P", "Symbol": "S", "Separator": "Z", "Space_Separator": "Zs",
               "Other": "C", "Control": "Cc", "Format": "Cf"}


class Untranslatable(ValueError):
    """A valid ECMA-262 pattern RE2 cannot run with the same meaning (the message says why)."""


def _complement(ranges: tuple) -> tuple:
    out, low = [], 0
    for start, end in sorted(ranges):
        if start > low:
            out.append((low, start - 1))
        low = max(low, end + 1)
    return tuple(out + ([(low, _TOP)] if low <= _TOP else []))


def _ranges(ranges: tuple) -> str:
    return "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges)


def _hex(pattern: str, i: int, digits: int) -> tuple[int, int]:
    text = pattern[i:i + digits]
    if len(text) < digits or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise Untranslatable("a malformed escape")
    return int(text, 16), i + digits


def _property(pattern: str, i: int, negated: bool) -> tuple[str, int]:
    """``\\p{...}`` at ``pattern[i]`` (just after ``p``): the RE2 property that means the same."""
    end = pattern.find("}", i)
    if pattern[i:i + 1] != "{" or end < 0:
        raise Untranslatable("a malformed property escape")
    name, value = pattern[i + 1:end], None
    if "=" in name:
        key, value = name.split("=", 1)
        if key not in ("General_Category", "gc", "Script", "sc"):
            raise Untranslatable(f"the property {name!r} has no RE2 equivalent")
        name = value
    name = _CATEGORIES.get(name, name)
    if name == "ASCII":
        return ("[^" if negated else "[") + "\\x{0}-\\x{7F}]", end + 1
    if not name.replace("_", "").isalnum():
        raise Untranslatable(f"the property {name!r} has no RE2 equivalent")
    return f"\\{'P' if negated else 'p'}{{{name}}}", end + 1


def _escape(pattern: str, i: int, in_class: bool) -> tuple[Any, int]:
    """The escape at ``pattern[i]`` (a backslash): a code point, a tuple of ranges, or RE2 text."""
    c = pattern[i + 1:i + 2]
    i += 2
    if c in _CLASSES:
        return _CLASSES[c], i
    if c.lower() in _CLASSES:
        return _complement(_CLASSES[c.lower()]), i
    if c in "pP":
        return _property(pattern, i, c == "P")
    if c in "bB" and not in_class:
        return f"\\{c}", i
    if c == "b":
        return 0x08, i
    if c in _CONTROL:
        return _CONTROL[c], i
    if c == "0" and not pattern[i:i + 1].isdigit():
        return 0, i
    if c == "c" and pattern[i:i + 1].isascii() and pattern[i:i + 1].isalpha():
        return ord(pattern[i]) % 32, i + 1
    if c == "x":
        return _hex(pattern, i, 2)
    if c == "u" and pattern[i:i + 1] == "{":
        end = pattern.find("}", i)
        code, _ = _hex(pattern, i + 1, end - i - 1) if end > i + 1 else _hex("", 0, 1)
        return code, end + 1
    if c == "u":
        code, i = _hex(pattern, i, 4)
        if 0xD800 <= code < 0xDC00 and pattern[i:i + 2] == "\\u":
            low, after = _hex(pattern, i + 2, 4)
            if 0xDC00 <= low < 0xE000:
                return 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), after
        return code, i
    if c in _SYNTAX or (in_class and c == "-"):
        return ord(c), i
    if c.isdigit() or c == "k":
        raise Untranslatable("a backreference cannot be checked in linear time")
    raise Untranslatable(f"the escape \\{c} has no RE2 equivalent")


def _literal(code: int) -> str:
    if 0xD800 <= code < 0xE000:
        raise Untranslatable("a lone surrogate matches no UTF-8 text")
    return chr(code) if chr(code).isalnum() and code < 0x80 else f"\\x{{{code:X}}}"


def _class(pattern: str, i: int) -> tuple[str, int]:
    """The character class at ``pattern[i]`` (``[``) as an RE2 class."""
    i += 1
    negated = pattern[i:i + 1] == "^"
    i += negated
    pieces: list[str] = []
    while pattern[i:i + 1] != "]":
        if i >= len(pattern):
            raise Untranslatable("an unclosed class")
        item, i = _escape(pattern, i, True) if pattern[i] == "\\" else (ord(pattern[i]), i + 1)
        if isinstance(item, int) and pattern[i:i + 1] == "-" and pattern[i + 1:i + 2] not in "]":
            i += 1
            end, i = _escape(pattern, i, True) if pattern[i] == "\\" else (ord(pattern[i]), i + 1)
            if not isinstance(end, int):
                raise Untranslatable("a range ending in a class")
            item = ((item, end),)
        pieces.append(_ranges(item) if isinstance(item, tuple) else _ranges(((item, item),))
                      if isinstance(item, int) else item)
    if not pieces:   # [] matches nothing, [^] any character
        return ("[" if negated else "[^") + "\\x{0}-\\x{10FFFF}]", i + 1
    return ("[^" if negated else "[") + "".join(pieces) + "]", i + 1


def translate(pattern: str) -> str:
    """``pattern`` (a valid ECMA-262 pattern, ``u`` flag) as RE2 syntax accepting the same texts."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            item, i = _escape(pattern, i, False)
            out.append(item if isinstance(item, str) else _literal(item) if isinstance(item, int)
                       else f"[{_ranges(item)}]")
        elif c == "[":
            piece, i = _class(pattern, i)
            out.append(piece)
        elif c == "(":
            if pattern.startswith("(?:", i):
                i += 3
            elif pattern.startswith("(?<", i) and pattern[i + 3:i + 4] not in ("=", "!"):
                i = pattern.index(">", i) + 1      # a group's name changes nothing that matches
            elif pattern.startswith("(?", i):
                raise Untranslatable("lookaround cannot be checked in linear time")
            else:
                i += 1
            out.append("(?:")
        elif c == ".":
            out.append(f"[^{_ranges(_LINE_END)}]")
            i += 1
        elif c == "{":
            end = pattern.index("}", i)
            out.append(pattern[i:end + 1])
            i = end + 1
        elif c in "^$|)*+?":
            out.append(c)
            i += 1
        else:
            out.append(_literal(ord(c)))
            i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def linear_regex(pattern: str) -> Any:
    """The RE2 program for ``pattern`` (``Untranslatable`` when RE2 cannot run it the same way)."""
    import re2

    options = re2.Options()
    options.never_capture, options.log_errors = True, False
    try:
        return re2.compile(translate(pattern), options)
    except re2.error as exc:   # a repetition over 1000, a program over RE2's memory budget
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise Untranslatable(f"RE2 cannot run it ({reason})") from None
