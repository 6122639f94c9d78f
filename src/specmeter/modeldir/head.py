"""An EAGLE-3 head directory in the format of ``speculators`` 0.9.0 (PyPI), read without torch.

The format is what ``speculators``' ``Eagle3DraftModel`` saves (``speculators/models/eagle3/config.py``,
``core.py``, ``model_definitions.py`` and ``speculators/model.py`` of the 0.9.0 wheel) and vLLM loads as
``method: "eagle3"``: a ``config.json`` with ``"architectures": ["Eagle3Speculator"]``,
``"speculators_model_type": "eagle3"``, the decoder layer's own settings in ``transformer_layer_config`` (a
Llama config: hidden size, heads, KV heads, head dim, intermediate size, vocabulary, RoPE),
``draft_vocab_size``, ``norm_before_residual``, ``eagle_aux_hidden_state_layer_ids`` (the target layers
whose input the head reads) and ``speculators_config`` (algorithm ``eagle3``, a greedy proposal method,
the verifier's ``name_or_path`` and ``architectures``); weights in ``*.safetensors`` under the names
``fc.weight``, ``layers.0.{self_attn.{q,k,v,o}_proj,mlp.{gate,up,down}_proj,input_layernorm,hidden_norm,
post_attention_layernorm}.weight`` and ``norm.weight``. ``embed_tokens.weight`` and ``lm_head.weight`` may
be absent: speculators then loads them from the verifier, and specmeter always uses the target's own (the head
reuses them; with a draft vocabulary as large as the target's, vLLM shares them too).

What specmeter does not run (one line says so): more than one decoder layer, a reduced draft vocabulary
(``d2t``/``t2d``), ``norm_before_fc``, ``fc_norm``, ``norm_output``, a ``target_hidden_size`` other than the
head's hidden size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter.metrics.memory import bytes_per_element, kv_bytes_per_token
from specmeter.metrics.records import ModelInfo
from specmeter.modeldir.files import ModelDirError, read_model_config
from specmeter.modeldir.weights import WeightFacts, read_weights, tensor_names, tensor_shapes

__all__ = [
    "EAGLE3_ARCHITECTURES",
    "HeadFacts",
    "head_info",
    "head_mismatch",
    "head_tensor_shapes",
    "is_head_config",
    "read_head",
    "stored_shape_problem",
]

EAGLE3_ARCHITECTURES = ("Eagle3Speculator",)
#: Weights the head may carry that specmeter takes from the target instead (not head memory).
SHARED_WEIGHTS = ("embed_tokens.weight", "lm_head.weight")


@dataclass(frozen=True)
class HeadFacts:
    """An EAGLE-3 head's shape, the target layers it reads, and its weights' header facts."""

    path: Path
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int  # the target vocabulary it was made for (transformer_layer_config.vocab_size)
    rms_norm_eps: float
    rope_theta: float
    max_positions: int
    aux_layers: tuple[int, ...]
    norm_before_residual: bool
    verifier: str  # speculators_config.verifier.name_or_path ("" when absent)
    dtype: str
    weights: WeightFacts
    shared_params: int  # of the stored params: embed_tokens / lm_head (the target's own are used)

    @property
    def weight_bytes(self) -> int:
        """The head's own weights at their stored dtype (embeddings and LM head are the target's)."""
        return (self.weights.params - self.shared_params) * bytes_per_element(self.dtype)

    @property
    def kv_bytes_per_token(self) -> int:
        """One decoder layer's K and V per token (the head's own KV cache)."""
        return kv_bytes_per_token(1, self.kv_heads, self.head_dim, bytes_per_element(self.dtype))


def is_head_config(config: dict[str, Any]) -> bool:
    """True for a speculators EAGLE-3 config (its architecture or its speculators model type says so)."""
    archs = config.get("architectures")
    named = isinstance(archs, list) and any(a in EAGLE3_ARCHITECTURES for a in archs)
    return named or config.get("speculators_model_type") == "eagle3"


def _int(where: str, block: dict[str, Any], key: str, default: int | None = None) -> int:
    value = block.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ModelDirError(f"{where}: field '{key}' missing or not a positive integer")
    return value


def _eps(where: str, block: dict[str, Any]) -> float:
    value = block.get("rms_norm_eps", 1e-6)
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1
    if not ok:
        raise ModelDirError(f"{where}: field 'rms_norm_eps' is {value!r}, not a number in (0, 1)")
    return float(value)


def read_head(path: Path) -> HeadFacts:
    """The facts of the EAGLE-3 head directory ``path``; ModelDirError (one line) when it is not one."""
    config = read_model_config(path)
    where = str(path / "config.json")
    if not is_head_config(config):
        archs = config.get("architectures")
        raise ModelDirError(
            f"{where}: not an EAGLE-3 head (architectures {archs!r}; expected {list(EAGLE3_ARCHITECTURES)} "
            "in the speculators format)"
        )
    layer = config.get("transformer_layer_config")
    if not isinstance(layer, dict):
        raise ModelDirError(f"{where}: field 'transformer_layer_config' missing or not an object")
    lwhere = f"{where}: transformer_layer_config"
    hidden = _int(lwhere, layer, "hidden_size")
    heads = _int(lwhere, layer, "num_attention_heads")
    kv_heads = _int(lwhere, layer, "num_key_value_heads", heads)
    head_dim = _int(lwhere, layer, "head_dim", hidden // heads)
    vocab = _int(lwhere, layer, "vocab_size")
    layers = _int(lwhere, layer, "num_hidden_layers", 1)
    if layers != 1:
        raise ModelDirError(f"{lwhere}: {layers} decoder layers; specmeter runs EAGLE-3 heads of one layer")
    draft_vocab = config.get("draft_vocab_size", vocab)
    if draft_vocab != vocab:
        raise ModelDirError(
            f"{where}: field 'draft_vocab_size' is {draft_vocab}, not the vocabulary {vocab}: a reduced "
            "draft vocabulary (d2t) is not supported"
        )
    for flag in ("norm_before_fc", "fc_norm", "norm_output"):
        if config.get(flag):
            raise ModelDirError(f"{where}: field '{flag}' is set; specmeter runs heads without it")
    target_hidden = config.get("target_hidden_size")
    if target_hidden not in (None, hidden):
        raise ModelDirError(
            f"{where}: field 'target_hidden_size' ({target_hidden}) differs from the head's {hidden}"
        )
    aux = config.get("eagle_aux_hidden_state_layer_ids")
    if not (isinstance(aux, list) and aux and all(isinstance(i, int) and i >= 0 for i in aux)):
        raise ModelDirError(
            f"{where}: field 'eagle_aux_hidden_state_layer_ids' missing or not a list of layers"
        )
    rope = layer.get("rope_parameters") or {}
    raw_theta = rope.get("rope_theta", layer.get("rope_theta", 10000.0)) if isinstance(rope, dict) else None
    if not isinstance(raw_theta, int | float) or isinstance(raw_theta, bool):
        raise ModelDirError(f"{lwhere}: field 'rope_theta' missing or not a number")
    theta = float(raw_theta)
    if isinstance(rope, dict) and rope.get("rope_type", "default") != "default":
        raise ModelDirError(
            f"{lwhere}: rope type {rope.get('rope_type')!r}; specmeter runs default RoPE heads"
        )
    spec = config.get("speculators_config")
    verifier = spec.get("verifier") if isinstance(spec, dict) else None
    name = verifier.get("name_or_path") if isinstance(verifier, dict) else None
    weights = read_weights(path)
    if weights is None:
        raise ModelDirError(f"{path}: no *.safetensors weights (an EAGLE-3 head stores them there)")
    stored = (
        config.get("torch_dtype") or config.get("dtype") or layer.get("torch_dtype") or layer.get("dtype")
    )
    dtype = stored.removeprefix("torch.") if isinstance(stored, str) else weights.dtype
    shared = _shared_params(path, hidden, vocab)
    return HeadFacts(
        path=path,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=_int(lwhere, layer, "intermediate_size"),
        vocab=vocab,
        rms_norm_eps=_eps(lwhere, layer),
        rope_theta=theta,
        max_positions=_int(lwhere, layer, "max_position_embeddings", 4096),
        aux_layers=tuple(aux),
        norm_before_residual=bool(config.get("norm_before_residual", False)),
        verifier=str(name) if name else "",
        dtype=dtype,
        weights=weights,
        shared_params=shared,
    )


def _shared_params(path: Path, hidden: int, vocab: int) -> int:
    names = set(tensor_names(path))
    return sum(vocab * hidden for n in SHARED_WEIGHTS if n in names)


def head_info(facts: HeadFacts, name: str | None = None) -> ModelInfo:
    """The head's ModelInfo for the memory metrics: its own weights and its one layer's KV per token."""
    return ModelInfo(
        name=name or f"eagle:head={facts.path}",
        path=str(facts.path),
        architecture=EAGLE3_ARCHITECTURES[0],
        params=facts.weights.params - facts.shared_params,
        weight_bytes=facts.weight_bytes,
        kv_bytes_per_token=facts.kv_bytes_per_token,
        dtype=facts.dtype,
        num_layers=1,
        num_kv_heads=facts.kv_heads,
        head_dim=facts.head_dim,
        implementation="native",
    )


def head_tensor_shapes(facts: HeadFacts, aux: int | None = None) -> dict[str, tuple[int, ...]]:
    """Every tensor an EAGLE-3 head of ``facts``' shape stores, by its speculators name (the format)."""
    h, a = facts.hidden, aux if aux is not None else len(facts.aux_layers)
    q, kv = facts.heads * facts.head_dim, facts.kv_heads * facts.head_dim
    p = "layers.0."
    return {
        "fc.weight": (h, a * h),
        p + "self_attn.q_proj.weight": (q, 2 * h),
        p + "self_attn.k_proj.weight": (kv, 2 * h),
        p + "self_attn.v_proj.weight": (kv, 2 * h),
        p + "self_attn.o_proj.weight": (h, q),
        p + "mlp.gate_proj.weight": (facts.intermediate, h),
        p + "mlp.up_proj.weight": (facts.intermediate, h),
        p + "mlp.down_proj.weight": (h, facts.intermediate),
        p + "input_layernorm.weight": (h,),
        p + "hidden_norm.weight": (h,),
        p + "post_attention_layernorm.weight": (h,),
        "norm.weight": (h,),
    }


def head_mismatch(facts: HeadFacts, *, name: str, layers: int, hidden: int, vocab: int) -> str | None:
    """Why the head cannot run on a target ``name`` of ``layers`` layers, hidden size ``hidden`` and
    vocabulary ``vocab`` (one line naming the head directory), or None: the one check of a head against a
    target, for the engine (``load_head``) and for ``compat`` (from the target's config.json)."""
    if facts.hidden != hidden or facts.vocab != vocab:
        return (
            f"{facts.path}: a head for another target (hidden size {facts.hidden}, vocabulary "
            f"{facts.vocab}); {name} has hidden size {hidden}, vocabulary {vocab}"
        )
    if any(i > layers for i in facts.aux_layers):
        return f"{facts.path}: reads target layers {list(facts.aux_layers)}; {name} has {layers}"
    return None


def stored_shape_problem(facts: HeadFacts) -> str | None:
    """Why the head's stored tensors (safetensors headers) are not those of its config's shape, or None:
    a tensor missing, or of another shape."""
    stored = tensor_shapes(facts.path)
    for key, shape in head_tensor_shapes(facts).items():
        if key not in stored:
            return f"{facts.path}: not an EAGLE-3 head (tensor {key!r} missing)"
        if stored[key] != shape:
            return f"{facts.path}: tensor {key!r} is {list(stored[key])}, expected {list(shape)}"
    return None
