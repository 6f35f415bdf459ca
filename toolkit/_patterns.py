"""Chapter 02: a schema's ``pattern`` means what JSON Schema says it means: an ECMA-262 regular expression.

Python's ``re`` reads the same text differently: ``$`` also matches before a final newline and
``\\d`` matches any Unicode digit (``order-٣`` passes ``^order-\\d+$``). So patterns are compiled by
``regress``, an ECMA-262 engine, with the ``u`` flag JSON Schema recommends. A pattern it cannot
compile is the contract's mistake, reported when the contract is declared (``pattern_problems``),
never while a call is checked; a pattern is *run* by RE2 (``toolkit._linear``)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterator, Mapping

from toolkit._show import shorten

#: Keywords whose value is one schema, a list of schemas, or a mapping of names to schemas (2020-12 and older).
_ONE = ("items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties",
        "contains", "propertyNames", "not", "if", "then", "else")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


@lru_cache(maxsize=512)
def ecma_regex(pattern: str) -> Any:
    """The compiled ECMA-262 form of ``pattern`` (raises ``regress.RegressError`` when it has none)."""
    from regress import Regex

    return Regex(pattern, "u")


def pattern_matches(pattern: str, text: str) -> bool:
    """True when ``pattern`` matches somewhere in ``text`` (JSON Schema patterns are not anchored).

    Linear in ``text``: the ECMA-262 meaning, run by RE2 (``toolkit._linear``)."""
    from toolkit._linear import linear_regex

    try:
        return linear_regex(pattern).search(text) is not None
    except Exception:   # a pattern the contract check let through, or text UTF-8 cannot hold: no match
        return False


def schema_patterns(schema: Any, _depth: int = 0) -> Iterator[str]:
    """Every regular expression in ``schema`` (``pattern`` values and ``patternProperties`` names),
    walking schema positions only: a property *called* ``pattern`` is not one."""
    if not isinstance(schema, Mapping) or _depth > 64:
        return
    if isinstance(schema.get("pattern"), str):
        yield schema["pattern"]
    if isinstance(schema.get("patternProperties"), Mapping):
        yield from (name for name in schema["patternProperties"] if isinstance(name, str))
    for keyword in _ONE:
        yield from schema_patterns(schema.get(keyword), _depth + 1)
    for keyword in _MANY:
        value = schema.get(keyword)
        for sub in value if isinstance(value, list) else [value] if isinstance(value, Mapping) else []:
            yield from schema_patterns(sub, _depth + 1)
    for keyword in _NAMED:
        value = schema.get(keyword)
        for sub in value.values() if isinstance(value, Mapping) else ():
            yield from schema_patterns(sub, _depth + 1)


def is_ecma_regex(value: Any) -> bool:
    """The ``regex`` format, read as JSON Schema reads it (used when a schema itself is checked)."""
    if not isinstance(value, str):
        return True
    try:
        ecma_regex(value)
    except Exception:
        return False
    return True


def pattern_problems(schema: Any) -> list[str]:
    """One line for each pattern in ``schema`` that is not an ECMA-262 regular expression, or that
    cannot be checked in linear time; empty when all are fine."""
    from toolkit._linear import Untranslatable, linear_regex

    problems = []
    for pattern in dict.fromkeys(schema_patterns(schema)):
        shown = shorten(pattern)
        try:
            ecma_regex(pattern)
            linear_regex(pattern)
        except ImportError:        # an engine is missing: an install problem, not the contract's
            raise
        except Untranslatable as exc:
            problems.append(f"pattern {shown!r} cannot be checked in linear time: {exc}")
        except Exception as exc:   # regress.RegressError: the engine's own reason
            problems.append(f"pattern {shown!r} is not an ECMA-262 regular expression ({exc})")
    return problems


# ------------------------------------------------- the keywords that read patterns, for jsonschema
def ecma_pattern_keyword(validator: Any, pattern: str, instance: Any, schema: Mapping) -> Iterator[Any]:
    """``pattern``, read the ECMA-262 way."""
    from jsonschema.exceptions import ValidationError

    if isinstance(instance, str) and not pattern_matches(pattern, instance):
        yield ValidationError(f"does not match {pattern!r}")


def ecma_pattern_properties(validator: Any, patterns: Mapping, instance: Any, schema: Mapping) -> Iterator[Any]:
    """``patternProperties``, its names read the ECMA-262 way."""
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if pattern_matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def additional_names(instance: Mapping, schema: Mapping) -> list[str]:
    """The keys of ``instance`` neither ``properties`` nor any ``patternProperties`` name covers."""
    declared = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [key for key in instance
            if key not in declared and not any(pattern_matches(p, key) for p in patterns)]


def ecma_additional_properties(validator: Any, allowed: Any, instance: Any, schema: Mapping) -> Iterator[Any]:
    """``additionalProperties``, with ``patternProperties`` names read the ECMA-262 way."""
    from jsonschema.exceptions import ValidationError

    if not isinstance(instance, dict):
        return
    extras = additional_names(instance, schema)
    if isinstance(allowed, Mapping):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif allowed is False and extras:
        yield ValidationError(f"{len(extras)} unexpected properties")
