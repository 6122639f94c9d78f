"""Sampling math and the two verifiers (greedy exact match; rejection sampling, Leviathan et al. 2023).

Names follow the paper: ``p`` is the target distribution, ``q`` the draft's, ``y`` the drafted tokens.
Temperature and top-p are applied by ``probs`` to both models identically, so the guarantee is that the
speculative output is distributed exactly as the target's *processed* distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Temperatures below this are greedy decoding (vLLM's ``_SAMPLING_EPS``, vllm/sampling_params.py, v0.32):
# dividing logits by 1e-300 overflows to inf and the softmax to NaN, and long before that the distribution
# is a point mass on the argmax anyway. docs/serving.md ("Limits") states it.
GREEDY_TEMPERATURE = 1e-5


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0  # below GREEDY_TEMPERATURE (0 included) means greedy
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_TEMPERATURE


def probs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Logits [..., V] -> probabilities [..., V] after temperature and top-p (nucleus) filtering.

    Greedy parameters give the argmax's point mass. Top-p always keeps the most likely token, as vLLM's
    top-p filter does, so a ``top_p`` too small to survive float32 (5e-324) is top-1 rather than no token.
    """
    if params.greedy:
        return torch.zeros_like(logits, dtype=torch.float).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    p = torch.softmax(logits.float() / params.temperature, dim=-1)
    if params.top_p >= 1.0:
        return p
    sorted_p, order = torch.sort(p, dim=-1, descending=True)
    # Keep the smallest prefix whose mass reaches top_p: a token stays if the mass before it is < top_p.
    keep_sorted = (sorted_p.cumsum(-1) - sorted_p) < params.top_p
    keep_sorted[..., 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    p = p * keep
    return p / p.sum(-1, keepdim=True)


def sample(p: torch.Tensor, generator: torch.Generator | None) -> int:
    """Draw one token id from a probability vector [V]."""
    return int(torch.multinomial(p, 1, generator=generator).item())


@dataclass(frozen=True)
class Verdict:
    accepted: int  # a: number of leading draft tokens accepted
    token: int  # the correction token (on rejection) or the bonus token (all accepted)


def verify_greedy(target_logits: torch.Tensor, y: torch.Tensor) -> Verdict:
    """Exact-match verification.

    target_logits: [d+1, V], row i predicts the token after draft prefix y[:i]; y: [d] drafted ids.
    """
    choice = target_logits.argmax(-1)  # [d+1]
    d = int(y.shape[0])
    mismatch = (choice[:d] != y).nonzero()
    a = int(mismatch[0].item()) if mismatch.numel() else d
    return Verdict(accepted=a, token=int(choice[a].item()))


def verify_sampling(
    p: torch.Tensor, q: torch.Tensor | None, y: torch.Tensor, generator: torch.Generator | None
) -> Verdict:
    """Rejection-sampling verification.

    p: [d+1, V] target probabilities; q: [d, V] draft probabilities the tokens y: [d] were drawn from.
    Token y_i is accepted with probability min(1, p_i(y_i) / q_i(y_i)); on the first rejection the
    replacement is drawn from the residual norm(max(0, p_i - q_i)); if all d are accepted a bonus token is
    drawn from p_{d+1}. The output is then distributed exactly as p.

    ``q=None`` is a deterministic proposal (n-gram, suffix decoding): q_i is one-hot on y_i, so y_i is
    accepted with probability p_i(y_i) and the residual is p_i with y_i removed, renormalised — the same
    rule, exactly, without building the one-hot rows.
    """
    d = int(y.shape[0])
    idx = torch.arange(d, device=y.device)
    p_y = p[idx, y]  # [d]
    q_y = q[idx, y] if q is not None else torch.ones_like(p_y)
    r = torch.rand(d, generator=generator, device=p.device) if d else p_y
    # r < p/q written as r*q < p so q_y == 0 (impossible for a drawn token, but cheap to guard) never divides.
    rejected = (r * q_y >= p_y).nonzero()
    if rejected.numel() == 0:
        return Verdict(accepted=d, token=sample(p[d], generator))
    a = int(rejected[0].item())
    if q is None:
        residual = p[a].clone()
        residual[y[a]] = 0.0  # max(0, p - onehot(y)): y's mass p(y) - 1 <= 0 goes, the rest stays
    else:
        residual = (p[a] - q[a]).clamp_min(0)
    total = residual.sum()
    # p == q exactly leaves no residual mass; rejection then has probability 0, so fall back to p.
    token = sample(residual / total if total > 0 else p[a], generator)
    return Verdict(accepted=a, token=token)
