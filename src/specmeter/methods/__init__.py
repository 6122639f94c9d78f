"""Naming a speculative method: a draft model directory, or a method spec ``METHOD[:key=value,...]``.

Torch-free on purpose: the CLI and configs check a candidate's name without loading anything
(docs/methods.md).
"""

from specmeter.methods.spec import (
    METHODS,
    DraftDir,
    ExtraMemory,
    Key,
    Method,
    MethodSpec,
    MethodSpecError,
    is_method_spec,
    parse_candidate,
    parse_method,
)

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
