"""Small builders for hand-made records, plus the worked example several test modules share.

The worked example (``spec_run`` / ``baseline_run``) is the one whose arithmetic is written out in
test_metrics_summary.py; keep the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence

from specmeter.metrics.records import CostCurve, Emission, ModelInfo, RequestRecord, RunRecord, StepRecord


def step(
    drafted: int, accepted: int, emitted: int | None = None, *, draft_forwards: int | None = None
) -> StepRecord:
    """A step that emits a_s + 1 tokens unless told otherwise and runs one draft forward per draft."""
    return StepRecord(
        drafted=drafted,
        accepted=accepted,
        emitted=accepted + 1 if emitted is None else emitted,
        draft_s=0.0,
        verify_s=0.0,
        draft_forwards=drafted if draft_forwards is None else draft_forwards,
    )


def emissions(*pairs: tuple[float, int]) -> tuple[Emission, ...]:
    return tuple(Emission(t=t, tokens=n) for t, n in pairs)


def request(
    id: str,
    steps: Sequence[StepRecord] = (),
    *,
    category: str = "general",
    prompt_tokens: int = 10,
    output_tokens: int | None = None,
    latency_s: float = 1.0,
    ttft_s: float = 0.1,
    emitted: tuple[Emission, ...] = (),
) -> RequestRecord:
    """A request; output_tokens defaults to the prefill token plus what the steps emitted."""
    return RequestRecord(
        id=id,
        category=category,
        prompt_tokens=prompt_tokens,
        output_tokens=1 + sum(s.emitted for s in steps) if output_tokens is None else output_tokens,
        latency_s=latency_s,
        ttft_s=ttft_s,
        prefill_s=0.0,
        steps=tuple(steps),
        emissions=emitted,
    )


def model(name: str, weight_bytes: int, kv_bytes_per_token: int) -> ModelInfo:
    return ModelInfo(
        name=name,
        path=f"/models/{name}",
        architecture="LlamaForCausalLM",
        params=weight_bytes // 2,
        weight_bytes=weight_bytes,
        kv_bytes_per_token=kv_bytes_per_token,
        dtype="bfloat16",
        num_layers=2,
        num_kv_heads=1,
        head_dim=kv_bytes_per_token // 8 if kv_bytes_per_token >= 8 else 1,
    )


TARGET = model("target", weight_bytes=1000, kv_bytes_per_token=10)
DRAFT = model("draft", weight_bytes=100, kv_bytes_per_token=2)
CURVE = CostCurve(target_s=(0.010, 0.011, 0.012, 0.013, 0.014), draft_s=0.002)


def run(
    requests: Sequence[RequestRecord],
    *,
    draft: ModelInfo | None = DRAFT,
    k: int = 4,
    cost_curve: CostCurve | None = CURVE,
) -> RunRecord:
    return RunRecord(
        target=TARGET,
        draft=draft,
        k=k,
        temperature=0.0,
        top_p=1.0,
        requests=tuple(requests),
        cost_curve=cost_curve,
    )


def spec_run() -> RunRecord:
    """The worked example: two requests, k = 4, mixed d_s, a target-only step, an EOS-cut step."""
    a = request(
        "a",
        [step(4, 4), step(4, 1), step(2, 0), step(0, 0)],  # emits 5, 2, 1, 1 -> 9 (+1 prefill = 10)
        category="legal",
        prompt_tokens=20,
        latency_s=0.6,
        ttft_s=0.1,
        emitted=emissions((0.1, 1), (0.3, 5), (0.4, 2), (0.5, 1), (0.6, 1)),
    )
    b = request(
        "b",
        [step(4, 2), step(4, 0), step(4, 3, emitted=2)],  # EOS after 2 of the 4 tokens -> 3+1+2 = 6 (+1 = 7)
        category="general",
        prompt_tokens=30,
        latency_s=1.5,
        ttft_s=0.2,
        emitted=emissions((0.2, 1), (0.4, 3), (0.5, 1), (1.5, 2)),
    )
    return run([a, b])


def baseline_run() -> RunRecord:
    """Baseline of the worked example: the same ids, one target-only step per token after the first."""
    a = request("a", [step(0, 0)] * 9, category="legal", prompt_tokens=20, latency_s=1.2, ttft_s=0.1)
    b = request("b", [step(0, 0)] * 6, category="general", prompt_tokens=30, latency_s=2.1, ttft_s=0.2)
    return run([a, b], draft=None, k=0, cost_curve=None)
