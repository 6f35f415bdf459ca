"""Chapter 02: schema validation: the first layer, which checks shape and nothing else.

The course picks one meaning for "valid" and keeps it: **JSON Schema 2020-12, strictly**. ``"12"``
is not an integer, ``null`` is a wrong type (not a missing field), ``true`` is not a number, and a
pattern means what ECMA-262 says (``$`` is the end of the text, ``\\d`` is 0-9: see
``toolkit._patterns``). Every failure becomes a ``ToolError`` whose pointer names the offending
field itself; what it echoes back is redacted and short.

A schema never reaches out: a ``$ref`` points inside it (``#/$defs/...``, ``declaration_problems``)
and the validator's registry retrieves nothing: no check fetches a URL, a file or a socket."""
from __future__ import annotations

import itertools
import json
import math
import sys
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping

from toolkit._formats import import_jsonschema
from toolkit._show import SURROGATE, echo_text, echo_value, pointer_for, shorten
from toolkit.kernel.call import ToolError
from toolkit._caps import MAX_ARGUMENT_BYTES, MAX_DEPTH, MAX_ERRORS_PER_CALL
from toolkit._patterns import (additional_names, ecma_additional_properties, ecma_pattern_keyword,
                               ecma_pattern_properties, is_ecma_regex,
                               pattern_problems)
from toolkit._show import REDACTED, is_secret_name, redact


# ----------------------------------------------------------------- parsing
class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _Duplicate(key)
        seen[key] = value
    return seen


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_arguments(raw: Any) -> tuple[dict | None, list[ToolError]]:
    """Arguments as received (a dict, or JSON text that decodes to an object; ``""`` is ``{}``) as a
    dict, or why not: duplicate keys, NaN/Infinity, numbers no double holds, lone surrogates,
    trailing data, non-objects, oversized or too deep input are refused (``invalid_json`` for text,
    ``not_serializable`` for a dict), pointing at the offending value."""
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, [ToolError("invalid_json", "$", "arguments are not UTF-8 text",
                                    expected="a JSON object", received="<bytes>")]
    from_text = isinstance(raw, str)
    if from_text:
        if len(raw) > MAX_ARGUMENT_BYTES:
            return None, [_too_large(len(raw))]
        if not raw.strip():
            return {}, []
        try:
            raw = json.loads(raw, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
        except _Duplicate as exc:
            return None, [ToolError("invalid_json", "$", f"duplicate key {echo_text(str(exc))!r}",
                                    expected="a JSON object with unique keys", received="<text>",
                                    hint="send each argument once")]
        except (ValueError, RecursionError) as exc:
            return None, [ToolError("invalid_json", "$", "arguments are not valid JSON",
                                    expected="a complete JSON object", received=shorten(str(exc)),
                                    hint="send one complete JSON object")]
    if not isinstance(raw, dict):
        return None, [ToolError("not_an_object", "$", "arguments must be a JSON object",
                                expected="object", received=json_type(raw),
                                hint='wrap the arguments in an object, e.g. {"path": "..."}')]
    try:
        raw = raw if type(raw) is dict else dict(raw.items())   # a subclass's own methods run once
        depth, size, problem = _measure(raw)
    except Exception:     # a mapping whose items() raise (no model sends one): refused, not raised
        depth, size, problem = 0, 0, ((), type(raw).__name__, "its items cannot be read")
    if depth > MAX_DEPTH:
        return None, [ToolError("too_large", "$", f"arguments nest deeper than {MAX_DEPTH} levels",
                                expected=f"at most {MAX_DEPTH} levels", received="deeper", retryable=True)]
    if problem is not None:
        path, found, why = problem
        return None, [ToolError("invalid_json" if from_text else "not_serializable", pointer_for(path), why,
                                expected="JSON values only: text, finite numbers a double holds, true/false, "
                                         "null, arrays, objects with text keys",
                                received=found, hint="send plain JSON values")]
    if size > MAX_ARGUMENT_BYTES:
        return None, [_too_large(size)]
    return raw, []


def _too_large(size: int) -> ToolError:
    return ToolError("too_large", "$", f"arguments are {size} bytes, over the {MAX_ARGUMENT_BYTES} byte cap",
                     expected=f"at most {MAX_ARGUMENT_BYTES} bytes", received=f"{size} bytes",
                     hint="send a reference (a path or id) instead of the content")


#: The largest integer a double holds (about 1.8e308); a larger one breaks every consumer that reads numbers
#: as doubles, and ``json.dumps`` itself past 4300 digits.
_LARGEST_NUMBER = int(sys.float_info.max)


def _measure(value: Any) -> tuple[int, int, tuple | None]:
    """Nesting depth, an estimate of the JSON size in bytes, and the first value that is not JSON
    (``(path, what was found, why)`` or ``None``): one walk, stopping once a cap is passed; a path
    is built only for the value refused."""
    depth = size = 0
    stack: list[tuple] = [(value, 1, None)]
    while stack:
        entry = stack.pop()
        item, level = entry[0], entry[1]
        depth = max(depth, level)
        if depth > MAX_DEPTH or size > MAX_ARGUMENT_BYTES:
            break
        if isinstance(item, str):
            if not item.isascii() and SURROGATE.search(item):
                return depth, size, (_path(entry), "text with a lone surrogate", _SURROGATE_WHY)
            size += len(item) + 3
        elif isinstance(item, dict):
            size += 2
            for key, child in item.items():
                if not isinstance(key, str):
                    return depth, size, (_path(entry), type(key).__name__, "object keys must be text")
                if not key.isascii() and SURROGATE.search(key):
                    return depth, size, (_path(entry), "a key with a lone surrogate", _SURROGATE_WHY)
                size += len(key) + 4
                stack.append((child, level + 1, entry, key))
        elif isinstance(item, (list, tuple)):
            size += 2
            stack.extend((child, level + 1, entry, i) for i, child in enumerate(item))
        elif item is None or isinstance(item, bool):
            size += 6
        elif isinstance(item, int):
            if abs(item) > _LARGEST_NUMBER:
                return depth, size, (_path(entry), f"an integer of {item.bit_length()} bits",
                                     "a number larger than a double can hold is not interoperable JSON")
            size += 6
        elif isinstance(item, float):
            if not math.isfinite(item):
                return depth, size, (_path(entry), repr(item), "NaN and infinities are not JSON")
            size += 6
        else:
            return depth, size, (_path(entry), type(item).__name__, f"a {type(item).__name__} is not a JSON value")
    return depth, size, None


def _path(entry: tuple) -> tuple:
    """The keys and indexes from the top of the arguments down to a stack entry of ``_measure``."""
    parts = []
    while entry[2] is not None:
        parts.append(entry[3])
        entry = entry[2]
    return tuple(reversed(parts))


_SURROGATE_WHY = "text holds a lone surrogate (half a UTF-16 pair), which is not Unicode text"


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type: object, array, string, integer, number, boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# -------------------------------------------------------------- validating
@lru_cache(maxsize=None)
def _validator_class():
    """Draft 2020-12, with patterns read the JSON Schema way (ECMA-262, see ``toolkit._patterns``)."""
    import_jsonschema()                      # first, so the format extras' import-time work is deferred
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {"pattern": ecma_pattern_keyword,
                                                    "patternProperties": ecma_pattern_properties,
                                                    "additionalProperties": ecma_additional_properties})


@lru_cache(maxsize=None)
def _schema_format_checker() -> Any:
    """The format checks a schema itself must pass, with ``regex`` meaning an ECMA-262 pattern."""
    import_jsonschema()
    from jsonschema import FormatChecker

    checker = FormatChecker()
    checker.checkers["regex"] = (is_ecma_regex, ())
    return checker


@lru_cache(maxsize=None)
def _registry() -> Any:
    """A registry that retrieves nothing: a reference resolves inside its own schema, or nowhere."""
    from referencing import Registry

    return Registry()


def compile_schema(schema: Mapping) -> Any:
    """Check a schema once and return a reusable validator (compile per contract, not per call)."""
    cls = _validator_class()
    cls.check_schema(schema, format_checker=_schema_format_checker())
    if problems := declaration_problems(schema):
        raise ValueError("; ".join(problems))
    return cls(schema, registry=_registry())


def _refs(value: Any, depth: int = 0) -> Iterator[str]:
    """Every ``$ref`` (``$dynamicRef``, ``$recursiveRef``) value in ``value``, at any depth."""
    if depth > 64:
        return
    children = value.items() if isinstance(value, Mapping) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, child in children:
        if key in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(child, str):
            yield child
        else:
            yield from _refs(child, depth + 1)


def declaration_problems(schema: Any) -> list[str]:
    """One line for each thing that makes ``schema`` unfit to declare: a ``$ref`` that is not local
    or resolves to nothing (nothing is fetched), a pattern ``pattern_problems`` refuses."""
    problems = []
    for ref in dict.fromkeys(_refs(schema)):
        if not ref.startswith("#"):
            problems.append(f"$ref {echo_text(ref)!r} points outside the schema (a schema is never "
                            "fetched or opened): define it under $defs, refer to it as '#/$defs/...'")
            continue
        from referencing.jsonschema import DRAFT202012     # only a schema with a $ref needs it

        try:
            _registry().resolver_with_root(DRAFT202012.create_resource(schema)).lookup(ref)
        except Exception:   # referencing.exceptions.Unresolvable, or an $id that is not text
            problems.append(f"$ref {echo_text(ref)!r} resolves to nothing in this schema")
    return problems + pattern_problems(schema)


#: How many errors are looked at before counting stops: they are made lazily, so a document with a
#: hundred thousand bad items (or unexpected keys) costs no more than this many.
_ERRORS_LOOKED_AT = 1000


def schema_errors(validator: Any, arguments: dict, secret_fields: Iterable[str] = ()) -> list[ToolError]:
    """All schema errors for ``arguments``, each naming its own field; empty when the shape is right.

    At most ``MAX_ERRORS_PER_CALL`` are listed: past that, the last one counts the rest."""
    fields = tuple(secret_fields)
    listed: dict[tuple[str, str], ToolError] = {}
    unlisted: set[tuple[str, str]] = set()
    looked_at = 0
    try:
        if validator.is_valid(arguments):
            return []
        found = (e for error in validator.iter_errors(arguments) for e in _translate(error, fields))
        for looked_at, tool_error in enumerate(itertools.islice(found, _ERRORS_LOOKED_AT + 1), 1):
            key = (tool_error.code, tool_error.pointer)     # one error per field and kind
            if looked_at > _ERRORS_LOOKED_AT or key in listed or key in unlisted:
                continue
            if len(listed) < MAX_ERRORS_PER_CALL:
                listed[key] = tool_error
            else:
                unlisted.add(key)
    except Exception:     # a mapping inside whose methods raise (no model sends one): refused
        return [ToolError("not_serializable", "$", "the arguments cannot be read",
                          expected="plain JSON values", received=type(arguments).__name__)]
    out = list(listed.values())
    if unlisted:
        more = f"{'at least ' if looked_at > _ERRORS_LOOKED_AT else ''}{len(unlisted) + 1} more"
        out[-1] = ToolError("schema_violation", "$", f"{more} schema errors not listed",
                            expected=f"at most {MAX_ERRORS_PER_CALL} errors are listed for one call",
                            received=f"{MAX_ERRORS_PER_CALL - 1} listed, {more}",
                            hint="fix the errors listed and send the call again")
    return out


def _translate(error: Any, secret_fields: tuple[str, ...]) -> Iterator[ToolError]:
    """The ``ToolError``s one jsonschema error stands for (a missing or extra field each get their own)."""
    kind, where = error.validator, tuple(error.absolute_path)
    if kind == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        yield from (ToolError("missing_required", pointer_for(where + (name,)), "required property missing",
                              expected=f"a value for {name!r}", received="absent", hint=f"add the field {name!r}")
                    for name in error.validator_value if name not in present)
        return
    if kind in ("additionalProperties", "unevaluatedProperties"):
        allowed = sorted(error.schema.get("properties", {}))
        yield from (ToolError("unexpected_property", pointer_for(where + (name,)), "unexpected property",
                              expected=f"one of {allowed}", received=echo_text(name),
                              hint=f"remove {echo_text(name)!r}; the declared fields are {', '.join(allowed)}")
                    for name in additional_names(error.instance, error.schema))
        return
    here = pointer_for(where)
    if kind == "type":
        field = echo_text(where[-1]) if where and isinstance(where[-1], str) else "the value"
        yield ToolError("wrong_type", here, f"expected {error.validator_value}, got {json_type(error.instance)}",
                        expected=error.validator_value, received=json_type(error.instance),
                        hint=f"send {field} as {error.validator_value}")
        return
    # below a secret-named field (an item of "api_keys", a child of "auth"), everything is secret
    hidden = any(isinstance(part, str) and is_secret_name(part, secret_fields) for part in where)
    received = REDACTED if hidden else echo_value(redact(error.instance, secret_fields))
    if kind in ("enum", "const"):
        allowed = error.validator_value if kind == "enum" else [error.validator_value]
        yield ToolError("enum", here, f"{shorten(repr(received))} is not one of {allowed}",
                        expected=list(allowed), received=received,
                        hint="choose one of: " + ", ".join(map(str, allowed)))
    elif kind == "pattern":
        yield ToolError("pattern", here, f"does not match {error.validator_value}",
                        expected=error.validator_value, received=received)
    elif kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        yield ToolError("range", here, f"violates {kind} {error.validator_value}",
                        expected=f"{kind} {error.validator_value}", received=received)
    elif kind in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
        yield ToolError("length", here, f"violates {kind} {error.validator_value}",
                        expected=f"{kind} {error.validator_value}", received=shorten(repr(received)))
    else:
        yield ToolError("schema_violation", here, f"violates {kind}", expected=kind, received=shorten(repr(received)))
