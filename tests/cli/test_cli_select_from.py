"""A replay result feeds the rest: ``select --from`` ranks it, ``roi --alpha-from`` and ``whatif
--alpha-from`` take their α from it. The replay results are made by running replay on a small log
(``tests/replay_results.py``); every expected figure is recomputed here from the replay's own JSON with the
formulas of docs/metrics.md and docs/selection.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from pricing_expect import expected_e
from replay_results import read, replay_result
from specmeter.cli.app import app
from specmeter.metrics.batch_surface import tau_by_k
from specmeter.workloads import bundled_prompts

runner = CliRunner()


def _run(*args: object) -> Any:
    return runner.invoke(app, [*map(str, args)])


@pytest.fixture(scope="module")
def replayed(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return replay_result(tiny.target, tmp_path_factory.mktemp("replay"))


def _tau(summary: dict[str, Any], k: int) -> float | None:
    return tau_by_k([p["cumulative"] for p in summary["per_position"] or []], k)[k]


def _tau_low(summary: dict[str, Any], k: int) -> float:
    """τ(k) = 1 + Σ_{i<k} P_i with an unknown P_i (no step reached it) at its lower bound 0."""
    cumulative = [p["cumulative"] for p in summary["per_position"] or []][:k]
    return 1.0 + sum(p or 0.0 for p in cumulative)


def _bounded(summary: dict[str, Any], k: int) -> bool:
    """Whether τ(k) rests on an unknown P_i after a known one above 0 (after a 0 every P is 0)."""
    cumulative = [p["cumulative"] for p in summary["per_position"] or []][:k]
    cumulative += [None] * (k - len(cumulative))
    first = cumulative.index(None) if None in cumulative else None
    return first is not None and (first == 0 or cumulative[first - 1] > 0)


def _share(summary: dict[str, Any]) -> float:
    """f: the share of decode steps at which the method proposed."""
    return float(summary["steps"] / summary["target_forwards"])


def _per_step(summary: dict[str, Any], k: int) -> float:
    """Tokens per target forward: f · τ(k) + 1 − f (a step without a proposal yields one token)."""
    f = _share(summary)
    return f * _tau_low(summary, k) + 1 - f


def _weighted(parts: list[tuple[float, float, float]]) -> float:
    """select's E_mix over domains: Σ w·n̄ / Σ w·n̄ / v, (weight, mean tokens per request, figure) each."""
    return sum(w * n for w, n, _ in parts) / sum(w * n / v for w, n, v in parts)


def _surface(path: Path) -> Path:
    """A tune --batch cost surface: t_step(B, k) = base + 3k ms, of which the draft's k ms."""
    points = [
        {"batch": b, "k": k, "step_ms": base + 3 * k, "draft_ms": 1.0 * k, "verify_ms": base}
        for b, base in ((1, 10.0), (8, 20.0))
        for k in (0, 2, 4)
    ]
    path.write_text(json.dumps({"kind": "tune", "batch": {"surface": {"points": points}}}), "utf-8")
    return path


# --------------------------------------------------------------------------------------- select --from


def test_select_from_a_replay_ranks_by_tau_when_there_is_no_cost_surface(
    replayed: Path, tmp_path: Path
) -> None:
    out = tmp_path / "select.json"
    r = _run("select", "--from", replayed, "--json", out)
    assert r.exit_code == 0, r.output
    assert "acceptance only" in r.output and "ranking by traffic-weighted tokens per step" in r.output
    source, result = read(replayed), read(out)
    assert result["kind"] == "select" and result["candidates"] == source["candidates"]
    s = result["select"]
    assert s["basis"] == "acceptance" and s["costs"] is None and s["mix_source"] == "result"
    total = source["candidates"][0]["summary"]["requests"]
    expected = {}
    for c in source["candidates"]:
        cats = c["by_category"]
        assert {n: d["weight"] for n, d in s["domains"].items()} == pytest.approx(
            {n: q["requests"] / total for n, q in cats.items()}
        )
        parts = [
            (q["requests"] / total, q["emitted_tokens"] / q["requests"], _per_step(q, c["k"]))
            for q in cats.values()
        ]
        expected[(c["draft"], c["k"])] = _weighted(parts)
        for name, q in cats.items():
            (row,) = [x for x in s["by_domain"][name] if (x["draft"], x["k"]) == (c["draft"], c["k"])]
            assert row["acceptance_length_k"] == pytest.approx(_tau_low(q, c["k"]))
            assert row["lower_bound"] is _bounded(q, c["k"])
            assert row["tokens_per_step"] == pytest.approx(_per_step(q, c["k"]))
            assert row["acceptance_rate"] == pytest.approx(q["acceptance_rate"])
            assert row["acceptance_rate_ci"] == q["acceptance_rate_ci"]
            assert row["drafting_share"] == pytest.approx(q["steps"] / q["target_forwards"])
    ranking = s["ranking"]
    assert [r["rank"] for r in ranking] == list(range(1, len(expected) + 1))
    for row in ranking:
        assert row["speedup_weighted"] is None
        assert row["tokens_per_step_weighted"] == pytest.approx(expected[(row["draft"], row["k"])])
    per_step = [row["tokens_per_step_weighted"] for row in ranking]
    assert per_step == sorted(per_step, reverse=True)  # the ranking is the order of tokens per step
    for name, pick in s["recommendation"]["by_domain"].items():
        best = max(x["tokens_per_step"] for x in s["by_domain"][name])
        assert pick is not None and pick["tokens_per_step"] == best
    assert s["recommendation"]["lines"][0].startswith("Acceptance only")


def test_select_from_a_replay_with_costs_ranks_by_the_predicted_speedup(
    replayed: Path, tmp_path: Path
) -> None:
    out, surface = tmp_path / "select.json", _surface(tmp_path / "tune.json")
    r = _run("select", "--from", replayed, "--costs", surface, "--batch", 8, "--mix", "legal=0.8,general=0.2",
             "--json", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "predicted at B=8" in r.output and "acceptance only" not in r.output
    source, s = read(replayed), read(out)["select"]
    assert s["basis"] == "predicted" and s["costs"]["batch"] == 8 and s["costs"]["batches"] == [1, 8]
    assert s["mix"] == {"legal": 0.8, "general": 0.2} and s["mix_source"] == "option"
    expected: dict[tuple[str, int], dict[int, float]] = {}
    for c in source["candidates"]:
        k, cats = c["k"], c["by_category"]
        per_batch = {}
        for b, base in ((1, 10.0), (8, 20.0)):
            parts = []
            for name, q in cats.items():
                # pricing: the target's part of the step (step − draft: base + 2d ms) plus the lookup time the
                # replay measured, per row at every forward; a batched step costs its longest row
                lookup = source["replay"]["lookup_us_per_step"][f"{c['draft']}@k={k}"] / 1e6

                def step_s(batch: int, d: int, base: float = base, lookup: float = lookup) -> float:
                    return (base + 2 * d) / 1000 + lookup * batch

                e = expected_e(q, b, step_s, base / 1000)
                (row,) = [x for x in s["by_domain"][name] if (x["draft"], x["k"]) == (c["draft"], k)]
                assert row["speedup_by_batch"][str(b)] == pytest.approx(e)
                parts.append((s["mix"][name], q["emitted_tokens"] / q["requests"], e))
            per_batch[b] = _weighted(parts)
        expected[(c["draft"], k)] = per_batch
    for row in s["ranking"]:
        want = expected[(row["draft"], row["k"])]
        assert row["speedup_weighted"] == pytest.approx(want[8])
        assert row["speedup_by_batch"] == pytest.approx({"1": want[1], "8": want[8]})
    e8 = [row["speedup_weighted"] for row in s["ranking"]]
    assert e8 == sorted(e8, reverse=True)
    # One domain weighted alone: the weighted E is that domain's E.
    one = tmp_path / "legal.json"
    assert (
        _run(
            "select", "--from", replayed, "--costs", surface, "--mix", "legal=1", "--json", one, "-q"
        ).exit_code
        == 0
    )
    t = read(one)["select"]
    assert t["costs"]["batch"] == 1  # the surface's smallest B by default
    for row in t["ranking"]:
        (legal,) = [x for x in t["by_domain"]["legal"] if (x["draft"], x["k"]) == (row["draft"], row["k"])]
        assert row["speedup_weighted"] == pytest.approx(legal["speedup_by_batch"]["1"])


def test_select_from_a_bench_result(tiny: Any, tmp_path: Path) -> None:
    bench = tmp_path / "bench.json"
    r = _run("bench", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
             "--k", 2, "--limit", 3, "--max-tokens", 8, "--cost-repeats", 1, "--json", bench, "--no-store",
             "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    out = tmp_path / "select.json"
    r = _run("select", "--from", bench, "--json", out)
    assert r.exit_code == 0, r.output
    (c,) = read(bench)["candidates"]
    (row,) = read(out)["select"]["ranking"]
    total = c["summary"]["requests"]
    parts = [
        (q["requests"] / total, q["emitted_tokens"] / q["requests"], _per_step(q, 2))
        for q in c["by_category"].values()
    ]
    assert row["tokens_per_step_weighted"] == pytest.approx(_weighted(parts))


def test_select_from_mistakes_are_one_line(tiny: Any, replayed: Path, tmp_path: Path) -> None:
    surface = _surface(tmp_path / "tune.json")
    whatif = tmp_path / "whatif.json"
    whatif.write_text(json.dumps({"kind": "whatif", "whatif": {"cells": []}}), "utf-8")
    broken = tmp_path / "broken.json"
    data = read(replayed)
    data["candidates"][0]["k"] = "four"
    broken.write_text(json.dumps(data), "utf-8")
    notjson = tmp_path / "notjson.json"
    notjson.write_text("{", "utf-8")
    cases: list[tuple[list[object], tuple[str, ...]]] = [
        ([], ("--from", "--target")),
        (["--from", replayed, "--target", tiny.target], ("--from", "drop --target")),
        (["--from", replayed, "--max-tokens", 5, "--k", "2"], ("drop --max-tokens, --k",)),
        (["--from", tmp_path / "absent.json"], ("--from", "absent.json")),
        (["--from", notjson], ("--from", "not JSON")),
        (["--from", whatif], ("--from", "whatif.json is a whatif result", "not a replay or bench result")),
        (["--from", broken], ("--from", "broken.json", "candidates[0].k")),
        (["--from", replayed, "--mix", "legalese=1"], ("--mix", "legalese")),
        (["--from", replayed, "--batch", 8], ("--batch", "--costs")),
        (["--from", replayed, "--costs", surface, "--batch", 4], ("--batch 4", "B = 1, 8")),
        (["--from", replayed, "--costs", replayed], ("--costs", "no cost surface")),
        (["--target", tiny.target, "--prompts", bundled_prompts("smoke"), "--draft", "ngram",
          "--costs", surface],
         ("--costs", "--from")),
    ]  # fmt: skip
    for args, needles in cases:
        assert_usage_error(_run("select", *args), *needles)


# ------------------------------------------------------------------------------------------ roi --alpha-from


def _whatif_file(path: Path, ks: tuple[int, ...] = (2, 4)) -> Path:
    """A what-if result with a known surface: E = 0.5 + 2α at B=1, 0.4 + α at B=8, at every k of ``ks``."""
    cells = [
        {"alpha": a, "k": k, "batch": b, "e": (0.5 + 2 * a) if b == 1 else (0.4 + a)}
        for a in (0.0, 0.25, 0.5, 0.75, 1.0)
        for b in (1, 8)
        for k in ks
    ]
    path.write_text(json.dumps({"kind": "whatif", "whatif": {"cells": cells, "batches": [1, 8]}}), "utf-8")
    return path


MONEY = ["--monthly-tokens", "3B", "--baseline-throughput", "250", "--price-baseline", "4",
         "--price-speculative", "4.4", "--engineering-cost", "40k"]  # fmt: skip


def test_roi_takes_alpha_from_a_replay(replayed: Path, tmp_path: Path) -> None:
    w, out = _whatif_file(tmp_path / "w.json"), tmp_path / "roi.json"
    r = _run("roi", "--from-whatif", w, "--alpha-from", replayed, "--candidate", "suffix@4", "--batch", 1,
             *MONEY,
             "--json", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    (c,) = [c for c in read(replayed)["candidates"] if (c["draft"], c["k"]) == ("suffix", 4)]
    alpha = (_tau(c["summary"], 4) - 1) / 4  # type: ignore[operator]  # the full-draft α at k = 4
    data = read(out)
    assert data["at_alpha"]["alpha"] == pytest.approx(alpha) and data["at_alpha"]["k"] == 4
    assert data["at_alpha"]["speedup"] == pytest.approx(0.5 + 2 * alpha)
    assert data["alpha_from"]["candidate"] == "suffix@4"
    assert data["alpha_from"]["alpha_pooled"] == pytest.approx(c["summary"]["acceptance_rate"])
    assert "from suffix@4" in r.output
    # A shorter k reads the first positions' rates.
    r = _run("roi", "--from-whatif", w, "--alpha-from", replayed, "--candidate", "suffix@k=4", "--k", 2,
             "--batch", 8, *MONEY, "--json", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    alpha2 = (_tau(c["summary"], 2) - 1) / 2  # type: ignore[operator]
    data = read(out)
    assert data["at_alpha"]["alpha"] == pytest.approx(alpha2) and data["at_alpha"]["k"] == 2
    assert data["at_alpha"]["speedup"] == pytest.approx(0.4 + alpha2)


def test_roi_alpha_from_mistakes_are_one_line(replayed: Path, tmp_path: Path) -> None:
    # a replay result as RUN: it holds no measured speedup; the line says how to price it
    assert_usage_error(_run("roi", replayed, *MONEY), "replay result", "--alpha-from")
    w, only4 = _whatif_file(tmp_path / "w.json"), _whatif_file(tmp_path / "w4.json", ks=(4,))
    base = ["roi", "--from-whatif", w, "--batch", 1, *MONEY]
    cases: list[tuple[list[object], tuple[str, ...]]] = [
        ([*base, "--alpha-from", replayed, "--candidate", "suffix@4", "--alpha", 0.5],
         ("--alpha", "--alpha-from")),
        ([*base, "--alpha-from", replayed], ("--candidate", "several", "suffix@4")),
        ([*base, "--alpha-from", replayed, "--candidate", "eagle@4"], ("--candidate 'eagle@4'", "suffix@2")),
        ([*base, "--alpha-from", replayed, "--candidate", "suffix"], ("several k",)),
        ([*base, "--alpha-from", w, "--candidate", "suffix@4"], ("--alpha-from", "whatif result")),
        ([*base, "--candidate", "suffix@4", "--alpha", 0.5], ("--candidate", "--alpha-from")),
        (["roi", "--alpha-from", replayed, *MONEY], ("--alpha-from", "only with --from-whatif")),
        ([*base, "--alpha-from", replayed, "--candidate", "suffix@4", "--k", 8],
         ("k = 8", "position 4 only")),
        (["roi", "--from-whatif", only4, "--batch", 1, *MONEY, "--alpha-from", replayed,
          "--candidate", "suffix@2"],
         ("--alpha-from", "suffix@2", "no cells at k = 2")),
    ]  # fmt: skip
    for args, needles in cases:
        assert_usage_error(_run(*args), *needles)


# --------------------------------------------------------------------------------------- whatif --alpha-from


def test_whatif_measures_at_the_replayed_rates_per_domain(tiny: Any, tmp_path: Path) -> None:
    src = replay_result(tiny.target, tmp_path, methods=("suffix",), ks="2")
    out = tmp_path / "w.json"
    r = _run("whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
             "--alpha-from", src, "--k", 2, "--batch", 1, "--limit", 2, "--max-tokens", 8,
             "--cost-repeats", 1, "--overlay", src, "--json", out, "--no-store")  # fmt: skip
    assert r.exit_code == 0, r.output
    (c,) = read(src)["candidates"]
    domains = {"all": c["summary"], **c["by_category"]}
    rates = {
        name: [p["cumulative"] for p in q["per_position"][:2]]
        for name, q in domains.items()
        if len(q["per_position"] or []) >= 2 and None not in [p["cumulative"] for p in q["per_position"][:2]]
    }
    result = read(out)
    assert result["run"]["config"]["alpha_from"] == str(src)
    s = result["whatif"]
    cells = s["cells"]
    measured, wanted = sorted(tuple(x["rates"]) for x in cells), sorted({tuple(v) for v in rates.values()})
    assert len(measured) == len(wanted)  # one cell per distinct profile (one batch size)
    for got, want in zip(measured, wanted, strict=True):
        assert list(got) == pytest.approx(list(want))
    # --overlay with a replay result: its whole log (and categories) at its pooled α, acceptance only
    (whole,) = [row for row in s["overlay"] if row["source"] == str(src)]
    assert whole["alpha"] == pytest.approx(c["summary"]["acceptance_rate"]) and whole["measured_e"] is None
    assert {row["domain"] for row in whole["categories"]} == set(c["by_category"])
    rows = {row["domain"]: row for row in s["overlay"] if row["source"] != str(src)}
    assert set(rows) == set(rates)
    for name, want in rates.items():
        row = rows[name]
        assert row["k_used"] == 2 and row["alpha"] == pytest.approx(sum(want) / 2)
        (cell,) = [x for x in cells if x["rates"] == pytest.approx(want)]
        assert row["surface"][0]["e"] == pytest.approx(cell["e"])  # read at exactly that cell
    assert "today α" in r.output
    report = _run("report", out, "--out", tmp_path / "w.html")  # the overlay rows read back
    assert report.exit_code == 0, report.output


def test_whatif_alpha_from_mistakes_are_one_line_before_any_model_loads(
    tiny: Any, replayed: Path, tmp_path: Path
) -> None:
    whatif = _whatif_file(tmp_path / "w.json")
    base = ["whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
            "--no-store"]  # fmt: skip
    cases: list[tuple[list[object], tuple[str, ...]]] = [
        ([*base, "--candidate", "suffix@2"], ("--candidate", "--alpha-from")),
        ([*base, "--alpha-from", whatif], ("--alpha-from", "whatif result")),
        ([*base, "--alpha-from", replayed, "--candidate", "suffix@2", "--k", 4], ("suffix@2", "give --k 2")),
        ([*base, "--alpha-from", replayed, "--candidate", "suffix@2", "--k", 2, "--length", 2.5],
         ("--length",)),
    ]  # fmt: skip
    for args, needles in cases:
        assert_usage_error(_run(*args), *needles)


def test_a_picks_prediction_interval_names_what_lies_inside_it(tiny: Any, tmp_path: Path) -> None:
    """Each domain's pick carries its 95% prediction interval (the log's acceptance sampling,
    ``Figures.speedup_interval``) and names the candidates whose predicted E lies inside it."""
    replayed = replay_result(tiny.target, tmp_path, n=48)
    out, surface = tmp_path / "select.json", _surface(tmp_path / "tune.json")
    r = _run("select", "--from", replayed, "--costs", surface, "--batch", 8, "--json", out)
    assert r.exit_code == 0, r.output
    s = read(out)["select"]
    intervals = [x["speedup_by_batch_ci"]["8"] for rows in s["by_domain"].values() for x in rows]
    assert any(ci is not None for ci in intervals), "no candidate carries a prediction interval"
    for name, pick in s["recommendation"]["by_domain"].items():
        if pick is None or pick["speedup_predicted_ci"] is None:
            assert pick is None or pick["within_interval"] == []
            continue
        lo, hi = pick["speedup_predicted_ci"]
        assert lo <= pick["speedup_predicted"] <= hi
        rows = {(x["draft"], x["k"]): x["speedup_by_batch"]["8"] for x in s["by_domain"][name]}
        inside = {(c["draft"], c["k"]) for c in pick["within_interval"]}
        others = {key for key, e in rows.items() if key != (pick["draft"], pick["k"]) and e is not None}
        assert inside == {key for key in others if lo <= rows[key] <= hi}
        assert (
            f"{name}: {pick['draft']} at k={pick['k']} ({pick['speedup_predicted']:.2f}× [{lo:.2f}, {hi:.2f}]"
            in (" ".join(r.output.split()))
        )
