"""compare: point values equal the summaries, intervals behave, significance and --fail-on thresholds."""

from __future__ import annotations

import numpy as np
import pytest
from store_builders import make_result, make_rows

from specmeter.store import RunSource, StoredRequest
from specmeter.store.compare import compare_sources
from specmeter.store.gate import comparison_to_dict, parse_thresholds, regressions
from specmeter.store.resample import RequestSample, _Sorted


def source(name: str, rows: list, *, records: bool = True) -> RunSource:  # type: ignore[type-arg]
    requests = [StoredRequest(s, d, k, r) for s, d, k, r in rows] if records else None
    return RunSource(name=name, result=make_result(rows), requests=requests)


def block(cmp, candidate: str, category: str = "all"):  # type: ignore[no-untyped-def]
    return next(b for b in cmp.blocks if b.candidate == candidate and b.category == category)


def row(blk, metric: str):  # type: ignore[no-untyped-def]
    return next(d for d in blk.rows if d.metric == metric)


@pytest.mark.parametrize("size", [37, 3000])  # fewer values than chunks, and many per chunk
def test_weighted_percentile_is_numpys_linear_percentile_of_the_expanded_sample(size: int) -> None:
    rng = np.random.default_rng(size)
    values = rng.exponential(size=size).round(2)  # ties too
    owners = rng.integers(0, 9, size=size)
    sorted_ = _Sorted(values.tolist(), owners.tolist(), 9)
    counts = rng.integers(0, 4, size=(25, 9)).astype(np.float64)
    counts[0] = 0  # an empty resample has no percentile
    for q in (50.0, 90.0, 99.0):
        got = sorted_.percentile(counts, q)
        assert np.isnan(got[0])
        for i in range(1, 25):
            expanded = np.repeat(values, counts[i, owners].astype(int))
            if expanded.size:
                assert got[i] == pytest.approx(np.percentile(expanded, q))


def test_sample_points_equal_the_summary_figures() -> None:
    rows = make_rows(3, n=20, k=4)
    result = make_result(rows)
    base = [r for s, _, _, r in rows if s == "baseline"]
    spec = [r for s, _, _, r in rows if s != "baseline"]
    point = RequestSample(spec, base, 4).point()
    s = result["candidates"][0]["summary"]
    assert point["alpha"] == pytest.approx(s["acceptance_rate"])
    assert point["beta"] == pytest.approx(s["beta"])
    assert point["tau"] == pytest.approx(s["acceptance_length"])
    assert point["e_meas"] == pytest.approx(s["speedup_measured"])
    assert point["ttft"] == pytest.approx(s["ttft_ms"]["p50"])
    assert point["tpot"] == pytest.approx(s["tpot_ms"]["p50"])
    assert point["gap_p99"] == pytest.approx(s["gap_ms"]["p99"])
    for i, p in enumerate(s["per_position"]):
        assert point[f"p{i + 1}"] == pytest.approx(p["cumulative"])


def test_identical_runs_differ_by_exactly_zero_when_paired() -> None:
    rows = make_rows(4, n=24)  # 12 per category: intervals need 10 requests (docs/metrics.md, Statistics)
    cmp = compare_sources(source("A", rows), source("B", rows), n_resamples=300)
    assert not cmp.approximate
    assert {b.category for b in cmp.blocks} == {"all", "general", "legal"}
    for blk in cmp.blocks:
        assert blk.paired
        for d in blk.rows:
            assert d.diff == 0.0 and d.ci == (0.0, 0.0) and not d.significant and d.change == "same"


def test_independent_resampling_is_wider_than_paired() -> None:
    # Two runs of the same process over the same prompt ids: pairing removes prompt-to-prompt noise.
    a, b = make_rows(5, n=30, beta=0.8), make_rows(6, n=30, beta=0.8)
    paired = row(block(compare_sources(source("A", a), source("B", b), n_resamples=400), "draft@k=4"), "tau")
    indep_cmp = compare_sources(source("A", a), source("B", b), n_resamples=400, paired=False)
    assert not block(indep_cmp, "draft@k=4").paired
    indep = row(block(indep_cmp, "draft@k=4"), "tau")
    assert paired.ci is not None and indep.ci is not None
    assert paired.diff == indep.diff
    assert indep.ci[1] - indep.ci[0] > 0


@pytest.mark.slow  # the heaviest few run in make test-slow (CI runs it too)
def test_the_interval_of_the_difference_covers_the_truth() -> None:
    from specmeter.metrics.acceptance import expected_acceptance_rate

    truth = expected_acceptance_rate(0.6, 4) - expected_acceptance_rate(0.8, 4)
    covered = 0
    reps = 40
    for seed in range(reps):
        a, b = make_rows(100 + seed, n=30, beta=0.8), make_rows(500 + seed, n=30, beta=0.6)
        cmp = compare_sources(source("A", a), source("B", b), n_resamples=400)
        ci = row(block(cmp, "draft@k=4"), "alpha").ci
        assert ci is not None
        covered += ci[0] <= truth <= ci[1]
    assert covered >= 0.8 * reps


def test_a_worse_draft_on_legal_text_is_a_significant_regression_there() -> None:
    before = make_rows(7, n=40, beta={"general": 0.85, "legal": 0.85})
    after = make_rows(8, n=40, beta={"general": 0.85, "legal": 0.3})
    cmp = compare_sources(source("A", before), source("B", after), n_resamples=500)
    legal = row(block(cmp, "draft@k=4", "legal"), "alpha")
    assert legal.diff is not None and legal.diff < -0.3
    assert legal.significant and legal.change == "worse"
    general = row(block(cmp, "draft@k=4", "general"), "alpha")
    assert not general.significant  # same process, only noise

    found, untested = regressions(cmp, parse_thresholds("alpha=0.1"))
    assert {(r.block.category, r.diff.metric) for r in found} >= {("legal", "alpha")}
    assert ("general", "alpha") not in {(r.block.category, r.diff.metric) for r in found}
    assert untested == []
    # A threshold larger than the drop does not fire; a relative one can.
    assert regressions(cmp, parse_thresholds("alpha=0.9"))[0] == []
    assert regressions(cmp, parse_thresholds("alpha=20%"))[0]
    data = comparison_to_dict(cmp, found)
    assert data["regressions"] == len(found)
    assert any(r["regression"] for b in data["blocks"] for r in b["rows"])


def test_latency_increases_are_worse_and_baseline_rows_never_fail() -> None:
    rows = make_rows(9, n=20)
    slower = [(s, d, k, r.__class__(**{**r.__dict__, "ttft_s": r.ttft_s + 0.05})) for s, d, k, r in rows]
    cmp = compare_sources(source("A", rows), source("B", slower), n_resamples=300)
    ttft = row(block(cmp, "draft@k=4"), "ttft")
    assert ttft.diff == pytest.approx(50.0) and ttft.change == "worse"
    assert row(block(cmp, "baseline"), "ttft").change == "worse"
    found, _ = regressions(cmp, parse_thresholds("ttft=10"))
    assert found and all(r.block.candidate != "baseline" for r in found)


def test_result_files_give_approximate_intervals_from_their_own() -> None:
    before = make_rows(10, n=40, beta=0.85)
    after = make_rows(11, n=40, beta=0.4)
    cmp = compare_sources(source("a.json", before, records=False), source("b.json", after, records=False))
    assert cmp.approximate and any("approximate" in n for n in cmp.notes)
    alpha = row(block(cmp, "draft@k=4"), "alpha")
    assert alpha.approximate and alpha.ci is not None and alpha.change == "worse"
    assert row(block(cmp, "draft@k=4"), "p1").ci is not None  # binomial error from the counts
    assert row(block(cmp, "draft@k=4"), "ttft").ci is None
    _, untested = regressions(cmp, parse_thresholds("alpha=0.05,ttft=5"))
    assert untested == ["ttft"]


def test_candidates_are_matched_by_name_and_k() -> None:
    a = make_rows(12, n=6, draft="draft")
    b = make_rows(13, n=6, draft="legal-draft")
    cmp = compare_sources(source("A", a), source("B", b), n_resamples=200)
    assert any("their only candidates" in n for n in cmp.notes)
    assert block(cmp, "draft@k=4 → legal-draft@k=4")
    two = a + [(s, d, k, r) for s, d, k, r in make_rows(14, n=6, draft="x") if d is not None]
    with pytest.raises(ValueError, match="no candidate in common"):
        compare_sources(source("A", two), source("B", b + make_rows(15, n=6, draft="y")[1::2]))


def test_parse_thresholds_names_the_bad_part() -> None:
    t = parse_thresholds("alpha=0.05, e_meas=0.1,ttft=10%")
    assert t["ttft"].relative and t["ttft"].value == pytest.approx(0.10)
    assert not t["alpha"].relative
    for bad, msg in [("speed=1", "not METRIC=THRESHOLD"), ("alpha=x", "not a number"), ("alpha=-1", ">= 0"),
                     ("", "no thresholds")]:  # fmt: skip
        with pytest.raises(ValueError, match=msg):
            parse_thresholds(bad)


def test_a_run_from_a_busy_machine_is_named_in_the_notes() -> None:
    rows = make_rows(4, n=8)
    busy = source("B", rows)
    busy.result["hygiene"] = {"verdict": "busy", "reasons": ["other processes used 0.30 cores on average"]}
    quiet = source("A", rows)
    quiet.result["hygiene"] = {"verdict": "quiet", "reasons": []}
    cmp = compare_sources(quiet, busy, n_resamples=50)
    flagged = [n for n in cmp.notes if "machine" in n]
    assert len(flagged) == 1 and flagged[0].startswith("run B (B) was measured on a busy machine (other")
