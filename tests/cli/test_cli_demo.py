"""The bundled demo: shipped models load and share one tokenizer; ``demo --quick`` tells the story.

These tests read the models under ``src/specmeter/assets/models`` (built by ``make models``) and the
bundled golden sets; ``demo --quick`` runs every stage on a few prompts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from safetensors import safe_open
from typer.testing import CliRunner

from specmeter.bundled.demo import LOAD_QUICK, QUICK_PROMPTS
from specmeter.bundled.models import DRAFTS, TARGET, bundled_model, missing_models
from specmeter.cli.app import app
from specmeter.engine.loader import load_model, load_tokenizer, tokenizer_mismatch
from specmeter.engine.schedule import KSchedule
from specmeter.methods import parse_method

MIB = 1024 * 1024
EAGLE = parse_method(f"eagle:head={bundled_model('eagle-legal')}").label
METHODS = ("ngram:min=5,max=5", "suffix", "layers:n=4", EAGLE)


def test_bundled_models_are_shipped() -> None:
    assert missing_models() == []


def test_bundled_models_share_one_tokenizer_and_load() -> None:
    target_tok = load_tokenizer(bundled_model(TARGET))
    for name in DRAFTS:
        assert tokenizer_mismatch(target_tok, load_tokenizer(bundled_model(name))) is None
    target = load_model(bundled_model(TARGET))
    assert target.info.implementation == "native"
    assert 15e6 <= target.info.params <= 30e6


def test_bundled_weights_are_small_fp16_safetensors() -> None:
    total = 0
    for name in (TARGET, *DRAFTS):
        for f in bundled_model(name).glob("*.safetensors"):
            total += f.stat().st_size
            with safe_open(str(f), "pt") as st:
                dtypes = {str(st.get_slice(key).get_dtype()) for key in st.keys()}  # noqa: SIM118
            assert dtypes == {"F16"}, (f, dtypes)
    assert total <= 64 * MIB


def test_draft_sizes_follow_the_field_report() -> None:
    params = {n: load_model(bundled_model(n)).info.params for n in (TARGET, *DRAFTS)}
    assert params[TARGET] / params["draft-general"] == pytest.approx(10, rel=0.35)  # candidate A ~ 1/10
    assert params[TARGET] / params["draft-tiny"] == pytest.approx(50, rel=0.35)  # candidate B ~ 1/50
    assert params["draft-legal"] < params[TARGET] / 5  # candidate C is small


@pytest.mark.slow  # the heaviest few run in make test-slow (CI runs it too)
def test_demo_quick_tells_the_story(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--quick", "--out", str(out), "--no-store"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["quick"] is True
    rows = summary["rows"]
    names = (*DRAFTS, *METHODS)
    assert {(r["domain"], r["draft"]) for r in rows} == {(d, n) for d in ("general", "legal") for n in names}
    for r in rows:
        if r["draft"] in DRAFTS:
            assert r["drafted_tokens"] > 0 and 0.0 <= r["alpha"] <= 1.0
        matched, total = r["outputs_matched"]
        assert total > 0 and matched == total  # greedy speculative output equals target-only output
    assert set(summary["winners"]) == {"general", "legal"}
    assert {c["check"] for c in summary["checks"]} >= {"legal: α(C) ≥ 0.60", "general: α(A) ≥ 0.60"}
    for name in ("compat.json", "general.json", "legal.json", "legal.csv", "report-legal.html", "roi.json"):
        assert (out / name).is_file(), name
    compat = json.loads((out / "compat.json").read_text())
    assert [p["verdict"] for p in compat["pairs"]] == ["compatible"] * 3
    assert "winner on legal" in result.stdout
    _check_methods_section(summary, out, result.stdout)
    _check_load_section(summary, out, result.stdout)


def _check_methods_section(summary: dict[str, Any], out: Path, stdout: str) -> None:
    """The method × domain table (the EAGLE head and layers:n among the methods, legal/redline on rows of
    its own), the recommendation across methods and the router by category (issue 26 item 5, issue 40)."""
    methods = summary["methods"]
    table = {(r["domain"], r.get("category"), r["draft"]): r for r in methods["table"]}
    names = (*DRAFTS, *METHODS)
    expected = {(d, None, n) for d in ("general", "legal") for n in names}
    assert set(table) == expected | {("legal", "legal/redline", n) for n in names}
    for domain in ("general", "legal"):
        assert table[(domain, None, "suffix")]["method"] == "suffix"
        assert table[(domain, None, "ngram:min=5,max=5")]["extra_memory_bytes"] == 0
        assert table[(domain, None, "draft-legal")]["extra_memory_bytes"] > 0
        head = table[(domain, None, EAGLE)]
        assert head["method"] == EAGLE and head["alpha"] is not None
        assert table[(domain, None, "layers:n=4")]["extra_memory_bytes"] > 0  # 4 of 10 layers' KV
    assert table[("legal", None, EAGLE)]["alpha"] > 0  # a head trained on legal text
    assert table[("legal", None, EAGLE)]["name"] == "EAGLE eagle-legal"
    assert set(methods["by_domain"]) == {"general", "legal"}
    assert set(methods["memory"]) == set(names)
    assert "methods × domains" in stdout and "recommendation for" in stdout
    assert "EAGLE eagle-legal" in stdout and "layers:n=4" in stdout
    _check_router(methods["category_router"], out, stdout)
    # The methods' story checks: redline's two, and C over the rest of legal (measured at any size).
    aside = methods["split_aside"]["legal"]
    assert aside["left_out"] == ["legal/redline"] and aside["requests"] > 0
    assert {c["draft"] for c in aside["by_candidate"]} == set(names)
    checks = {c["check"]: c for c in summary["checks"]}
    rest = checks["legal (legal/redline aside): C has the highest E_meas (÷ the best other)"]
    assert rest["measured"] is not None and rest["measured"] > 0
    assert "legal/redline: a model-free method has the highest E_meas (÷ the best other)" in checks


def _check_router(router: dict[str, Any], out: Path, stdout: str) -> None:
    """Every category routed; the routed E recomputed from the per-request logs, as the ratio of sums."""
    latency: dict[tuple[str, str], float] = {}
    category: dict[str, str] = {}
    for domain in ("general", "legal"):
        for line in (out / f"{domain}.jsonl").read_text().splitlines():
            row = json.loads(line)
            latency[(row["run"], row["id"])] = row["latency_ms"]
            category[row["id"]] = row["category"]
    assert {r["category"] for r in router["categories"]} == set(category.values())
    assert "legal/redline" in set(category.values())
    assert router["requests_paired"] == len(category) == 2 * QUICK_PROMPTS
    base = routed = 0.0
    for row in router["categories"]:
        pick = row["pick"]
        run = "baseline" if pick["draft"] is None else f"{pick['draft']}@k={pick['k']}"
        ids = [i for i, c in category.items() if c == row["category"]]
        assert row["requests"] == len(ids)
        base += sum(latency[("baseline", i)] for i in ids)
        routed += sum(latency[(run, i)] for i in ids)
        # The pick is the best of every candidate (or the target alone where none reaches 1.00×).
        best = max(c["speedup_measured"] for c in row["by_candidate"])
        assert pick["speedup_measured"] == pytest.approx(max(best, 1.0))
    everything = router["all"]
    assert everything["router"]["speedup_measured"] == pytest.approx(base / routed, rel=1e-4)
    assert everything["router"]["speedup_measured"] >= everything["single"]["speedup_measured"] - 1e-9
    assert set(router["domains"]) == {"general", "legal"}
    assert "router by category" in stdout and "routed E_meas over all traffic" in stdout


def _check_load_section(summary: dict[str, Any], out: Path, stdout: str) -> None:
    """ "Where speculation stops paying": the legal winner measured at each B, the curve, the schedule."""
    load = summary["load"]
    winner = summary["winners"]["legal"]
    assert (load["draft"], load["k"]) == (winner["draft"], winner["k"])
    assert load["batches_measured"] == list(LOAD_QUICK.measured)
    assert [r["batch"] for r in load["measured"]] == list(LOAD_QUICK.measured)
    for r in load["measured"]:
        assert r["speedup_measured_decode"] > 0 and r["speedup_measured"] > 0
        assert r["speedup_predicted_waves"] > 0 and r["speedup_predicted_curve"] > 0
        assert r["error"] == pytest.approx(r["speedup_measured_decode"] / r["speedup_predicted_waves"] - 1)
        matched, total = r["outputs_matched"]
        assert total == LOAD_QUICK.prompts and matched == total  # batched greedy output is the target's
        assert (out / f"batch-legal-{r['batch']}.json").is_file()
    assert [p["batch"] for p in load["predicted"]] == list(LOAD_QUICK.predicted)
    for p in load["predicted"]:
        assert set(p["by_k"]) == {str(k) for k in range(load["k"] + 1)} and p["by_k"]["0"] == 1.0
        es = {int(k): e for k, e in p["by_k"].items()}
        assert p["best_k"] == max(es, key=lambda k: (es[k], -k))
    best = {p["batch"]: p["best_k"] for p in load["predicted"]}
    crossover = load["crossover_predicted"]
    assert crossover == next((b for b in sorted(best) if best[b] == 0), None)
    schedule = KSchedule.parse(load["schedule"]["num_speculative_tokens_per_batch_size"])
    assert [schedule.k_for(b) for b in best] == list(best.values())
    assert KSchedule.parse(json.loads(load["schedule"]["serve_k_schedule"])) == schedule
    config = load["schedule"]["speculative_config"]
    assert config["num_speculative_tokens_per_batch_size"] == schedule.to_json()
    assert json.loads((out / "load-legal.json").read_text())["summary"] == load
    assert "where speculation stops paying" in stdout and "--k-schedule" in stdout


def test_demo_refuses_missing_models(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["demo", "--quick", "--models", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "demo models missing" in result.output and "Traceback" not in result.output


@pytest.mark.slow  # 5 s or more: make test-slow (the default suite stays under 3 minutes)
def test_demo_interrupted_ends_like_every_measuring_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo closes its runs with the measuring core's one ending: files kept, partial, exit 130.
    import specmeter.engine.runner as runner_module

    real = runner_module.run_interleaved

    def one_prompt_then_ctrl_c(state: Any, prompts: Any, **kw: Any) -> None:
        real(state, prompts[:1], **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_module, "run_interleaved", one_prompt_then_ctrl_c)
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--quick", "--out", str(out), "--no-store"])
    assert result.exit_code == 130, result.output
    assert f"Interrupted after 1 of {QUICK_PROMPTS} prompts" in result.output
    assert "Traceback" not in result.output
    general = json.loads((out / "general.json").read_text())
    assert general["complete"] is False and general["baseline"]["summary"]["requests"] == 1
    assert (out / "report-general.html").is_file() and not (out / "summary.json").exists()


def test_demo_out_must_be_a_directory(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("keep me")
    result = CliRunner().invoke(app, ["demo", "--quick", "--out", str(out), "--no-store"])
    assert result.exit_code == 2 and f"--out: {out} is a file; give a directory" in result.stderr
    assert out.read_text() == "keep me"
