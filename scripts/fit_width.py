"""Fit the code cells of notebooks to at most 100 characters a line, changing nothing they do.

    python scripts/fit_width.py notebooks/02_*.ipynb solutions/*.ipynb   # rewrite them in place
    python scripts/fit_width.py --check notebooks/*.ipynb   # write nothing; exit 1 on any change

A line wider than 100 characters is cut at 1280 px. Only what is too wide changes, so a cell keeps
the layout its author gave it everywhere else:

* a trailing comment that makes a line too wide moves up, onto a line of its own above it (or,
  when less padding is enough, only loses some, with the comments aligned beside it); a comment
  line too wide is wrapped onto more comment lines, as evenly as that many lines can be (a comment
  wrapped before with a last line of a word or two is rewrapped the same way);
* as the chapters are written by hand: a line breaks inside its brackets (after a comma, between
  strings Python joins, before ``+``/``and``/``or``/``if``/``else``/``for``), the rest under the
  bracket's first item, and the items after it flow on like a paragraph; a long string is cut in
  two joined strings (``"one " "string"``), after a clause where one ends late enough; an
  assert's message goes in parentheses on lines of its own; a long ``from m import a, b`` and a
  bare tuple or condition being returned or assigned get parentheses to break in;
* a statement still too wide after that is reformatted by black (``--line-ranges`` on that
  statement only, with its ``string_processing`` feature);
* a docstring line too wide is wrapped at the docstring's indentation.

A Python file given instead of a notebook is treated as one cell.

The rewritten cell must parse to the same program (the same syntax tree; a docstring may differ
in whitespace only), or the script stops with an error. Lines that are IPython syntax (``%magic``,
``!shell``, ``x = !ls``, ``name?``) are set aside while the cell is rewritten and put back as
they were; a cell opened by a cell magic (``%%bash``) is not Python and is left alone. Markdown
cells are never touched, and neither are outputs: run ``python scripts/run_notebooks.py`` on the
notebook afterwards to check that it prints what it printed before. A line no step can shorten
(a long word in a comment, a long string inside a triple-quoted string) is listed, and the
script exits with 1. Running it again on its own output changes nothing.
"""
from __future__ import annotations

import argparse
import ast
import functools
import io
import re
import sys
import textwrap
import tokenize
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_notebooks import stable_ids, text_of  # noqa: E402  (one writer for every stored notebook)

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 100
#: A line IPython reads as its own syntax: a line magic, a shell escape, help, or a captured one.
IPYTHON_LINE = re.compile(r"^\s*(?:[%!?]|[\w.]+\?\??\s*$|[\w.,\s()\[\]]+=\s*[%!])")
#: A wrapped comment whose last line holds this many characters or fewer is rewrapped evenly.
HANGING = 24
#: Comments that tools read where they stand: never moved.
PINNED_COMMENT = re.compile(r"#\s*(?:noqa|type:|fmt:|pragma|pylint:)|#+ (?:BEGIN|END) SOLUTION"
                            r"|# YOUR CODE HERE")
PLACEHOLDER = "__fit_width_ipython_line_{}__"
CLOSING = re.compile(r"[)\]}]*,?")
DEEPEST = 60        # a line continues at most this far right (under its bracket's first item)
SHORTEST = 15       # characters a cut string keeps before it, and a break leaves in its bracket


class Unchanged(Exception):
    """A cell this script cannot read as Python (a cell magic, a syntax error): left as it is."""


def wide(source: str) -> list[int]:
    """The 1-based numbers of the lines of ``source`` wider than WIDTH."""
    return [n for n, line in enumerate(source.split("\n"), start=1) if len(line) > WIDTH]


# ------------------------------------------------------------------ IPython syntax, set aside
def set_aside(source: str) -> tuple[str, dict[str, str]]:
    """``source``, each IPython line replaced by a placeholder name; and the lines to put back."""
    lines = source.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        raise Unchanged("a cell magic")
    kept: dict[str, str] = {}
    for n, line in enumerate(lines):
        if IPYTHON_LINE.match(line):
            name = PLACEHOLDER.format(len(kept))
            kept[name] = line
            lines[n] = line[: len(line) - len(line.lstrip())] + name
    return "\n".join(lines), kept


def put_back(source: str, kept: dict[str, str]) -> str:
    lines = source.split("\n")
    for n, line in enumerate(lines):
        name = line.strip()
        if name in kept:
            lines[n] = kept.pop(name)
    if kept:
        raise Unchanged("an IPython line did not come back whole")
    return "\n".join(lines)


# ------------------------------------------------------------------ comments
def comments(source: str) -> dict[int, int]:
    """line number -> column of the comment on that line (tokenize knows what is in a string)."""
    return {t.start[0]: t.start[1] for t in tokens_of(source, ()) if t.type == tokenize.COMMENT}


def wrap_comment(indent: str, comment: str) -> list[str]:
    """A comment as lines of at most WIDTH characters at ``indent`` (a long word stays whole), as
    even as that many lines can be: no last line of a word or two left hanging."""
    body = comment.lstrip("#")
    lead = "#" * (len(comment) - len(body)) + body[: len(body) - len(body.lstrip())]
    width = max(WIDTH - len(indent) - len(lead), 20)
    wrap = functools.partial(textwrap.wrap, body.strip(), break_long_words=False,
                             break_on_hyphens=False)
    pieces = wrap(width)
    even = min((w for w in range(max(len(body.strip()) // max(len(pieces), 1), 1), width)
                if len(wrap(w)) == len(pieces)), default=width)
    return [indent + lead + piece for piece in wrap(even)] or [indent + comment]


def balance_comments(source: str) -> str:
    """Rewrap each paragraph of comment lines that a cut at WIDTH left with a short last line
    (``HANGING`` characters or fewer after the ``#``), as evenly as ``wrap_comment`` does."""
    lines = source.split("\n")
    where = comments(source)

    def alone(n: int, column: int) -> bool:   # a comment on a line of its own, at ``column``
        comment = lines[n - 1][column:] if where.get(n) == column else ""
        return (comment.startswith("# ") and not lines[n - 1][:column].strip()
                and not PINNED_COMMENT.match(comment))

    out: list[str] = []
    number = 1
    while number <= len(lines):
        column, last = where.get(number), number
        if column is not None and alone(number, column):
            while last < len(lines) and alone(last + 1, column):
                last += 1
        paragraph = lines[number - 1:last]
        if (len(paragraph) > 1 and all(len(line) > WIDTH - 25 for line in paragraph[:-1])
                and len(paragraph[-1][column:]) - 2 <= HANGING):
            text = " ".join(line[column + 2:].strip() for line in paragraph)
            paragraph = wrap_comment(lines[number - 1][:column], "# " + text)
        out.extend(paragraph)
        number = last + 1
    return "\n".join(out)


def fit_comments(source: str) -> str:
    """Shorten the lines a trailing comment makes too wide; wrap comment lines too wide.

    A trailing comment keeps its place when less padding is enough: the comments aligned with it
    (the same column, on the lines next to it) move left with it, still aligned. Otherwise it
    goes on a line of its own above its code.
    """
    lines = source.split("\n")
    where = comments(source)
    for number in [n for n in where if len(lines[n - 1]) > WIDTH]:
        line = lines[number - 1]
        column = where[number]
        if PINNED_COMMENT.match(line[column:]) or not line[:column].strip():
            continue
        group = [number]
        for step in (-1, 1):
            n = number + step
            while where.get(n) == column and lines[n - 1][:column].strip():
                group.append(n)
                n += step
        to = max(len(lines[n - 1][:column].rstrip()) for n in group) + 2
        if all(to + len(lines[n - 1][column:]) <= WIDTH for n in group):
            for n in group:
                lines[n - 1] = lines[n - 1][:column].rstrip().ljust(to) + lines[n - 1][column:]
            where.update({n: to for n in group})
    out: list[str] = []
    for number, line in enumerate(lines, start=1):
        column = where.get(number)
        if len(line) <= WIDTH or column is None or PINNED_COMMENT.match(line[column:]):
            out.append(line)
            continue
        code, comment = line[:column].rstrip(), line[column:].rstrip()
        indent = line[: len(line) - len(line.lstrip())]
        if code and out and out[-1].rstrip().endswith("\\"):
            out.append(line)         # inside a backslash continuation: no line may go between
            continue
        out.extend(wrap_comment(indent, comment))
        if code:
            out.append(code)
    return "\n".join(out)


# ------------------------------------------------------------------ assert messages
def last_first(source: str, keep: Callable[[ast.AST], bool]) -> list[ast.AST]:
    """The nodes of ``source``'s syntax tree that ``keep`` keeps, the last first (so that rewriting
    one leaves the lines of those still to come where they were)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise Unchanged(f"not Python: {exc}") from exc
    return sorted(filter(keep, ast.walk(tree)), key=lambda node: node.lineno, reverse=True)


def fit_asserts(source: str) -> str:
    """Give a too-wide ``assert test, "message"`` its message on a line of its own, in parentheses.

    black would rather split the test (``assert (``, the test, ``), "message"``), which reads
    worse; a message still too wide on its own line is left to black, which keeps the parentheses.
    """
    found = last_first(source, lambda node: isinstance(node, ast.Assert)
                       and isinstance(node.msg, (ast.Constant, ast.JoinedStr)))
    lines = source.split("\n")
    too_wide = set(wide(source))
    where = comments(source)
    for node in found:
        span = range(node.lineno, node.end_lineno + 1)
        test = ast.get_source_segment(source, node.test)
        message = ast.get_source_segment(source, node.msg).split("\n")
        between = text_between(lines, (node.test.end_lineno, node.test.end_col_offset),
                               (node.msg.lineno, node.msg.col_offset))
        after = lines[node.end_lineno - 1][node.msg.end_col_offset:].strip()
        head = lines[node.lineno - 1]
        if (not too_wide & set(span) or any(n in where for n in span) or "\n" in test
                or node.msg.end_lineno != node.end_lineno or head[: node.col_offset].strip()
                or after != (")" if "(" in between else "")):
            continue
        indent = head[: node.col_offset]
        first = f"{indent}assert {test}, ("
        if len(first) > WIDTH:
            continue
        pieces = [piece.strip().rstrip("\\").rstrip() for piece in message]   # no backslashes
        pieces = split_strings(pieces, indent + " " * 4)
        lines[node.lineno - 1: node.end_lineno] = [first, *pieces, f"{indent})"]
    return "\n".join(lines)


def split_strings(pieces: list[str], indent: str) -> list[str]:
    """Lines at ``indent`` for the joined strings ``pieces``: from the first one too wide on, the
    text is cut again as it flows, each cut's rest joined to the next piece."""
    lines: list[str] = []
    queue = list(pieces)
    while queue:
        piece = queue.pop(0)
        cut = cut_string(piece, WIDTH - len(indent)) if len(indent + piece) > WIDTH else None
        if cut is None:
            lines.append(indent + piece)
            continue
        lines.append(indent + cut[0])
        merged = join_strings(cut[1], queue[0]) if queue else None
        if merged:
            queue[0] = merged
        else:
            queue.insert(0, cut[1])
    return lines


def text_between(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The source from ``start`` to ``end``, (1-based line, column) pairs as ast gives them."""
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1]: end[1]]
    middle = lines[start[0]: end[0] - 1]
    return "\n".join([lines[start[0] - 1][start[1]:], *middle, lines[end[0] - 1][: end[1]]])
    return "\n".join(lines)


# ------------------------------------------------------------------ inside brackets, filled
BREAK_BEFORE = ("+", "and", "or", "if", "else", "for")
SKIPPED = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
           tokenize.ENDMARKER)


def tokens_of(source: str, skipped: tuple[int, ...] = SKIPPED) -> list[tokenize.TokenInfo]:
    """The tokens that carry code (no line ends, comments or indentation; ``skipped=()``: all)."""
    try:
        found = list(tokenize.generate_tokens(io.StringIO(source + "\n").readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise Unchanged(f"not Python: {exc}") from exc
    return [t for t in found if t.type not in skipped]


def breaks(source: str) -> tuple[dict[int, list[tuple[int, int, int, int]]], dict[int, tuple]]:
    """line -> places a line may break inside brackets: (depth, end of the first part, column the
    rest starts at, column the rest goes to: under the bracket's first item, or under the first
    of the strings it joins); and line -> (depth at its end, its last token).

    A line breaks after a comma (not one between ``for`` and ``in``, or in a lambda's parameters),
    between two strings that Python joins, and before ``+``, ``and``, ``or``, ``if``, ``else`` and
    ``for``; never where the bracket closes on the same line less than SHORTEST characters later
    (but between strings: the rest of a cut string may be short).
    """
    tokens = tokens_of(source)
    stack: list[list] = []      # per open bracket: [column of its first item, inside a target,
    found: dict[int, list[tuple[int, int, int, int]]] = {}     # its breaks so far]
    ends: dict[int, tuple] = {}
    strings_from = 0            # column of the first of the strings Python joins to this one
    for here, token in enumerate(tokens):
        if stack and stack[-1][0] < 0:
            stack[-1][0] = token.start[1]
        joins_last = here > 0 and tokens[here - 1].type == tokenize.STRING
        if token.type == tokenize.STRING and not joins_last:
            strings_from = token.start[1]
        if token.type == tokenize.OP and token.string in "([{":
            stack.append([-1, False, []])
        elif token.type == tokenize.OP and token.string in ")]}" and stack:
            for row, place, joins in stack.pop()[2]:
                if joins or row != token.start[0] or token.start[1] - place[2] >= SHORTEST:
                    found.setdefault(row, []).append(place)
        elif stack and token.string in ("for", "lambda"):
            stack[-1][1] = True
        elif stack and token.string in ("in", ":"):
            stack[-1][1] = False
        ends[token.end[0]] = (len(stack), token.string)
        following = tokens[here + 1] if here + 1 < len(tokens) else None
        if not stack or following is None or following.start[0] != token.end[0]:
            continue
        after_comma = token.string == "," and not stack[-1][1]
        joined = token.type == following.type == tokenize.STRING
        before = following.string in BREAK_BEFORE and token.string not in "([{"
        if after_comma or joined or before:
            under = strings_from if joined else stack[-1][0]
            place = (len(stack), token.end[1], following.start[1], under)
            stack[-1][2].append((token.end[0], place, joined))
    return found, ends


def fill(source: str) -> str:
    """Break each line too wide inside its brackets, the rest under the bracket's first item.

    The break is at the outermost bracket that can give one, as far right as fits; a line with
    no such break is left for the next step. When the line went on, after a comma, on a next line
    under the same place, the rest joins that line (which is then filled in turn), so the items
    flow as a paragraph does.
    """
    for _ in range(200):
        lines = source.split("\n")
        places, ends = breaks(source)
        where = comments(source)
        for number in wide(source):
            line = lines[number - 1]
            fits = [(depth, -end, start, under)
                    for depth, end, start, under in places.get(number, ())
                    if end <= WIDTH and under < start and under <= DEEPEST]
            if fits:
                depth, left_of, start, under = min(fits)      # the outermost, then the rightmost
                rest = " " * under + line[start:]
                after = lines[number] if number < len(lines) else ""
                if (ends.get(number) == (depth, ",") and number not in where
                        and after[under:under + 1].strip()
                        and not after[:under].strip() and not after.lstrip().startswith("#")):
                    lines[number - 1: number + 1] = [line[:-left_of].rstrip(),
                                                     f"{rest} {after.strip()}"]
                else:
                    lines[number - 1: number] = [line[:-left_of].rstrip(), rest]
                break
        else:
            return source
        source = "\n".join(lines)
    return source


def bracket_imports(source: str) -> str:
    """Put the names of a too-wide one-line ``from module import a, b`` in parentheses, to fill."""
    lines = source.split("\n")
    for number in wide(source):
        line = lines[number - 1]
        head, sep, names = line.partition(" import ")
        if (sep and head.lstrip().startswith("from ") and "(" not in names and "#" not in names
                and number not in comments(source)):
            lines[number - 1] = f"{head} import ({names.strip()})"
    return "\n".join(lines)


def bracket_values(source: str) -> str:
    """Put in parentheses the value of a too-wide one-line ``return`` or assignment when it is a
    tuple, a condition or an operation (what has no brackets of its own to break in)."""
    too_wide = set(wide(source))
    bare = (ast.Tuple, ast.BoolOp, ast.IfExp, ast.BinOp, ast.Compare)

    def kept(node: ast.AST) -> bool:     # a return or an assignment of a bare value, on one line
        return (isinstance(node, (ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign))
                and isinstance(node.value, bare) and node.lineno == node.end_lineno in too_wide)

    found = last_first(source, kept)
    lines = source.split("\n")
    for value in (node.value for node in found):
        line = lines[value.lineno - 1]
        if line[value.col_offset] != "(" and line[: value.col_offset].rstrip()[-1:] != "(":
            lines[value.lineno - 1] = (line[: value.col_offset] + "(" + line[value.col_offset:
                                       value.end_col_offset] + ")" + line[value.end_col_offset:])
    return "\n".join(lines)


def cut_string(token: str, room: int) -> tuple[str, str] | None:
    """A one-line string literal as two literals Python joins, the first at most ``room`` wide and
    ending in a space, after a clause (``.,:;``) when one ends late enough; None when there is no
    such space outside an f-string's replacement fields (or ``token`` is not one literal)."""
    if [t.type for t in tokens_of(token)] != [tokenize.STRING]:
        return None
    prefix = token[: len(token) - len(token.lstrip("rRbBuUfF"))]
    quote, body = token[len(prefix)], token[len(prefix) + 1: -1]
    if body.startswith(quote * 2) or not body:
        return None                                  # triple-quoted
    formatted, raw = "f" in prefix.lower(), "r" in prefix.lower()
    depth, n, spaces = 0, 0, []
    while n < len(body):
        char = body[n]
        if char == "\\" and not raw:
            n += 2
            continue
        if formatted and char in "{}":
            if depth == 0 and body[n: n + 2] in ("{{", "}}"):
                n += 2
                continue
            depth += 1 if char == "{" else -1
        elif char == " " and depth == 0 and len(prefix) + n + 3 <= room:
            spaces.append(n)
        n += 1
    spaces = [n for n in spaces if SHORTEST <= n < len(body) - 1]
    if not spaces:
        return None
    clauses = [n for n in spaces if body[n - 1] in ".,:;" and n >= 0.6 * spaces[-1]]
    at = (clauses or spaces)[-1]
    first, rest = body[: at + 1], body[at + 1:]

    def literal(text: str) -> str:
        """A piece with no replacement field is a plain string (``{{`` in it would need the f)."""
        plain = formatted and not any(c in text for c in "{}")
        return (re.sub("[fF]", "", prefix) if plain else prefix) + quote + text + quote

    return literal(first), literal(rest)


def join_strings(first: str, second: str) -> str | None:
    """Two one-line literals as one, when they are of one kind and quote; else None."""
    if [t.type for t in tokens_of(f"{first} {second}")] != [tokenize.STRING, tokenize.STRING]:
        return None
    parts = []
    for token in (first, second):
        prefix = token[: len(token) - len(token.lstrip("rRbBuUfF"))]
        parts.append((prefix.lower().replace("f", ""), "f" in prefix.lower(), token[len(prefix)],
                      token[len(prefix) + 1: -1]))
    (kind, f_one, quote, one), (kind_two, f_two, quote_two, two) = parts
    if kind != kind_two or quote != quote_two or quote * 2 in (one[:2], two[:2]):
        return None

    def braces(text: str, formatted: bool) -> str:
        """A plain piece joined to an f-string: its braces are doubled, to stay text."""
        plain = not formatted and (f_one or f_two)
        return text.replace("{", "{{").replace("}", "}}") if plain else text

    return kind + "f" * (f_one or f_two) + quote + braces(one, f_one) + braces(two, f_two) + quote


def cut_strings(source: str) -> str:
    """Cut in two joined strings each string inside brackets that ends past the last column, or
    whose closing brackets do; when a string it joins starts the next line, the rest goes there."""
    lines = source.split("\n")
    too_wide = set(wide(source))
    tokens = tokens_of(source)
    depth = 0
    edits: list[tuple[int, int, int, str]] = []          # (line, start, end, new text)
    touched: set[int] = set()
    for here, token in enumerate(tokens):
        closing = CLOSING.match(lines[token.start[0] - 1][token.end[1]:])[0]
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif (token.type == tokenize.STRING and depth and token.start[0] == token.end[0]
              and token.start[0] in too_wide and here not in touched
              and token.end[1] + len(closing) > WIDTH):
            cut = cut_string(token.string, WIDTH - token.start[1])
            if cut is None:
                continue
            following = tokens[here + 1] if here + 1 < len(tokens) else None
            merged = (join_strings(cut[1], following.string)
                      if following and following.start[0] > token.end[0] else None)
            if merged:
                edits.append((token.start[0], token.start[1], token.end[1], cut[0]))
                edits.append((following.start[0], following.start[1], following.end[1], merged))
                touched.add(here + 1)
            else:
                edits.append((token.start[0], token.start[1], token.end[1], " ".join(cut)))
    for row, start, end, text in sorted(edits, reverse=True):
        lines[row - 1] = lines[row - 1][:start] + text + lines[row - 1][end:]
    return "\n".join(lines)


# ------------------------------------------------------------------ statements, by black
def black_mode(width: int = WIDTH):
    """black at ``width``, with the feature that splits a long string into joined pieces."""
    import black

    return black.Mode(line_length=width, preview=True,
                      enabled_features={black.Preview.string_processing})


def fit_statements(source: str) -> str:
    """Reformat, with black, only the statements holding a line too wide."""
    import black

    numbers = wide(source)
    if not numbers:
        return source
    ends = source.endswith("\n")           # a file ends with a newline, a cell does not
    try:
        formatted = black.format_str(source if ends else source + "\n", mode=black_mode(),
                                     lines=[(n, n) for n in numbers])
    except black.InvalidInput as exc:
        raise Unchanged(f"not Python: {exc}") from exc
    return formatted if ends else formatted.removesuffix("\n")


# ------------------------------------------------------------------ docstrings
def docstrings(tree: ast.AST) -> list[ast.Constant]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found.append(first.value)
    return found


def fit_docstrings(source: str) -> str:
    """Wrap the lines too wide of a triple-quoted docstring, at the docstring's own indentation."""
    lines = source.split("\n")
    too_wide = set(wide(source))
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise Unchanged(f"not Python: {exc}") from exc
    for node in sorted(docstrings(tree), key=lambda n: n.lineno, reverse=True):
        first, last = node.lineno, node.end_lineno
        head = lines[first - 1]
        quote = head[node.col_offset:].lstrip("rRuU")[:3]
        if not too_wide & set(range(first, last + 1)) or quote not in ('"""', "'''"):
            continue
        indent = head[: node.col_offset]
        rewrapped: list[str] = []
        for n in range(first, last + 1):
            line = lines[n - 1]
            if len(line) <= WIDTH:
                rewrapped.append(line)
                continue
            start = len(line) - len(line.lstrip()) if n > first else node.col_offset
            rewrapped += textwrap.wrap(line[start:], WIDTH, initial_indent=line[:start],
                                       subsequent_indent=indent if n == first else line[:start],
                                       break_long_words=False, break_on_hyphens=False)
        lines[first - 1: last] = rewrapped
    return "\n".join(lines)


# ------------------------------------------------------------------ the same program
def same_program(before: str, after: str) -> bool:
    """True when the two parse to the same tree, docstrings compared without their whitespace."""
    def shape(source: str) -> str:
        tree = ast.parse(source)
        for doc in docstrings(tree):
            doc.value = " ".join(doc.value.split())
        return ast.dump(tree)

    return shape(before) == shape(after)


# ------------------------------------------------------------------ a cell, a notebook
def by_hand(text: str) -> str:
    """The steps a person would take, each on what the last left too wide, until none changes it."""
    for _ in range(40):
        new = bracket_values(bracket_imports(fit_asserts(fit_comments(text))))
        new = fill(cut_strings(fill(new)))
        if new == text:
            break
        text = new
    return text


def fit_source(source: str) -> str:
    """``source`` (a code cell, or a module) with its lines too wide shortened and its wrapped
    comments even; the same program."""
    if not wide(source):
        return balance_comments(source)
    masked, kept = set_aside(source)
    text = masked
    for _ in range(3):      # black's statements, then the steps again: until nothing changes
        text = fit_docstrings(fit_statements(by_hand(text)))
        if by_hand(text) == text:
            break
    if not same_program(masked, text):
        raise AssertionError(f"reformatting changed the program:\n{masked}\n---\n{text}")
    return balance_comments(put_back(text, kept))


def fit_notebook(path: Path) -> tuple[str, str, list[str]]:
    """(text before, text after, lines still too wide as ``cell N, line M: ...``) of a notebook."""
    import nbformat

    before = path.read_text(encoding="utf-8")
    nb = nbformat.reads(before, as_version=4)
    left, changed = [], False
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            fitted = fit_source(cell.source)
            changed, cell.source = changed or fitted != cell.source, fitted
        except Unchanged as exc:
            left.append(f"cell {index}: left as it is ({exc})")
        left += [f"cell {index}, line {n}: {cell.source.split(chr(10))[n - 1].strip()[:60]}..."
                 for n in wide(cell.source)]
    if changed:   # cell ids follow the source, as scripts/run_notebooks.py makes them
        stable_ids(nb)
    return before, text_of(nb), left


def fit_file(path: Path) -> tuple[str, str, list[str]]:
    """The same for a Python file, read as one cell."""
    before = path.read_text(encoding="utf-8")
    try:
        after = fit_source(before)
    except Unchanged as exc:
        return before, before, [f"left as it is ({exc})"]
    lines = after.split("\n")
    return before, after, [f"line {n}: {lines[n - 1].strip()[:60]}..." for n in wide(after)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="notebooks (.ipynb) or Python files")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths:
        before, after, left = (fit_notebook if path.suffix == ".ipynb" else fit_file)(path)
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        if before != after and not args.check:
            path.write_text(after, encoding="utf-8", newline="\n")
        state = ("would change" if args.check else "rewritten") if before != after else "unchanged"
        print(f"{state:<13} {shown}" + (f": {len(left)} lines still too wide" if left else ""))
        for line in left:
            print(f"    {line}")
        status |= bool(left) or (args.check and before != after)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
