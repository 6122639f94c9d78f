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

__all__ = ["DRAFT_MODEL", "method_entry", "method_of_entry"]

DRAFT_MODEL = "draft_model"


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
