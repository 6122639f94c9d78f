"""One way to name a candidate: a draft model directory as before, or a method spec ``METHOD[:key=value,…]``.

``ngram:min=2,max=4``, ``ngram-simple``, ``ngram-map-k``, ``suffix:depth=24``, ``eagle:head=DIR``,
``layers:n=2``. The table :data:`METHODS` is the one place a method's keys, their defaults and their
checks live; docs/methods.md describes each method and cites the engine whose semantics it follows.

A text is a method spec when the part before the first ``:`` is a known method name, unless a file or
directory of exactly that text exists (``./ngram`` always names a directory). Anything else is a model
directory. A bad spec is one :class:`MethodSpecError` whose message names the method and the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from specmeter.metrics.records import ModelInfo

__all__ = [
    "METHODS",
    "DraftDir",
    "ExtraMemory",
    "Key",
    "Method",
    "MethodSpec",
    "MethodSpecError",
    "is_method_spec",
    "parse_candidate",
    "parse_method",
]

# suffix's factor and offset: |value| at most this (float32 arithmetic on match lengths <= 4096 stays finite).
SUFFIX_LIMIT = 1e6
Value = int | float | str
Kind = Literal["int", "float", "str"]


class MethodSpecError(ValueError):
    """A method spec that cannot be used; the message is one line naming the method and the key."""


@dataclass(frozen=True)
class Key:
    """One ``key=value`` of a method: its type, default (None: required) and allowed range."""

    name: str
    kind: Kind
    default: Value | None
    doc: str
    low: float | None = None  # inclusive
    high: float | None = None  # inclusive
    always: bool = False  # shown in the label even at its default (a defining parameter)

    def parse(self, method: str, raw: str) -> Value:
        where = f"{method}: key '{self.name}'"
        if raw == "":
            raise MethodSpecError(f"{where} has no value")
        value: Value
        if self.kind == "int":
            try:
                value = int(raw)
            except ValueError:
                raise MethodSpecError(f"{where} must be an integer, got {raw!r}") from None
        elif self.kind == "float":
            try:
                value = float(raw)
            except ValueError:
                raise MethodSpecError(f"{where} must be a number, got {raw!r}") from None
            if value != value or value in (float("inf"), float("-inf")):
                raise MethodSpecError(f"{where} must be a finite number, got {raw!r}")
        else:
            value = raw
        if isinstance(value, int | float):
            if self.low is not None and value < self.low:
                raise MethodSpecError(f"{where} must be >= {_num(self.low)}, got {raw}")
            if self.high is not None and value > self.high:
                raise MethodSpecError(f"{where} must be <= {_num(self.high)}, got {raw}")
        return value


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class Method:
    """A named method: its keys, whether it needs a model, whether its proposals are deterministic."""

    name: str
    summary: str
    keys: tuple[Key, ...]
    deterministic: bool  # proposals are a function of the context: verified against a one-hot q
    model_free: bool  # no weights and no KV cache on the accelerator
    engine: str  # whose semantics it follows (docs/methods.md cites file and commit)
    # Fills defaults that depend on other keys and checks relations between keys.
    finish: Callable[[dict[str, Value], frozenset[str]], None] | None = None

    def key(self, name: str) -> Key | None:
        return next((k for k in self.keys if k.name == name), None)


def _ngram_finish(values: dict[str, Value], given: frozenset[str]) -> None:
    # vLLM's SpeculativeConfig: neither given -> 5 and 5; one given -> the other takes its value.
    if "min" in given and "max" not in given:
        values["max"] = values["min"]
    elif "max" in given and "min" not in given:
        values["min"] = values["max"]
    if int(values["min"]) > int(values["max"]):
        raise MethodSpecError(f"ngram: key 'min' ({values['min']}) must be <= key 'max' ({values['max']})")


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            "ngram",
            "n-gram lookup in the request's own context (prompt and output)",
            (
                Key("min", "int", 5, "prompt_lookup_min: shortest n-gram matched", 1, 1024, always=True),
                Key("max", "int", 5, "prompt_lookup_max: longest n-gram matched", 1, 1024, always=True),
            ),
            deterministic=True,
            model_free=True,
            engine="vLLM NgramProposer",
            finish=_ngram_finish,
        ),
        Method(
            "ngram-simple",
            "llama.cpp's ngram-simple: the newest earlier occurrence of the last n tokens",
            (
                Key("n", "int", 12, "size_ngram: tokens of the lookup pattern", 1, 1024, always=True),
                Key("m", "int", 48, "size_mgram: tokens copied after the match", 1, 1024, always=True),
            ),
            deterministic=True,
            model_free=True,
            engine="llama.cpp common_ngram_simple_draft",
        ),
        Method(
            "ngram-map-k",
            "llama.cpp's ngram-map-k: the newest earlier occurrence with m tokens after it",
            (
                Key("n", "int", 12, "size_key: tokens of the lookup key", 1, 1024, always=True),
                Key("m", "int", 48, "size_value: tokens drafted after the key", 1, 1024, always=True),
            ),
            deterministic=True,
            model_free=True,
            engine="llama.cpp common_ngram_map_draft (key only)",
        ),
        Method(
            "suffix",
            "suffix decoding: suffix trees over this request and earlier responses",
            (
                Key(
                    "depth", "int", 24, "max_tree_depth: longest suffix stored and matched", low=1, high=4096
                ),
                Key(
                    "requests",
                    "int",
                    10000,
                    "max_cached_requests: responses kept in the global tree (0: none)",
                    low=0,
                    high=2**31 - 1,
                ),
                # Bounded so that factor·match + offset stays a finite float32 (the cache's arithmetic) at
                # any depth; a draft is at most k <= 64 tokens, so larger values change nothing.
                Key(
                    "factor",
                    "float",
                    1.0,
                    "max_spec_factor: draft ≤ factor·match + offset",
                    low=0.0,
                    high=SUFFIX_LIMIT,
                ),
                Key(
                    "offset",
                    "float",
                    0.0,
                    "max_spec_offset: draft ≤ factor·match + offset",
                    low=-SUFFIX_LIMIT,
                    high=SUFFIX_LIMIT,
                ),
                Key(
                    "min_prob",
                    "float",
                    0.1,
                    "min_token_prob: stop when a token's estimate drops below",
                    low=0.0,
                    high=1.0,
                ),
            ),
            deterministic=True,
            model_free=True,
            engine="ArcticInference SuffixDecodingCache",
        ),
        Method(
            "eagle",
            "an EAGLE-3 head on the target's hidden states (speculators format), the target's LM head reused",
            (Key("head", "str", None, "the head's directory (speculators EAGLE-3 format)"),),
            deterministic=False,
            model_free=False,
            engine="EAGLE-3 (Li et al.), speculators 0.9.0 Eagle3DraftModel",
        ),
        Method(
            "layers",
            "self-speculation: the target's first n layers with its final norm and LM head",
            (Key("n", "int", 2, "decoder layers kept (fewer than the target has)", 1, 4096, always=True),),
            deterministic=False,
            model_free=False,
            engine="layer-skip self-speculation (the target's own weights)",
        ),
    )
}

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass(frozen=True)
class ExtraMemory:
    """Accelerator memory a method needs beyond the target: weights once, KV per token of context.

    ``host_note`` says what the method keeps in host memory instead (suffix trees), if anything.
    """

    weight_bytes: int
    kv_bytes_per_token: int
    host_note: str = ""

    def total(self, tokens: int) -> int:
        """Bytes for ``tokens`` tokens of KV cache (summed over the batch's sequences) plus the weights."""
        return self.weight_bytes + self.kv_bytes_per_token * tokens


@dataclass(frozen=True)
class MethodSpec:
    """A parsed method spec: every key with its value (defaults filled in), and which keys were given."""

    method: str
    values: Mapping[str, Value]
    given: frozenset[str] = field(default_factory=frozenset)

    @property
    def info(self) -> Method:
        return METHODS[self.method]

    @property
    def label(self) -> str:
        """The run key: the method, its defining keys and the keys whose value differs from the default, in
        the table's order (``ngram:min=2,max=4``, ``suffix``, ``suffix:depth=32``, ``layers:n=2``)."""
        shown = [
            f"{k.name}={self.values[k.name]}"
            for k in self.info.keys
            if k.always or k.default is None or self.values[k.name] != k.default
        ]
        return self.method + (":" + ",".join(shown) if shown else "")

    @property
    def deterministic(self) -> bool:
        return self.info.deterministic

    @property
    def model_free(self) -> bool:
        return self.info.model_free

    def int_value(self, key: str) -> int:
        return int(self.values[key])

    def float_value(self, key: str) -> float:
        return float(self.values[key])

    def str_value(self, key: str) -> str:
        return str(self.values[key])

    def extra_memory(self, target: ModelInfo, head: ModelInfo | None = None) -> ExtraMemory:
        """Honest extra accelerator memory next to ``target``.

        Model-free methods: 0 (suffix decoding keeps its trees in host memory). ``layers:n``: no weights
        of its own (it runs the target's first n layers, final norm and head in place) but its own KV
        cache for n layers, n/L of the target's per token. ``eagle``: the head's weights and its KV
        (``head`` is the head's ModelInfo: ``modeldir.head_info(modeldir.read_head(DIR))``).
        """
        if self.method == "suffix":
            return ExtraMemory(0, 0, "suffix trees in host memory, growing with prompt and cached responses")
        if self.model_free:
            return ExtraMemory(0, 0)
        if self.method == "layers":
            n, total = self.int_value("n"), max(1, target.num_layers)
            return ExtraMemory(0, target.kv_bytes_per_token * min(n, total) // total)
        if head is None:
            raise MethodSpecError(f"{self.method}: the extra memory needs the head's model facts")
        return ExtraMemory(head.weight_bytes, head.kv_bytes_per_token)


@dataclass(frozen=True)
class DraftDir:
    """A draft model directory, named as before (its run key is the loaded model's name)."""

    path: str


def is_method_spec(text: str) -> bool:
    """True when ``text`` names a method (its part before ``:`` is a method) and is not an existing path."""
    head = text.split(":", 1)[0]
    return head in METHODS and not Path(text).exists()


def parse_candidate(text: str) -> MethodSpec | DraftDir:
    """A method spec, or a model directory (anything that does not name a method).

    ``word:key=value`` with an unknown ``word`` that is not an existing path is refused as an unknown
    method rather than taken for a directory that does not exist.
    """
    text = text.strip()
    if is_method_spec(text):
        return parse_method(text)
    head, sep, rest = text.partition(":")
    if sep and _NAME.match(head) and "=" in rest and not Path(text).exists():
        raise MethodSpecError(f"{head}: unknown method (known: {', '.join(METHODS)})")
    return DraftDir(text)


def parse_method(text: str) -> MethodSpec:
    """Parse ``METHOD[:key=value,...]``; defaults fill the keys not given."""
    head, sep, rest = text.strip().partition(":")
    method = METHODS.get(head)
    if method is None:
        raise MethodSpecError(f"{head or text!r}: unknown method (known: {', '.join(METHODS)})")
    values: dict[str, Value] = {}
    given: set[str] = set()
    if sep:
        if not rest:
            raise MethodSpecError(f"{head}: nothing after ':' (write {head} or {head}:key=value)")
        for part in rest.split(","):
            name, eq, raw = part.strip().partition("=")
            name = name.strip()
            if not eq:
                raise MethodSpecError(f"{head}: {part.strip()!r} is not key=value")
            key = method.key(name)
            if key is None:
                known = ", ".join(k.name for k in method.keys)
                raise MethodSpecError(f"{head}: unknown key '{name}' (keys: {known})")
            if name in given:
                raise MethodSpecError(f"{head}: key '{name}' given twice")
            values[name] = key.parse(head, raw.strip())
            given.add(name)
    for key in method.keys:
        if key.name not in values:
            if key.default is None:
                raise MethodSpecError(f"{head}: key '{key.name}' is required ({head}:{key.name}=…)")
            values[key.name] = key.default
    if method.finish is not None:
        method.finish(values, frozenset(given))
    return MethodSpec(head, values, frozenset(given))
