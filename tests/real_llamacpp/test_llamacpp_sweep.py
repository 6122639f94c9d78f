"""``specmeter sweep`` against real llama-servers it launches itself: k ∈ {0, 4} × concurrency ∈ {1, 4}.

The speculative configuration comes from ``--launch`` (:func:`llamacpp_helpers.server_command` with the
legal draft and ``--spec-draft-n-max {k}``), the baseline from ``--baseline-launch``: the same server
without ``--spec-type``/``-md``. The baseline cannot be the speculative template with k = 0: with the draft
loaded and ``--spec-draft-n-max 0`` this llama-server build aborts as soon as two requests decode together
(docs/monitoring.md). Four slots (``--parallel 4``), so at c = 4 the four requests decode together.

Each server serves nothing but its cells (its warm-up comes before the first level's scrape), so in every
k = 4 cell llama.cpp's own counter deltas (``llamacpp:spec_decode_*``: drafted, accepted, steps) equal the
sums of the per-response ``timings`` (``draft_n``, ``draft_n_accepted``); the timings carry no steps, so
the cell's acceptance comes from the counters (``acceptance_source`` ``metrics``), which also give τ and
per-position. Every launched server is gone afterwards. Twelve legal prompts × 32 tokens: enough for each
cell's paired interval (10 requests at least), about 15 s on 2 cores. The E matrix is printed.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import psutil
import pytest
from llamacpp_helpers import server_command

from engine_helpers import LEGAL, prompt_slice, read_json, run_cli

pytestmark = pytest.mark.llamacpp

K = 4
LEVELS = (1, 4)
REQUESTS = 12  # ≥ 10 (metrics.stats.MIN_CI_REQUESTS): each cell gets its paired interval
MAX_TOKENS = 32
SPECULATIVE = shlex.join(server_command("{port}", k="{k}", parallel=max(LEVELS)))
BASELINE = shlex.join(server_command("{port}", draft=None, parallel=max(LEVELS)))


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def _interval(ci: list[float] | None) -> str:
    return f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""


def _row(cell: dict[str, Any]) -> str:
    n = cell["counters"]
    return (
        f"  {cell['run']} {cell['level']}: E {cell['e']:.2f}{_interval(cell['e_ci'])}"
        f"  α {cell['alpha']:.2f}  τ {cell['tau']:.2f}  drafted {n['drafted']:g}  accepted {n['accepted']:g}"
        f"  steps {n['steps']:g}  (per-request {n['per_request_drafted']:g} / {n['per_request_accepted']:g})"
    )


def test_sweep_of_llamacpp_counters_equal_per_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep.json"
    prompts = prompt_slice(LEGAL, tmp_path / "p.jsonl", REQUESTS)
    run_cli(
        "sweep", "--launch", SPECULATIVE, "--baseline-launch", BASELINE, "--k", f"0,{K}",
        "--concurrency", ",".join(map(str, LEVELS)), "--prompts", prompts,
        "--limit", REQUESTS, "--max-tokens", MAX_TOKENS, "--warmup", 2, "--startup-timeout", 120,
        "--json", out, "--quiet",
        timeout=600,
    )  # fmt: skip
    section = read_json(out)["sweep"]
    runs = section["configurations"]
    assert [r["run"] for r in runs] == ["k=0", f"k={K}", "k=0 (end)"]
    for run in runs:
        assert run["status"] == "ok" and run["error"] is None, run
        assert run["pid"] is not None and gone(run["pid"]), run
    assert "-md" not in runs[0]["launch"] and "-md" in runs[1]["launch"]
    levels = [f"c={c}" for c in LEVELS]
    cells = {(c["run"], c["level"]): c for c in section["cells"]}
    assert set(cells) == {(r, lv) for r in ("k=0", f"k={K}") for lv in levels}
    for level in levels:
        cell = cells[(f"k={K}", level)]
        counters = cell["counters"]
        assert cell["requests"] == REQUESTS and cell["failed"] == 0, cell
        assert cell["e"] is not None and cell["e_ci"] is not None and cell["e_end"] is not None, cell
        assert counters["drafted"] and counters["drafted"] > 0, cell
        assert counters["drafted"] == counters["per_request_drafted"], counters
        assert counters["accepted"] == counters["per_request_accepted"], counters
        assert counters["equal"] is True, counters
        # The timings have no steps, the counters do: acceptance (τ, per-position too) from the counters.
        assert counters["steps"] and counters["steps"] > 0, counters
        assert cell["acceptance_source"] == "metrics", cell
        assert cell["tau"] == pytest.approx(1 + counters["accepted"] / counters["steps"])
        assert len(cell["per_position"]) == K, cell
        base = cells[("k=0", level)]
        assert base["requests"] == REQUESTS and base["failed"] == 0, base
        assert not base["counters"]["drafted"], base  # the baseline has no draft: nothing drafted
    assert [d["level"] for d in section["drift"]] == levels
    with capsys.disabled():
        lines = ["", f"llama.cpp sweep, {REQUESTS} legal prompts × {MAX_TOKENS} tokens:"]
        lines += [_row(cells[(f"k={K}", lv)]) for lv in levels]
        lines += [
            f"  drift {d['level']}: first run / last run {d['first_over_end']:.2f}{_interval(d['ci'])}"
            for d in section["drift"]
        ]
        print("\n".join(lines))
