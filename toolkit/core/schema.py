"""Chapter 02: schema validation: the first layer, which checks shape and nothing else.

The course picks one meaning for "valid" and keeps it: **JSON Schema 2020-12,
strictly**. ``"12"`` is not an integer, ``null`` is a wrong type (not a missing
field), ``true`` is not a number, and a pattern ending in ``$`` does not accept a
trailing newline. Every failure becomes a ``ToolError`` whose pointer names the
offending field itself.
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any, Iterable, Mapping

from toolkit.core.errors import ToolError, pointer_for, shorten
from toolkit.core.limits import MAX_ARGUMENT_BYTES, MAX_DEPTH
from toolkit.core.redaction import redact


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
    """Turn arguments as received into a dict, or explain why that is impossible.

    Accepts a dict, or JSON text (str or bytes) that decodes to an object.
    An empty string means ``{}`` (a tool with no parameters). Duplicate keys,
    NaN/Infinity, trailing data, non-objects, oversized or too deeply nested
    input are all refused with a structured error.
    """
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
            return None, [ToolError("invalid_json", "$", f"duplicate key {str(exc)!r}",
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
    depth, size, plain = _measure(raw)
    if depth > MAX_DEPTH:
        return None, [ToolError("too_large", "$", f"arguments nest deeper than {MAX_DEPTH} levels",
                                expected=f"at most {MAX_DEPTH} levels", received="deeper", retryable=True)]
    if not plain:
        return None, [ToolError("not_an_object", "$", "arguments are not JSON values",
                                expected="JSON values only", received="<unserializable>")]
    if size > MAX_ARGUMENT_BYTES:
        return None, [_too_large(size)]
    return raw, []


def _too_large(size: int) -> ToolError:
    return ToolError("too_large", "$", f"arguments are {size} bytes, over the {MAX_ARGUMENT_BYTES} byte cap",
                     expected=f"at most {MAX_ARGUMENT_BYTES} bytes", received=f"{size} bytes",
                     hint="send a reference (a path or id) instead of the content")


def _measure(value: Any) -> tuple[int, int, bool]:
    """Nesting depth, an estimate of the JSON size in bytes, and whether every value is plain JSON.

    One walk, stopping early once the depth or size cap is passed, so hostile
    input costs no more than the caps allow.
    """
    depth = size = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        depth = max(depth, level)
        if depth > MAX_DEPTH or size > MAX_ARGUMENT_BYTES:
            break
        if isinstance(item, dict):
            size += 2
            for key, child in item.items():
                if not isinstance(key, str):
                    return depth, size, False
                size += len(key) + 4
                stack.append((child, level + 1))
        elif isinstance(item, (list, tuple)):
            size += 2
            stack.extend((child, level + 1) for child in item)
        elif isinstance(item, str):
            size += len(item) + 3
        elif isinstance(item, float) and not math.isfinite(item):
            return depth, size, False   # NaN and Infinity are not JSON
        elif item is None or isinstance(item, (bool, int, float)):
            size += 6
        else:
            return depth, size, False
    return depth, size, True


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
def _anchored(pattern: str) -> str:
    """Make ``$`` mean end of text, as in JSON Schema (ECMA-262), not 'before a final newline'."""
    return re.sub(r"(?<!\\)\$", r"\\Z", pattern)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(_anchored(pattern))


@lru_cache(maxsize=None)
def _validator_class():
    """Draft 2020-12, with ``pattern`` read the JSON Schema way (``$`` is the end of the text)."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    def strict_pattern(validator, pattern, instance, schema):
        if isinstance(instance, str) and not _compiled(pattern).search(instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")

    return validators.extend(Draft202012Validator, {"pattern": strict_pattern})


def compile_schema(schema: Mapping) -> Any:
    """Check a schema once and return a reusable validator (compile per contract, not per call)."""
    cls = _validator_class()
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(validator: Any, arguments: dict, secret_fields: Iterable[str] = ()) -> list[ToolError]:
    """All schema errors for ``arguments``, each naming its own field; empty when the shape is right."""
    if validator.is_valid(arguments):
        return []
    out: dict[tuple[str, str], ToolError] = {}
    for error in validator.iter_errors(arguments):
        for tool_error in _translate(error, tuple(secret_fields)):
            out.setdefault((tool_error.code, tool_error.pointer), tool_error)  # one error per field and kind
    return list(out.values())


def _translate(error: Any, secret_fields: tuple[str, ...]) -> list[ToolError]:
    kind = error.validator
    where = tuple(error.absolute_path)
    here = pointer_for(where)
    field = where[-1] if where and isinstance(where[-1], str) else ""
    received = redact({field: error.instance}, secret_fields)[field] if field else redact(error.instance,
                                                                                            secret_fields)
    if kind == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        return [ToolError("missing_required", pointer_for(where + (name,)), "required property missing",
                          expected=f"a value for {name!r}", received="absent",
                          hint=f"add the field {name!r}")
                for name in error.validator_value if name not in present]
    if kind in ("additionalProperties", "unevaluatedProperties"):
        allowed = sorted(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        extras = [k for k in error.instance
                  if k not in allowed and not any(re.search(p, k) for p in patterns)]
        return [ToolError("unexpected_property", pointer_for(where + (name,)), "unexpected property",
                          expected=f"one of {allowed}", received=name,
                          hint=f"remove {name!r}; the declared fields are {', '.join(allowed)}")
                for name in extras]
    if kind == "type":
        return [ToolError("wrong_type", here, f"expected {error.validator_value}, got {json_type(error.instance)}",
                          expected=error.validator_value, received=json_type(error.instance),
                          hint=f"send {field or 'the value'} as {error.validator_value}")]
    if kind in ("enum", "const"):
        allowed = error.validator_value if kind == "enum" else [error.validator_value]
        return [ToolError("enum", here, f"{shorten(repr(received))} is not one of {allowed}",
                          expected=list(allowed), received=received,
                          hint="choose one of: " + ", ".join(map(str, allowed)))]
    if kind == "pattern":
        return [ToolError("pattern", here, f"does not match {error.validator_value}",
                          expected=error.validator_value, received=received)]
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        return [ToolError("range", here, f"violates {kind} {error.validator_value}",
                          expected=f"{kind} {error.validator_value}", received=received)]
    if kind in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
        return [ToolError("length", here, f"violates {kind} {error.validator_value}",
                          expected=f"{kind} {error.validator_value}", received=shorten(repr(received)))]
    return [ToolError("schema_violation", here, f"violates {kind}", expected=kind,
                      received=shorten(repr(received)))]
