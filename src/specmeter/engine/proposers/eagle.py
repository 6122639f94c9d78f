"""An EAGLE-3 head on the native target, and the proposer that drafts with it (method ``eagle:head=DIR``).

The head (Li et al., EAGLE-3; the layout and the arithmetic of ``speculators`` 0.9.0 from PyPI:
``speculators/models/eagle3/core.py`` ``Eagle3DraftModel.forward`` and ``model_definitions.py``
``Eagle3FirstLayerMixin.forward``; its directory format: ``modeldir.head``) is one decoder layer that reads
the target instead of the text:

* ``fc`` maps the target's hidden states at a position t (the inputs of its layers
  ``eagle_aux_hidden_state_layer_ids``, concatenated: ``NativeLlama.capture``) to the head's width;
* the decoder layer's attention sees ``concat(input_layernorm(embed(x_{t+1})), hidden_norm(h))``
  (2·hidden wide; the residual is h, or hidden_norm(h) with ``norm_before_residual``), then the MLP as in
  Llama;
* ``norm`` and the target's LM head turn its output g_t into the distribution of x_{t+2}.

Entry t of the head's KV cache holds (h_t, x_{t+1}) at RoPE position t + 1 (speculators' ``shift_batch``:
position ids start at 1). The embeddings and the LM head are the target's own tensors (no copy).

**Drafting** (``EagleProposer``, as vLLM's ``EagleProposer.propose`` does for ``eagle3``). A committed
sequence x_0 … x_{n-1} has the target's hidden states of positions 0 … n-2 (``observe``: the loops pass
them after every target forward). Each proposal first feeds the head what its cache lacks of those
(catch-up: the entries after the last proposal's verified ones, usually 1 + the accepted drafts), whose
last output gives y_1; then each further draft feeds (g, y_i), g being the head's own output (pre-norm)
one position earlier, in place of the target's states it does not have: d forwards for d drafts. The
draft entries are dropped (rolled back) at the next proposal, which re-feeds the accepted positions with
the target's real states. All rows of a batch draft in lockstep with a KV cache row each, like a draft
model (``DraftModelProposer``); the single-stream loop uses the same code with one row.

Greedy rows take the argmax; sampling rows draw from q = probs(logits) with their own generator and hand
q to the verifier, so the target's distribution is kept exactly (``engine.sampling.verify_sampling``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from specmeter.engine.base import CausalLM
from specmeter.engine.llama import apply_rope, rms_norm
from specmeter.engine.proposers.proposer import Proposals, Proposer, choose_tokens, row_proposals
from specmeter.engine.sampling import SamplingParams
from specmeter.metrics.records import ModelInfo
from specmeter.modeldir import ModelDirError
from specmeter.modeldir.head import HeadFacts, head_info, head_mismatch, head_tensor_shapes, read_head

__all__ = ["EagleHead", "EagleProposer", "HeadMismatch", "check_head", "head_tensor_shapes", "load_head"]


class HeadMismatch(ValueError):
    """The head cannot run on this target; the message is one line naming the head directory."""


class EagleHead:
    """The head's weights (speculators names, fused here) and its batched KV cache: one row per sequence."""

    def __init__(
        self,
        facts: HeadFacts,
        state: Mapping[str, torch.Tensor],
        embed: torch.Tensor,
        lm_head: torch.Tensor,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        def get(name: str) -> torch.Tensor:
            return state[name].to(device=device, dtype=dtype)

        p = "layers.0."
        self.facts = facts
        self.device, self.dtype = device, dtype
        self.hidden, self.heads, self.kv_heads, self.head_dim = (
            facts.hidden, facts.heads, facts.kv_heads, facts.head_dim,
        )  # fmt: skip
        self.eps = facts.rms_norm_eps
        self.fc = get("fc.weight")
        self.qkv = torch.cat([get(p + f"self_attn.{n}_proj.weight") for n in ("q", "k", "v")])
        self.o = get(p + "self_attn.o_proj.weight")
        self.gate_up = torch.cat([get(p + "mlp.gate_proj.weight"), get(p + "mlp.up_proj.weight")])
        self.down = get(p + "mlp.down_proj.weight")
        self.in_norm = get(p + "input_layernorm.weight")
        self.hidden_norm = get(p + "hidden_norm.weight")
        self.post_norm = get(p + "post_attention_layernorm.weight")
        self.norm = get("norm.weight")
        self.embed, self.lm_head = embed, lm_head  # the target's own
        self.scale = facts.head_dim**-0.5
        inv = 1.0 / (
            facts.rope_theta ** (torch.arange(0, facts.head_dim, 2, dtype=torch.float) / facts.head_dim)
        )
        self._inv_freq = inv
        self._cos = self._sin = torch.empty(0)
        self._k = self._v = torch.empty(0)
        self._rows: list[int] = []

    # ---------------------------------------------------------------------------------------------- cache

    def reset(self, slots: int, capacity: int) -> None:
        """Empty every row; room for ``slots`` rows of ``capacity`` entries."""
        self._rows = [0] * slots
        if self._k.numel() and self._k.shape[0] >= slots and self._k.shape[2] >= capacity:
            return
        capacity = (max(capacity, 256) + 255) & ~255
        shape = (slots, self.kv_heads, capacity, self.head_dim)
        # Zeros: a masked key still meets its value in the attention matmul (weight 0); 0 · NaN would be NaN.
        self._k = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self._v = torch.zeros(shape, device=self.device, dtype=self.dtype)
        pos = torch.arange(capacity + 1, dtype=torch.float)
        freqs = torch.outer(pos, self._inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self._cos, self._sin = emb.cos().to(self.device, self.dtype), emb.sin().to(self.device, self.dtype)

    def reserve(self, capacity: int) -> None:
        """Make every row hold ``capacity`` entries, keeping their contents."""
        if self._k.numel() and self._k.shape[2] >= capacity:
            return
        old_k, old_v, rows = self._k, self._v, self._rows
        self._k = torch.empty(0)
        self.reset(len(rows), capacity)
        self._rows = rows
        used = max(rows, default=0)
        if old_k.numel():
            self._k[:, :, :used], self._v[:, :, :used] = old_k[:, :, :used], old_v[:, :, :used]

    def row_length(self, row: int) -> int:
        return self._rows[row]

    def rollback_row(self, row: int, length: int) -> None:
        if not 0 <= length <= self._rows[row]:
            raise ValueError(f"eagle head row {row}: cannot roll back to {length} from {self._rows[row]}")
        self._rows[row] = length

    def move_row(self, src: int, dst: int) -> None:
        if src == dst:
            return
        n = self._rows[src]
        self._k[dst, :, :n], self._v[dst, :, :n] = self._k[src, :, :n], self._v[src, :, :n]
        self._rows[dst] = n

    # -------------------------------------------------------------------------------------------- compute

    def combine(self, target_hidden: torch.Tensor) -> torch.Tensor:
        """``fc``: the target's concatenated hidden states [..., A·hidden] -> the head's width."""
        return F.linear(target_hidden.to(self.dtype), self.fc)

    def forward_rows(
        self, hidden: Sequence[torch.Tensor], tokens: Sequence[Sequence[int]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append entries to rows 0 … R-1: row r gets (hidden[r][i], tokens[r][i]) for each of its n_r inputs.

        ``hidden[r]`` is [n_r, hidden] (``combine``d target states, or the head's own outputs). Returns
        logits [R, n, V] and the pre-norm outputs g [R, n, hidden], n = max n_r (a row's positions past its
        own inputs hold padding garbage).
        """
        rows = len(tokens)
        counts = [len(t) for t in tokens]
        n = max(counts)
        dev = self.device
        lens = self._rows[:rows]
        if max(lens) + n > self._k.shape[2]:
            raise ValueError(f"eagle head: KV cache holds {self._k.shape[2]} entries per row")
        ids = torch.tensor([list(t) + [t[-1]] * (n - len(t)) for t in tokens], dtype=torch.long, device=dev)
        h = torch.zeros(rows, n, self.hidden, device=dev, dtype=self.dtype)
        for r, x in enumerate(hidden):
            h[r, : x.shape[0]] = x
        lens_t = torch.tensor(lens, dtype=torch.long, device=dev)
        pos = lens_t[:, None] + torch.arange(n, device=dev)[None, :]  # [R, n] cache entries
        cos, sin = self._cos[pos + 1].unsqueeze(1), self._sin[pos + 1].unsqueeze(1)  # RoPE at entry + 1
        key_end = max(n0 + c for n0, c in zip(lens, counts, strict=True))
        mask = (torch.arange(key_end, device=dev)[None, None, :] <= pos[:, :, None]).unsqueeze(1)
        row_idx = torch.arange(rows, device=dev)[:, None]

        embeds = rms_norm(F.embedding(ids, self.embed), self.in_norm, self.eps)
        normed = rms_norm(h, self.hidden_norm, self.eps)
        residual = normed if self.facts.norm_before_residual else h
        x = torch.cat([embeds, normed], dim=-1)  # [R, n, 2·hidden]
        q_size, kv_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        q, k, v = F.linear(x, self.qkv).split((q_size, kv_size, kv_size), dim=-1)
        q = apply_rope(q.view(rows, n, self.heads, self.head_dim).transpose(1, 2), cos, sin)  # [R, H, n, d]
        k = apply_rope(k.view(rows, n, self.kv_heads, self.head_dim).transpose(1, 2), cos, sin)
        self._k[row_idx, :, pos] = k.transpose(1, 2)
        self._v[row_idx, :, pos] = v.view(rows, n, self.kv_heads, self.head_dim)
        attn = F.scaled_dot_product_attention(
            q, self._k[:rows, :, :key_end], self._v[:rows, :, :key_end], attn_mask=mask, scale=self.scale,
            enable_gqa=self.kv_heads != self.heads,
        )  # fmt: skip
        out = residual + F.linear(attn.transpose(1, 2).reshape(rows, n, q_size), self.o)
        gate, up = F.linear(rms_norm(out, self.post_norm, self.eps), self.gate_up).split(
            self.facts.intermediate, -1
        )
        out = out + F.linear(F.silu(gate) * up, self.down)
        for r, c in enumerate(counts):
            self._rows[r] = lens[r] + c
        logits = F.linear(rms_norm(out, self.norm, self.eps), self.lm_head).float()
        return logits, out


class EagleProposer(Proposer):
    """Drafts with an :class:`EagleHead` from the target's hidden states; see the module docstring."""

    deterministic = False
    reads_hidden = True

    def __init__(self, head: EagleHead, target: CausalLM, info: ModelInfo, name: str) -> None:
        self.head = head
        self.target = target
        self.info = info
        self.name = name
        self.vocab_size = target.vocab_size
        self._vocab = target.vocab_size
        self._true: list[int] = []  # per row: head entries made from the target's own states
        self._pending: list[list[torch.Tensor]] = []  # per row: target states observed, not yet fed
        target.capture = head.facts.aux_layers  # type: ignore[attr-defined]  # NativeLlama (load_head checks)

    def open(self, rows: int, capacity: int, vocab: int, *, batched: bool) -> None:
        self._vocab = vocab
        self.target.capture = self.head.facts.aux_layers  # type: ignore[attr-defined]  # NativeLlama
        self.head.reset(rows, capacity + 1)
        self._true = [0] * rows
        self._pending = [[] for _ in range(rows)]

    def reserve(self, capacity: int) -> None:
        self.head.reserve(capacity + 1)

    def start(self, first_row: int, prompts: Sequence[Sequence[int]]) -> None:
        for r in range(first_row, first_row + len(prompts)):
            self.head.rollback_row(r, 0)
            self._true[r] = 0
            self._pending[r] = []

    def observe(self, row: int, hidden: torch.Tensor) -> None:
        self._pending[row].append(hidden)

    def finish(self, row: int) -> None:
        self._pending[row] = []

    def move(self, src: int, dst: int) -> None:
        self.head.move_row(src, dst)
        self._true[dst], self._pending[dst] = self._true[src], self._pending[src]
        self._pending[src] = []

    def propose(
        self,
        contexts: Sequence[Sequence[int]],
        ds: Sequence[int],
        params: Sequence[SamplingParams],
        generators: Sequence[torch.Generator | None],
    ) -> Proposals:
        b, depth = len(contexts), max(ds, default=0)
        ys: list[list[int]] = [[] for _ in range(b)]
        qs: list[list[torch.Tensor]] = [[] for _ in range(b)]
        if depth > 0:
            head = self.head
            feats, feeds = [], []
            for r, seq in enumerate(contexts):
                head.rollback_row(r, self._true[r])  # drop last step's draft entries
                states = torch.cat(self._pending[r]) if self._pending[r] else None
                if states is None or self._true[r] + states.shape[0] != len(seq) - 1:
                    seen = self._true[r] + (0 if states is None else states.shape[0])
                    raise RuntimeError(f"eagle: row {r} has the target's states of {seen} positions, "
                                       f"needs {len(seq) - 1}")  # fmt: skip
                feats.append(head.combine(states))
                feeds.append(list(seq[self._true[r] + 1 :]))  # x_{t+1} beside h_t
                self._true[r], self._pending[r] = len(seq) - 1, []
            head.reserve(max(len(s) for s in contexts) + depth + 1)
            logits, out = head.forward_rows(feats, feeds)
            last = torch.tensor([len(f) - 1 for f in feeds], device=logits.device)
            at = torch.arange(b, device=logits.device)
            q_logits, g = logits[at, last, : self._vocab], out[at, last]  # [B, V], [B, hidden]
            for i in range(depth):
                tokens = choose_tokens(q_logits, params, generators, ys, qs)
                if i < depth - 1:
                    logits, out = head.forward_rows([g[r : r + 1] for r in range(b)], [[t] for t in tokens])
                    q_logits, g = logits[:, 0, : self._vocab], out[:, 0]
        return row_proposals(ys, qs, ds, params, depth)


def check_head(facts: HeadFacts, target: CausalLM, target_layers: int, target_hidden: int) -> None:
    """HeadMismatch (one line) unless the head was made for a target of this shape."""
    problem = head_mismatch(
        facts, name=target.info.name, layers=target_layers, hidden=target_hidden, vocab=target.vocab_size
    )
    if problem is not None:
        raise HeadMismatch(problem)


def load_head(path: Path, target: CausalLM, name: str | None = None) -> EagleProposer:
    """The proposer of the head directory ``path`` on the native ``target``.

    ModelDirError: not a head (or unreadable); HeadMismatch: a head for another target, or a target the
    head cannot read (not the native engine). Both are one line naming the directory.
    """
    from safetensors.torch import load_file

    from specmeter.engine.llama import NativeLlama

    if not isinstance(target, NativeLlama):
        raise HeadMismatch(
            f"{path}: an EAGLE head reads the target's hidden states, which only the native engine keeps "
            f"({target.info.name} runs on {target.info.implementation})"
        )
    facts = read_head(path)
    check_head(facts, target, len(target.layers), target.hidden)
    state: dict[str, torch.Tensor] = {}
    for file in sorted(path.glob("*.safetensors")):
        try:
            state.update(load_file(str(file)))
        except Exception as e:  # safetensors raises several types for a corrupt file
            raise ModelDirError(f"{file}: unreadable safetensors file ({e})") from e
    for key, shape in head_tensor_shapes(facts).items():
        if key not in state:
            raise ModelDirError(f"{path}: not an EAGLE-3 head (tensor {key!r} missing)")
        if tuple(state[key].shape) != shape:
            raise HeadMismatch(f"{path}: tensor {key!r} is {list(state[key].shape)}, expected {list(shape)}")
    head = EagleHead(facts, state, target.embed, target.lm_head, target.device, target.dtype)
    label = name or f"eagle:head={path}"
    return EagleProposer(head, target, head_info(facts, label), label)
