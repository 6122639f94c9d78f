"""The router by category (``selection.route_analysis``) on synthetic latencies whose answers are worked by
hand: each category's pick (the target alone where nothing reaches 1.00×), the routed E as the ratio of
sums over the requests, the best single candidate, the gain, the held-out figure, and when a pick is
separated from its runner-up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from specmeter.metrics.records import ModelInfo, RequestRecord, RunRecord
from specmeter.metrics.stats import MIN_CI_REQUESTS
from specmeter.selection.route_analysis import analyse_routes, top_domain

TARGET = ModelInfo("target", "/m/target", "LlamaForCausalLM", 1000, 4000, 64, "float32", 4, 2, 8)
X = ModelInfo("draft-x", "/m/x", "LlamaForCausalLM", 100, 400, 16, "float32", 1, 2, 8)
Y = ModelInfo("ngram", "", "ngram", 0, 0, 0, "float32", 0, 0, 0, method="ngram")

# id -> (category, baseline latency, X's latency, Y's latency), in seconds.
TIMES: Mapping[str, tuple[str, float, float, float]] = {
    "r1": ("legal/redline", 2.0, 1.0, 0.5),  # redline: X 4/2 = 2.00x, Y 4/1.3 = 3.08x -> Y
    "r2": ("legal/redline", 2.0, 1.0, 0.8),
    "n1": ("legal/nda", 3.0, 1.0, 3.0),  # nda: X 4/2.25 = 1.78x, Y 4/3.5 = 1.14x -> X
    "n2": ("legal/nda", 1.0, 1.25, 0.5),
    "g1": ("general/news", 1.0, 2.0, 1.25),  # news: X 0.50x, Y 0.80x -> the target alone
    "g2": ("general/news", 1.0, 2.0, 1.25),
}


def _request(rid: str, category: str, latency: float) -> RequestRecord:
    return RequestRecord(
        id=rid, category=category, prompt_tokens=10, output_tokens=20, latency_s=latency, ttft_s=0.01,
        prefill_s=0.01,
    )  # fmt: skip


def _runs(
    times: Mapping[str, tuple[str, float, float, float]],
) -> tuple[RunRecord, list[RunRecord]]:
    def run(draft: ModelInfo | None, column: int) -> RunRecord:
        requests = tuple(_request(rid, t[0], t[column]) for rid, t in times.items())
        return RunRecord(TARGET, draft, 0 if draft is None else 4, 0.0, 1.0, requests)

    return run(None, 1), [run(X, 2), run(Y, 3)]


def _by_category(section: Mapping[str, object]) -> dict[str, dict[str, object]]:
    rows = section["categories"]
    assert isinstance(rows, list)
    return {row["category"]: row for row in rows}


def test_each_category_goes_to_its_best_candidate_or_the_target_alone() -> None:
    baseline, runs = _runs(TIMES)
    section = analyse_routes(baseline, runs)
    rows = _by_category(section)
    assert list(rows) == ["general/news", "legal/nda", "legal/redline"]  # by domain, then category
    assert rows["legal/redline"]["pick"]["draft"] == "ngram"
    assert rows["legal/redline"]["pick"]["speedup_measured"] == pytest.approx(4 / 1.3)
    assert rows["legal/redline"]["runner_up"]["draft"] == "draft-x"
    assert rows["legal/nda"]["pick"]["draft"] == "draft-x"
    assert rows["legal/nda"]["pick"]["speedup_measured"] == pytest.approx(4 / 2.25)
    assert rows["legal/nda"]["runner_up"]["draft"] == "ngram"  # 1.14x, ahead of the target alone
    news = rows["general/news"]
    assert news["pick"] == {"draft": None, "k": 0, "speedup_measured": 1.0, "speedup_measured_ci": [1.0, 1.0]}
    assert news["runner_up"]["draft"] == "ngram"
    assert news["runner_up"]["speedup_measured"] == pytest.approx(0.8)
    assert [c["speedup_measured"] for c in news["by_candidate"]] == pytest.approx([0.5, 0.8])
    # Two requests a category: no interval, so separation is unknown rather than claimed.
    assert rows["legal/redline"]["pick"]["speedup_measured_ci"] is None
    assert news["runner_up"]["speedup_measured_ci"] is None
    assert all(row["separated"] is None for row in rows.values())


def test_routed_speedup_is_the_ratio_of_sums_of_the_routed_requests() -> None:
    baseline, runs = _runs(TIMES)
    section = analyse_routes(baseline, runs)
    # Routed: redline by ngram (0.5 + 0.8), nda by draft-x (1.0 + 1.25), news by the target (1.0 + 1.0).
    routed_total = 0.5 + 0.8 + 1.0 + 1.25 + 1.0 + 1.0
    everything = section["all"]
    assert everything["requests"] == 6 and section["requests_paired"] == 6
    assert everything["router"]["speedup_measured"] == pytest.approx(10.0 / routed_total)
    # Not the mean of the categories' speedups, nor their request-weighted mean.
    assert everything["router"]["speedup_measured"] != pytest.approx((4 / 1.3 + 4 / 2.25 + 1.0) / 3)
    # The single best for all traffic is ngram: 10 / 7.3 = 1.37x against draft-x's 10 / 8.25 = 1.21x.
    assert everything["single"]["draft"] == "ngram"
    assert everything["single"]["speedup_measured"] == pytest.approx(10.0 / 7.3)
    assert everything["gain_over_single"] == pytest.approx(7.3 / routed_total - 1.0)
    legal, general = section["domains"]["legal"], section["domains"]["general"]
    assert legal["router"]["speedup_measured"] == pytest.approx(8.0 / (0.5 + 0.8 + 1.0 + 1.25))
    assert legal["single"]["draft"] == "draft-x"  # 8 / 4.25 = 1.88x against ngram's 8 / 4.8 = 1.67x
    assert general["router"]["speedup_measured"] == pytest.approx(1.0)
    assert general["single"]["draft"] is None and general["gain_over_single"] == pytest.approx(0.0)
    rows = _by_category(section)
    assert rows["legal/redline"]["differs_from_domain"] is True  # legal's single choice is draft-x
    assert rows["legal/nda"]["differs_from_domain"] is False
    assert rows["general/news"]["differs_from_domain"] is False


def test_held_out_routes_each_request_by_its_categorys_other_requests() -> None:
    baseline, runs = _runs(TIMES)
    section = analyse_routes(baseline, runs)
    # n1 alone would pick ngram (n2: 1 / 0.5 = 2.00x) and takes 3.0 s with it; n2 by n1 picks draft-x
    # (3 / 1 = 3.00x): 1.25 s. Redline's requests each pick ngram either way, news the target alone.
    held_total = 0.5 + 0.8 + 3.0 + 1.25 + 1.0 + 1.0
    assert section["all"]["held_out"]["speedup_measured"] == pytest.approx(10.0 / held_total)
    assert section["all"]["held_out"]["gain_over_single"] == pytest.approx(7.3 / held_total - 1.0)
    assert section["domains"]["general"]["held_out"]["speedup_measured"] == pytest.approx(1.0)


def test_a_category_of_one_request_is_held_out_to_the_target_alone() -> None:
    times = {"a1": ("legal/a", 2.0, 1.0, 4.0)}
    baseline, runs = _runs(times)
    section = analyse_routes(baseline, runs)
    assert _by_category(section)["legal/a"]["pick"]["draft"] == "draft-x"
    assert section["all"]["router"]["speedup_measured"] == pytest.approx(2.0)
    assert section["all"]["held_out"]["speedup_measured"] == pytest.approx(1.0)


def test_only_requests_every_run_finished_are_paired() -> None:
    baseline, (x, y) = _runs(TIMES)
    y = RunRecord(y.target, y.draft, y.k, 0.0, 1.0, tuple(r for r in y.requests if r.id != "g2"))
    section = analyse_routes(baseline, [x, y])
    assert section["requests_paired"] == 5
    assert _by_category(section)["general/news"]["requests"] == 1


def _large(
    n: int, speeds: Mapping[str, tuple[Sequence[float], Sequence[float]]]
) -> dict[str, tuple[str, float, float, float]]:
    """n requests in each category, baseline 1 s, each candidate's per-request speedup cycling over the
    values given for that category (X's, then Y's): the spread, and so the interval, is set by hand."""
    out = {}
    for category, (xs, ys) in speeds.items():
        for i in range(n):
            out[f"{category}-{i}"] = (category, 1.0, 1.0 / xs[i % len(xs)], 1.0 / ys[i % len(ys)])
    return out


def test_separated_when_the_intervals_do_not_overlap_and_not_when_they_do() -> None:
    n = 2 * MIN_CI_REQUESTS
    clear = analyse_routes(*_runs(_large(n, {"legal/a": ([2.9, 3.0, 3.1], [1.1, 1.2, 1.3])})))
    row = _by_category(clear)["legal/a"]
    assert row["pick"]["draft"] == "draft-x" and row["separated"] is True
    lo, hi = row["pick"]["speedup_measured_ci"]
    assert lo <= row["pick"]["speedup_measured"] <= hi
    # X 1.60x, Y 1.65x, each request between 1x and 3x: the intervals overlap.
    close = analyse_routes(*_runs(_large(n, {"legal/a": ([1.0, 2.0, 3.0], [1.1, 1.9, 2.9])})))
    row = _by_category(close)["legal/a"]
    assert row["pick"]["draft"] == "ngram" and row["separated"] is False
    assert row["runner_up"]["speedup_measured_ci"] is not None


def test_intervals_hold_their_point_estimates() -> None:
    speeds = {"legal/a": ([1.5, 2.0, 2.5], [0.8, 1.0, 1.2]), "general/b": ([0.8, 1.0, 1.2], [1.5, 2.0, 2.5])}
    section = analyse_routes(*_runs(_large(2 * MIN_CI_REQUESTS, speeds)))
    assert [row["pick"]["draft"] for row in section["categories"]] == ["ngram", "draft-x"]
    everything = section["all"]
    lo, hi = everything["router"]["speedup_measured_ci"]
    assert lo <= everything["router"]["speedup_measured"] <= hi
    lo, hi = everything["single"]["speedup_measured_ci"]
    assert lo <= everything["single"]["speedup_measured"] <= hi
    glo, ghi = everything["gain_over_single_ci"]
    assert glo <= everything["gain_over_single"] <= ghi
    # Each category to its own fast candidate: 40 / 21.1 = 1.89x against 40 / 31.3 = 1.28x for either one.
    assert everything["gain_over_single"] > 0.2 and glo > 0


def test_too_few_requests_give_no_interval() -> None:
    section = analyse_routes(*_runs(TIMES))  # 6 requests in all, under MIN_CI_REQUESTS
    assert section["all"]["router"]["speedup_measured_ci"] is None
    assert section["all"]["gain_over_single_ci"] is None


def test_no_candidates_routes_everything_to_the_target_alone() -> None:
    baseline, _ = _runs(TIMES)
    section = analyse_routes(baseline, [])
    assert section["all"]["router"]["speedup_measured"] == pytest.approx(1.0)
    assert all(row["pick"]["draft"] is None and row["runner_up"] is None for row in section["categories"])


def test_domain_is_the_first_path_part() -> None:
    assert [top_domain(c) for c in ("legal/redline", "general", "a/b/c")] == ["legal", "general", "a"]
    assert np.isfinite(analyse_routes(*_runs(TIMES))["all"]["router"]["speedup_measured"])
