"""A stand-in draft: the target's own first layers, for what-if runs that have no draft yet.

``whatif`` forces acceptance (synthetic verification), so what the draft proposes does not matter — only
what proposing costs. A team deciding whether to build a draft has no draft to time; this gives one of a
chosen cost: the target's first ⌈f · L⌉ decoder layers with the target's embeddings, final norm and LM head,
sharing the target's weight tensors (no copy) and keeping its own KV caches.

Its cost is a fraction of the target's, not exactly f of it: the embedding lookup and the LM head run in
full whatever the layer count (on the bundled 17.3M target, one of ten layers and the head make a forward
about 15% of the target's FLOPs), and on a CPU a tiny model pays fixed per-forward overhead too. So
``whatif`` measures the stand-in's real cost ratio c = t_D(1) / t_T(1) and prints it beside f; that c,
not f, is what the surface was measured at.

Native engine only (the layers are the native model's own list); a transformers-backed target gets one
clear error. ``layer_draft`` builds the same thing by layer count for the ``layers:n`` method (a real
candidate: self-speculation with the target's own first layers).
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import TYPE_CHECKING

from specmeter.engine.loader import LoadedModel

if TYPE_CHECKING:
    from specmeter.engine.llama import NativeLlama

__all__ = ["StandInUnsupported", "layer_draft", "standin_draft", "standin_layers"]


class StandInUnsupported(ValueError):
    """The target cannot lend its layers (not the native engine)."""


def standin_layers(fraction: float, layers: int) -> int:
    """⌈f · L⌉, at least 1 and at most L − 1 (a stand-in as deep as the target would be the target)."""
    if not math.isfinite(fraction) or not 0.0 < fraction < 1.0:
        raise ValueError(f"a stand-in's cost fraction must be in (0, 1), got {fraction}")
    if layers < 2:
        raise StandInUnsupported(f"the target has {layers} layer(s); a stand-in needs at least 2 to cut from")
    return min(layers - 1, max(1, math.ceil(fraction * layers - 1e-9)))


def standin_draft(target: LoadedModel, fraction: float) -> LoadedModel:
    """A draft made of the target's first ⌈f · L⌉ layers (shared tensors, separate caches)."""
    model = _native(target, "a stand-in draft", "pass --draft instead")
    n = standin_layers(fraction, len(model.layers))
    total = target.info.num_layers or len(model.layers)
    return _first_layers(target, model, n, f"stand-in ({n}/{total} layers of {target.info.name})")


def layer_draft(target: LoadedModel, n: int) -> LoadedModel:
    """Self-speculation (method ``layers:n``): the target's first ``n`` layers, final norm and LM head.

    The same construction as the stand-in: the weight tensors are the target's own (no copy, no extra
    weight memory), the KV caches are the draft's own (n layers' worth per token). 1 <= n < L.
    """
    model = _native(target, "self-speculation (layers:n)", "use a draft model or a model-free method")
    layers = len(model.layers)
    if not 1 <= n < layers:
        raise StandInUnsupported(
            f"layers: key 'n' must be in 1 … {layers - 1} (the target has {layers} layers)"
        )
    return _first_layers(target, model, n, f"layers:n={n}")


def _native(target: LoadedModel, what: str, instead: str) -> NativeLlama:
    from specmeter.engine.llama import NativeLlama

    if not isinstance(target.model, NativeLlama):
        raise StandInUnsupported(
            f"{target.info.name}: {what} needs the native engine (the target runs on "
            f"{target.info.implementation}); {instead}"
        )
    return target.model


def _first_layers(target: LoadedModel, model: NativeLlama, n: int, name: str) -> LoadedModel:
    standin = copy.copy(model)  # shares every weight tensor; the caches are reset below
    standin.layers = model.layers[:n]
    standin._k, standin._v, standin._length = [], [], 0
    standin._bk, standin._bv, standin._rows = [], [], []
    total = target.info.num_layers or len(model.layers)
    per_layer = _layer_params(model)
    head = target.info.params - per_layer * len(model.layers)
    params = head + per_layer * n
    info = replace(
        target.info,
        name=name,
        params=params,
        weight_bytes=int(target.info.weight_bytes * params / max(1, target.info.params)),
        kv_bytes_per_token=target.info.kv_bytes_per_token * n // max(1, total),
        num_layers=n,
    )
    standin.info = info
    return LoadedModel(model=standin, tokenizer=target.tokenizer, eos_ids=target.eos_ids, info=info)


def _layer_params(model: object) -> int:
    layer = model.layers[0]  # type: ignore[attr-defined]
    tensors = [layer.qkv, layer.o, layer.gate_up, layer.down, layer.in_norm, layer.post_norm]
    tensors += [t for t in (layer.qkv_bias, layer.o_bias, layer.q_norm, layer.k_norm) if t is not None]
    return sum(int(t.numel()) for t in tensors)
