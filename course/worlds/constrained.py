"""Chapter 03: constrained generation before execution: grammar helps, and stops short.

A constrained decoder masks the model's choices so that it can only write
schema-shaped output. This module does it with a tiny deterministic "model":
a preference table that scores the keys it would like to write and, for each
key, the values it would like to give. It writes a tool call's arguments one
token at a time: ``{``, a key, ``:``, a value, ``,``, ..., ``}``.

* **Unmasked**, it writes what it prefers: Agent-427's ``{"path": ...,
  "patch": ...}``, or, cut off by a token budget, an object with no closing brace.
* **Masked** by the ``edit_file`` schema, it can only write declared keys, must
  write every required one before ``}``, gives each key a value of the
  declared type, and never starts a key it has no budget to finish. Its output
  always parses and passes ``schema_ok``.

And yet the masked model still writes ``load_manifest`` into ``new_text``:
the schema says ``new_text`` is a string, and that is a string. Only the
runtime, reading the module's real exports, refuses it. Grammar can prevent a
missing brace; it cannot prove an export.

The same experiment on a real model (llama.cpp's grammar, built from ``read_file``'s own schema,
masking the packaged SmolLM2) is ``course.worlds.model_tasks``: the shape holds there too, and
nothing in the shape says whether the path it holds names a file.

The mask understands the schema features ``edit_file`` uses: an object with
``properties``, ``required`` (including a staged ``if``/``then`` requirement),
``additionalProperties: false``, and per-field value schemas.
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any, Mapping

from toolkit.kernel import ToolError
from toolkit._show import echo_value, shorten
from toolkit._schema import compile_schema, parse_arguments
from course.worlds.stream_replay import MAX_FRAGMENT_CHARS

CLOSE = "}"


@dataclass(frozen=True)
class Preferences:
    """A model's tastes, as a table: a score per key (``"}"`` scores stopping), a score per value per key.

    Higher scores win. Keys or values the model never thought of score ``default``.
    """

    keys: Mapping[str, float]
    values: Mapping[str, Mapping[Any, float]] = field(default_factory=dict)
    default: float = 0.0

    def value_options(self, key: str) -> list[tuple[Any, float]]:
        table = self.values.get(key, {})
        return list(table.items()) if isinstance(table, Mapping) else list(table)


# --------------------------------------------------------------------- the mask
class SchemaMask:
    """Which keys and values an object schema allows next, given what has been written so far."""

    def __init__(self, schema: Mapping[str, Any]):
        self.schema = schema
        self.properties: dict[str, Any] = dict(schema.get("properties", {}))
        self.closed = schema.get("additionalProperties", True) is False
        self.required = effective_required(schema)
        self._validators = {k: compile_schema(s) for k, s in self.properties.items()}

    def min_tokens(self) -> int:
        """The fewest tokens any valid object needs: ``{``, each required ``key : value`` (with commas), ``}``."""
        n = len(self.required)
        return 2 if n == 0 else 4 * n + 1

    def key_options(self, written: list[str], left: int, wanted: list[str]) -> list[str]:
        """Keys (or ``"}"``) allowed next, when ``left`` tokens remain; never one that could not be finished."""
        missing = [k for k in self.required if k not in written]
        options = [CLOSE] if not missing else []
        names = list(self.properties) + ([] if self.closed else [k for k in wanted if k != CLOSE])
        for key in dict.fromkeys(names):
            if key in written:
                continue
            after = len([k for k in missing if k != key])
            cost = (1 if written else 0) + 3 + 4 * after + 1   # [","] key ":" value, the rest, "}"
            if cost <= left:
                options.append(key)
        return options

    def value_ok(self, key: str, value: Any) -> bool:
        validator = self._validators.get(key)
        return validator is None or validator.is_valid(value)

    def fallback(self, key: str) -> Any:
        """The value the grammar forces when the model likes none that fit (the smallest legal one)."""
        sub = self.properties.get(key, {})
        if "const" in sub:
            return sub["const"]
        if sub.get("enum"):
            return sub["enum"][0]
        kind = sub.get("type", "string")
        kind = kind[0] if isinstance(kind, list) else kind
        return {"string": "?" * int(sub.get("minLength", 0)), "integer": int(sub.get("minimum", 0)),
                "number": sub.get("minimum", 0), "boolean": False, "null": None, "array": [],
                "object": {}}.get(kind, "")


_MASKS: dict[str, SchemaMask] = {}


def _mask_for(schema: Mapping[str, Any]) -> SchemaMask:
    """One mask per distinct schema (compiling its field validators once)."""
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _MASKS:
        _MASKS[key] = SchemaMask(schema)
    return _MASKS[key]


def effective_required(schema: Mapping[str, Any]) -> list[str]:
    """``required``, plus ``then.required`` when the ``if`` only asks for keys that are always required."""
    required = list(schema.get("required", []))
    condition, then = schema.get("if"), schema.get("then")
    if (isinstance(condition, Mapping) and isinstance(then, Mapping) and set(condition) == {"required"}
            and set(condition["required"]) <= set(required)):
        required += [k for k in then.get("required", []) if k not in required]
    return required


# ---------------------------------------------------------------- generation
@dataclass(frozen=True)
class TokenChoice:
    """One decision: what the model wanted, what the mask allowed (None when unmasked), what was written."""

    position: int
    kind: str
    wanted: Any
    chosen: Any
    allowed: tuple[Any, ...] | None

    @property
    def masked_out(self) -> bool:
        return self.allowed is not None and self.wanted != self.chosen

    def line(self) -> str:
        shown = lambda v: v if self.kind == "key" else json.dumps(echo_value(v, MAX_FRAGMENT_CHARS))
        allowed = "" if self.allowed is None else f"; mask allowed {', '.join(map(str, map(shown, self.allowed)))}"
        return f"token {self.position}: model wanted {shown(self.wanted)}{allowed}; wrote {shown(self.chosen)}"


@dataclass(frozen=True)
class Generation:
    """What a generator wrote: tokens, the decisions behind them, and why it stopped."""

    tokens: tuple[str, ...]
    choices: tuple[TokenChoice, ...]
    masked: bool
    stopped: str  # "complete"; "budget" (cut off); "incomplete" (never closed); "refused" (budget too small)
    error: ToolError | None = None

    @property
    def text(self) -> str:
        """The tokens joined as JSON text, e.g. ``{"file_path": "scripts/build_site.py", ...}``."""
        out = ""
        for token in self.tokens:
            out += token + (" " if token in (":", ",") else "")
        return out.rstrip()

    def arguments(self) -> tuple[dict | None, list[ToolError]]:
        """The text parsed strictly, as the host would parse it."""
        if self.error is not None:
            return None, [self.error]
        return parse_arguments(self.text)

    def interventions(self) -> list[str]:
        """The decisions where the mask overruled the model."""
        return [c.line() for c in self.choices if c.masked_out]


def generate(preferences: Preferences, schema: Mapping[str, Any] | None = None, max_tokens: int = 64,
             seed: int | None = None, temperature: float = 0.25) -> Generation:
    """Write one arguments object token by token; masked by ``schema`` when one is given.

    Without a seed the model always takes its favourite; with a seed it samples
    (softmax over scores at ``temperature``) from a ``random.Random(seed)``,
    so every run is reproducible.
    """
    rng = random.Random(seed) if seed is not None else None
    mask = _mask_for(schema) if schema is not None else None
    if mask is not None and mask.min_tokens() > max_tokens:
        error = ToolError("length", "$", f"a budget of {max_tokens} tokens cannot hold a complete call",
                          expected=f"at least {mask.min_tokens()} tokens", received=max_tokens,
                          hint="raise the token budget; the mask will not start an object it cannot close")
        return Generation((), (), True, "refused", error)
    tokens: list[str] = ["{"]
    choices: list[TokenChoice] = []
    written: list[str] = []

    def room(n: int) -> bool:
        return len(tokens) + n <= max_tokens

    while True:
        wanted_keys = [k for k in preferences.keys if k not in written]
        if mask is None:
            options = wanted_keys
        else:
            options = mask.key_options(written, max_tokens - len(tokens), wanted_keys)
        scores = {k: preferences.keys.get(k, preferences.default) for k in options}
        if not scores:  # an unmasked model that never chose to stop
            return Generation(tuple(tokens), tuple(choices), mask is not None, "incomplete")
        favourite = _best({k: preferences.keys[k] for k in wanted_keys}) if wanted_keys else None
        key = _pick(scores, rng, temperature)
        choices.append(TokenChoice(len(tokens), "key", favourite, key, None if mask is None else tuple(options)))
        if key == CLOSE:
            if room(1):
                tokens.append(CLOSE)
                return Generation(tuple(tokens), tuple(choices), mask is not None, "complete")
            break
        for token in ([","] if written else []) + [json.dumps(key), ":"]:
            if not room(1):
                return Generation(tuple(tokens), tuple(choices), mask is not None, "budget")
            tokens.append(token)
        value_scores = dict(_as_entries(preferences.value_options(key)))
        allowed = [v for v in value_scores if mask is None or mask.value_ok(key, _from_entry(v))]
        if mask is not None and not allowed:
            fallback = mask.fallback(key)
            value_scores[_as_entry(fallback)] = preferences.default
            allowed = [_as_entry(fallback)]
        if not allowed:  # an unmasked model with no idea writes null
            value_scores[_as_entry(None)] = preferences.default
            allowed = [_as_entry(None)]
        favourite_value = _best(value_scores) if value_scores else None
        value = _pick({v: value_scores[v] for v in allowed}, rng, temperature)
        choices.append(TokenChoice(len(tokens), "value", _from_entry(favourite_value), _from_entry(value),
                              None if mask is None else tuple(_from_entry(v) for v in allowed)))
        if not room(1):
            return Generation(tuple(tokens), tuple(choices), mask is not None, "budget")
        tokens.append(json.dumps(_from_entry(value), ensure_ascii=False))
        written.append(key)
    return Generation(tuple(tokens), tuple(choices), mask is not None, "budget")


def _as_entry(value: Any) -> str:
    """Values are kept as JSON text while choosing, so lists and dicts can be table entries too."""
    return json.dumps(value, sort_keys=True)


def _from_entry(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else text


def _as_entries(options: list[tuple[Any, float]]) -> list[tuple[str, float]]:
    return [(_as_entry(v), float(s)) for v, s in options]


def _best(scores: Mapping[Any, float]) -> Any:
    """The highest score; ties go to the earliest entry."""
    return max(scores, key=lambda k: (scores[k], -list(scores).index(k)))


def _pick(scores: Mapping[Any, float], rng: random.Random | None, temperature: float) -> Any:
    if rng is None or len(scores) == 1:
        return _best(scores)
    top = max(scores.values())
    weights = [math.exp((s - top) / temperature) for s in scores.values()]
    return rng.choices(list(scores), weights=weights, k=1)[0]


# ------------------------------------------------------------------ comparing
def compare_masking(preferences: Preferences, schema: Mapping[str, Any], max_tokens: int = 64,
            cut: int = 8) -> list[str]:
    """Unmasked vs masked for the same preferences, as printable lines."""
    free, short, masked = (generate(preferences, None, max_tokens), generate(preferences, None, cut),
                           generate(preferences, schema, max_tokens))
    lines = [f"unmasked:            {shorten(free.text)}",
             f"unmasked, {cut} tokens: {short.text}   <- {short.stopped}: no closing brace",
             f"masked:              {shorten(masked.text)}", "mask interventions:"]
    return lines + [f"  {line}" for line in masked.interventions()]


__all__ = ["CLOSE", "TokenChoice", "Generation", "Preferences", "SchemaMask", "compare_masking",
           "effective_required", "generate"]
