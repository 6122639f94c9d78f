"""Naming a speculative method: a draft model directory, or a method spec ``METHOD[:key=value,...]``.

Torch-free on purpose: the CLI and configs check a candidate's name without loading anything
(docs/methods.md).
"""

from specmeter.methods.engines import vllm_speculative_config
from specmeter.methods.entry import DRAFT_MODEL, method_entry, method_of_entry
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
    "DRAFT_MODEL",
    "METHODS",
    "DraftDir",
    "ExtraMemory",
    "Key",
    "Method",
    "MethodSpec",
    "MethodSpecError",
    "is_method_spec",
    "method_entry",
    "method_of_entry",
    "parse_candidate",
    "parse_method",
    "vllm_speculative_config",
]
