"""The one reader of Hugging Face model directories: config.json, tokenizer files, safetensors headers.

No torch, no weights: ``compat`` inspects a 70B checkpoint in under a second, the native loader checks a
directory before it loads anything, and the vLLM path gets the memory facts of models it never loads.
Every problem is a :class:`ModelDirError` with one line naming the file (``.../config.json: unreadable
config (Expecting ',' at line 3 column 5)``).

* ``files`` — :func:`read_model_config`, :class:`ModelShape` (layers, KV heads, head dim, context, dtype),
  :func:`eos_ids`, :func:`read_json`, :func:`require_tokenizer_files`.
* ``tokenizer`` — :func:`read_tokenizer` -> :class:`TokenizerFacts` (vocabulary, specials, template).
* ``weights`` — :func:`read_weights` -> :class:`WeightFacts` from the headers, file sizes checked.
* ``head`` — :func:`read_head` -> :class:`HeadFacts` of an EAGLE-3 head (speculators format);
  :func:`head_info` -> its ``ModelInfo`` (own weights, one layer's KV).
* ``facts`` — :func:`inspect_model` -> :class:`ModelFacts`; :func:`model_info` -> ``ModelInfo``.
"""

from specmeter.modeldir.facts import ModelFacts, inspect_model, model_info, shape_kv_bytes_per_token
from specmeter.modeldir.files import (
    TOKENIZER_FILES,
    ModelDirError,
    ModelShape,
    eos_ids,
    first_line,
    read_json,
    read_model_config,
    require_tokenizer_files,
)
from specmeter.modeldir.head import HeadFacts, head_info, is_head_config, read_head
from specmeter.modeldir.tokenizer import SPECIAL_ROLES, TokenizerFacts, read_tokenizer
from specmeter.modeldir.weights import WeightFacts, read_weights

__all__ = [
    "SPECIAL_ROLES",
    "TOKENIZER_FILES",
    "HeadFacts",
    "ModelDirError",
    "ModelFacts",
    "ModelShape",
    "TokenizerFacts",
    "WeightFacts",
    "eos_ids",
    "first_line",
    "head_info",
    "inspect_model",
    "is_head_config",
    "model_info",
    "read_head",
    "read_json",
    "read_model_config",
    "read_tokenizer",
    "read_weights",
    "require_tokenizer_files",
    "shape_kv_bytes_per_token",
]
