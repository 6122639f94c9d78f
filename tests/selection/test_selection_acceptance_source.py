"""``selection.acceptance_source``: a result's candidates as acceptance figures, pooled into domains.

Pooling categories by their per-position counts must give what one summary of their requests together
gives (α, τ, the product-limit rates): checked on random runs, and on a real replay result (its categories
against its overall summary). The figures a summary is rebuilt into must price like the summary itself
under ``replay --costs``' predictor.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from replay_results import read, replay_result
from specmeter.metrics.batch_surface import tau_by_k
from specmeter.metrics.records import ModelInfo, RequestRecord, RunRecord, StepRecord
from specmeter.metrics.summary import summarize, summarize_by_category
from specmeter.pricing import predictor
from specmeter.selection.acceptance_source import (
    AcceptanceSourceError,
    Figures,
    figures_of,
    pool,
    read_source,
)

INFO = ModelInfo("m", "/m", "x", 1, 1, 1, "float32", 1, 1, 1)


def _random_run(rng: random.Random, k: int) -> RunRecord:
    requests = []
    for i in range(rng.randrange(12, 40)):
        steps = []
        for _ in range(rng.randrange(1, 30)):
            d = rng.choice([0, *range(1, k + 1)] if rng.random() < 0.3 else [k])  # short and empty drafts too
            a = min(d, int(rng.expovariate(0.6)))
            steps.append(StepRecord(d, a, a + 1, 0.0, 0.0, d))
        emitted = sum(s.emitted for s in steps) + 1
        category = rng.choice(["a", "b", "c/x", "c/y"])
        requests.append(RequestRecord(f"r{i}", category, 5, emitted, 1.0, 0.1, 0.1, tuple(steps)))
    return RunRecord(INFO, INFO, k, 0.0, 1.0, tuple(requests))


def _same(a: Figures, b: Figures) -> None:
    assert (a.requests, a.tokens, a.steps, a.forwards, a.drafted, a.accepted_tokens, a.rejections) == (
        b.requests, b.tokens, b.steps, b.forwards, b.drafted, b.accepted_tokens, b.rejections,
    )  # fmt: skip
    width = max(len(a.reached), len(b.reached))  # a summary lists positions to its longest draft (or k)

    def padded(v: tuple[int, ...]) -> tuple[int, ...]:
        return v + (0,) * (width - len(v))

    for x, y in ((a.drafted_to, b.drafted_to), (a.reached, b.reached), (a.accepted, b.accepted)):
        assert padded(x) == padded(y)
    ca, cb = a.cumulative, b.cumulative
    for x, y in zip(ca + [None] * (width - len(ca)), cb + [None] * (width - len(cb)), strict=True):
        assert (x is None) == (y is None) and (x is None or y is None or abs(x - y) < 1e-12), (ca, cb)


@pytest.mark.parametrize("seed", range(20))
def test_pooled_categories_are_the_summary_of_their_requests_together(seed: int) -> None:
    rng = random.Random(seed)
    k = rng.randrange(1, 6)
    run = _random_run(rng, k)
    whole = figures_of(summarize(run, None))
    parts = {c: figures_of(s) for c, s in summarize_by_category(run, None).items()}
    _same(pool(parts.values()), whole)
    # and a subset of categories (a mix domain such as "c" = c/x + c/y) is the summary of its requests
    members = [c for c in parts if c.startswith("c/")]
    if members:
        sub = RunRecord(INFO, INFO, k, 0.0, 1.0, tuple(r for r in run.requests if r.category in members))
        _same(pool(parts[c] for c in members), figures_of(summarize(sub, None)))
    # τ(k) and the full-draft α follow the summary's own per-position rates
    summary = summarize(run, None)
    tau = tau_by_k([p["cumulative"] for p in summary["per_position"]], k)[k]  # type: ignore[index,union-attr]
    assert whole.tau(k) == pytest.approx(tau)
    if tau is not None:
        assert whole.full_draft_alpha(k) == pytest.approx((tau - 1) / k)
        rates = whole.rates(k)
        assert rates is not None and all(x >= y for x, y in itertools.pairwise(rates))
        assert sum(rates) / k == pytest.approx(whole.full_draft_alpha(k))


def test_a_real_replay_result_pools_and_prices_like_its_summaries(tiny: Any, tmp_path: Path) -> None:
    path = replay_result(tiny.target, tmp_path)
    source = read_source(path, "--from")
    data = read(path)
    assert source.kind == "replay" and source.exact is True
    assert [c.name for c in source.candidates] == [f"{c['draft']}@{c['k']}" for c in data["candidates"]]
    points = [
        {"batch": b, "k": k, "step_ms": 10.0 * b + 3 * k, "draft_ms": 1.0 * k}
        for b in (1, 4)
        for k in (0, 2, 4)
    ]
    surface = tmp_path / "tune.json"
    surface.write_text(json.dumps({"kind": "tune", "batch": {"surface": {"points": points}}}), "utf-8")
    predict = predictor(surface)
    for c, raw in zip(source.candidates, data["candidates"], strict=True):
        _same(pool(c.categories.values()), c.overall)
        rebuilt = predict([{"draft": c.draft, "k": c.k, "summary": c.overall.summary(c.k)}])["rows"][0]["e"]
        original = predict([raw])["rows"][0]["e"]
        assert rebuilt == pytest.approx(original)
    # naming a candidate
    assert source.candidate("suffix@4").k == 4 and source.candidate("suffix@k=4").k == 4
    with pytest.raises(AcceptanceSourceError, match="several k"):
        source.candidate("suffix")
    with pytest.raises(AcceptanceSourceError, match="no such candidate"):
        source.candidate("eagle@4")
    with pytest.raises(AcceptanceSourceError, match="several candidates"):
        source.candidate(None)


@pytest.mark.parametrize("seed", range(2))
def test_a_speedups_prediction_interval_follows_the_acceptance_sampling(seed: int) -> None:
    """Figures.speedup_interval: E scaled by the tokens per forward at τ's interval widened by √2 (a second
    sample's mean varies as much as the first's); it holds E, widens with τ's interval, and is None without
    one. Statistical check: over 300 pairs of independent samples of the same random traffic, the second
    sample's tokens per forward lies in the first's interval (E ∝ tokens per forward at a fixed step price)
    about 95% of the time, far more than the bare interval of the mean gives."""
    rng = random.Random(seed)
    k = 4
    population = _random_run(rng, k).requests  # a traffic to draw samples from

    def sample() -> Figures:
        reqs = tuple(rng.choice(population) for _ in range(40))
        return figures_of(summarize(RunRecord(INFO, INFO, k, 0.0, 1.0, reqs), None))

    first = sample()
    assert first.speedup_interval(None) is None
    lo, hi = first.speedup_interval(2.0) or [0.0, 0.0]
    assert lo <= 2.0 <= hi and hi - lo > 0
    bare = Figures(**{**first.__dict__, "tau_ci": None})
    assert bare.speedup_interval(2.0) is None
    per_forward = lambda f: f.tokens / f.forwards  # noqa: E731 (decode tokens per target forward, roughly)
    covered = bare_covered = 0
    for _ in range(300):
        a, b = sample(), sample()
        e = per_forward(a)
        lo, hi = a.speedup_interval(e) or [e, e]
        covered += lo <= per_forward(b) <= hi
        assert a.tau_ci is not None and a.acceptance_length is not None
        f = a.drafting_share or 0.0
        narrow = [e * (f * t + 1 - f) / (f * a.acceptance_length + 1 - f) for t in a.tau_ci]
        bare_covered += narrow[0] <= per_forward(b) <= narrow[1]
    assert covered >= 0.85 * 300, covered
    assert covered > bare_covered
