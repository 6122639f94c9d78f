"""Drift: a request-level test holds its level, a pooled token test does not; planted drops are found."""

from __future__ import annotations

import math

import numpy as np

from specmeter.monitoring.drift import align_domains, compare_windows, holm, pooled_token_test, ratio_test
from specmeter.monitoring.requestlog import RequestObs


def requests(
    rng: np.random.Generator, n: int, domain: str, mean: float, *, spread: float = 6.0, t: float = 0.0
) -> list[RequestObs]:
    """n requests whose acceptance probabilities vary by prompt: p_r ~ Beta with the given mean.

    ``spread`` is a + b of the Beta: small = prompts differ a lot (as in production), so tokens of one
    request are strongly correlated.
    """
    out = []
    for i in range(n):
        p = rng.beta(mean * spread, (1 - mean) * spread)
        steps = int(rng.integers(8, 24))
        drafted = 4 * steps
        accepted = int(rng.binomial(drafted, p))
        out.append(
            RequestObs(f"x:{i}", t + i, domain, None, accepted, drafted, steps, accepted + steps, 1.0, "t")
        )
    return out


def _columns(rs: list[RequestObs]) -> tuple[list[float], list[float]]:
    return [float(r.accepted or 0) for r in rs], [float(r.drafted or 0) for r in rs]


def test_pooled_token_test_overstates_significance_request_level_holds_its_level() -> None:
    """Both windows from the SAME traffic: a valid 5 % test rejects ~5 % of the time."""
    rng = np.random.default_rng(11)
    trials, request_level, pooled = 400, 0, 0
    for _ in range(trials):
        a, b = requests(rng, 60, "d", 0.7), requests(rng, 60, "d", 0.7)
        (na, da), (nb, db) = _columns(a), _columns(b)
        r = ratio_test(na, da, nb, db)
        p = pooled_token_test(int(sum(na)), int(sum(da)), int(sum(nb)), int(sum(db)))
        assert r is not None and p is not None
        assert r.before == p.before and r.after == p.after  # the same α, only the variance differs
        request_level += r.p < 0.05
        pooled += p.p < 0.05
    assert 0.02 <= request_level / trials <= 0.09  # close to the nominal 5 %
    assert pooled / trials >= 0.35  # tokens as independent trials: "significant" on unchanged traffic


def test_ratio_test_matches_the_delta_method_by_hand() -> None:
    num_a, den_a = [3.0, 1.0, 4.0], [4.0, 4.0, 8.0]
    num_b, den_b = [1.0, 0.0, 2.0, 1.0], [4.0, 4.0, 8.0, 4.0]
    r = ratio_test(num_a, den_a, num_b, den_b)
    assert r is not None
    ra, rb = 8 / 16, 4 / 20
    va = 3 / 2 * sum((a - ra * d) ** 2 for a, d in zip(num_a, den_a, strict=True)) / 16**2
    vb = 4 / 3 * sum((a - rb * d) ** 2 for a, d in zip(num_b, den_b, strict=True)) / 20**2
    assert (r.before, r.after) == (ra, rb)
    assert math.isclose(r.z, (rb - ra) / math.sqrt(va + vb))
    assert math.isclose(r.p, math.erfc(abs(r.z) / math.sqrt(2)))
    assert ratio_test([1.0], [2.0], [1.0, 1.0], [2.0, 2.0]) is None  # one request: no variance
    same = ratio_test([2.0, 2.0], [4.0, 4.0], [2.0, 2.0], [4.0, 4.0])
    assert same is not None and same.p == 1.0


def test_holm_adjustment() -> None:
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    assert holm([0.5]) == [0.5]
    assert holm([0.2, 0.6]) == [0.4, 0.6]


def _verdicts(reference: list[RequestObs], current: list[RequestObs]) -> dict[tuple[str, str], str]:
    return {(r.key, r.metric): r.direction for r in compare_windows(reference, current, level=0.01)}


def test_planted_drop_is_flagged_and_the_unchanged_domain_is_not_both_ways() -> None:
    rng = np.random.default_rng(3)
    reference = requests(rng, 300, "legal", 0.8) + requests(rng, 300, "general", 0.6)
    legal_drop = requests(rng, 300, "legal", 0.62) + requests(rng, 300, "general", 0.6)
    assert _verdicts(reference, legal_drop) == {
        ("general", "alpha"): "none",
        ("general", "tau"): "none",
        ("legal", "alpha"): "drop",
        ("legal", "tau"): "drop",
    }
    general_drop = requests(rng, 300, "legal", 0.8) + requests(rng, 300, "general", 0.45)
    assert _verdicts(reference, general_drop) == {
        ("general", "alpha"): "drop",
        ("general", "tau"): "drop",
        ("legal", "alpha"): "none",
        ("legal", "tau"): "none",
    }
    rise = requests(rng, 300, "legal", 0.9) + requests(rng, 300, "general", 0.6)
    assert _verdicts(reference, rise)[("legal", "alpha")] == "rise"


def test_unchanged_traffic_is_quiet_across_seeds() -> None:
    flagged = 0
    for seed in range(30):
        rng = np.random.default_rng(100 + seed)
        before = requests(rng, 200, "legal", 0.8) + requests(rng, 200, "general", 0.6)
        after = requests(rng, 200, "legal", 0.8) + requests(rng, 200, "general", 0.6)
        flagged += any(r.significant for r in compare_windows(before, after, level=0.01))
    assert flagged <= 3  # family-wise 1 %: about 0.3 of 30 expected


def test_small_samples_and_missing_steps() -> None:
    rng = np.random.default_rng(0)
    rows = compare_windows(requests(rng, 5, "a", 0.8), requests(rng, 50, "a", 0.2), min_requests=20)
    assert {r.metric for r in rows} == {"alpha", "tau"}
    assert all(r.p is None and not r.significant and "fewer than 20" in (r.note or "") for r in rows)
    no_steps = [RequestObs("x", 0, "c", None, 3, 4, None, 4, 1.0, "t")] * 30
    only_alpha = compare_windows(no_steps, no_steps)
    assert [r.metric for r in only_alpha] == ["alpha"]  # llama.cpp logs: no τ


def _obs(domain: str, tenant: str | None = None) -> RequestObs:
    return RequestObs("x:1", None, domain, tenant, 3, 4, 1, 4, 1.0, "t")


def test_sub_categories_match_by_prefix_in_either_direction_and_never_merge_a_shared_domain() -> None:
    ref = [_obs("legal/nda"), _obs("legal/liability/cap"), _obs("general"), _obs("code/py"), _obs("legalese")]
    cur = [_obs("legal"), _obs("general/news"), _obs("general"), _obs("code/py"), _obs("code")]
    new_ref, new_cur = align_domains(ref, cur)
    # legal/… (any depth) joins the log's legal; "legalese" is no sub-category of legal; code/py stays itself
    # because both sides have it; general/news joins the reference's general.
    assert [r.domain for r in new_ref] == ["legal", "legal", "general", "code/py", "legalese"]
    assert [r.domain for r in new_cur] == ["legal", "general", "general", "code/py", "code"]
    # A tenant is part of the group: acme's legal/nda matches acme's legal only.
    tref, tcur = align_domains(
        [_obs("legal/nda", "acme"), _obs("legal/nda", "beta")], [_obs("legal", "acme")]
    )
    assert [r.domain for r in tref] == ["legal", "legal/nda"] and [r.domain for r in tcur] == ["legal"]
