"""Numeric options: only finite values in their documented ranges (issue 12).

typer reads ``nan`` and ``inf`` as floats; before, ``bench --temperature nan`` crashed mid-run,
``--temperature inf`` reported α 1.000, ``load --rate inf`` or ``--stall-timeout nan`` ran, ``train --lr
nan`` was a traceback, ``bench --threads 100000`` a segfault, ``--seed 2^70`` an OverflowError and ``load
--k 10^23`` hung (per-position rates are laid out to k; k is at most ``measuring.config.K_MAX_LIMIT``). Each
must be one ``error:`` line naming the option, exit 2, before any work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

import specmeter.server.hosting
from specmeter.cli.app import app

runner = CliRunner()
HUGE = str(2**70)


@pytest.fixture(scope="module")
def files(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("numbers")
    prompts = root / "golden.jsonl"
    prompts.write_text(json.dumps({"id": "a", "prompt": "hello there"}) + "\n")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": f"doc {i} ."}) + "\n" for i in range(40)))
    return {"T": str(tiny.target), "D": str(tiny.draft), "P": str(prompts), "C": str(corpus), "O": str(root)}


BENCH = ["bench", "--target", "T", "--draft", "D", "--prompts", "P", "--no-store"]
LOAD = ["load", "--endpoint", "http://127.0.0.1:9", "--prompts", "P", "--model", "m", "--no-metrics"]
MONITOR = ["monitor", "--scrape", "http://127.0.0.1:9/metrics", "--once"]
WHATIF = ["whatif", "--target", "T", "--draft", "D", "--prompts", "P", "--no-store"]
STANDIN = ["whatif", "--target", "T", "--prompts", "P", "--no-store"]
TRAIN = ["train", "--corpus", "C", "--out", "O/m", "--steps", "1"]
DISTILL = ["distill", "--target", "T", "--preset", "draft-tiny", "--corpus", "C", "--out", "O/d"]
ROI = ["roi", "--monthly-tokens", "1B", "--baseline-throughput", "100", "--baseline-price", "2"]
CASES = [
    (BENCH, "--temperature", "nan"),
    (BENCH, "--temperature", "inf"),
    (BENCH, "--temperature", "-1"),
    (BENCH, "--top-p", "nan"),
    (BENCH, "--top-p", "1.5"),
    (BENCH, "--k", "0"),
    (BENCH, "--max-tokens", "0"),
    (BENCH, "--seed", HUGE),
    (BENCH, "--seed", "-1"),
    (BENCH, "--threads", "100000"),
    (BENCH, "--cost-repeats", "0"),
    (["tune", "--target", "T", "--draft", "D", "--prompts", "P", "--no-store"], "--temperature", "nan"),
    (["select", "--target", "T", "--draft", "D", "--prompts", "P", "--no-store"], "--top-p", "inf"),
    (LOAD, "--rate", "nan"),
    (LOAD, "--rate", "inf"),
    (LOAD, "--rate", "0"),
    (LOAD, "--duration", "nan"),
    (LOAD, "--duration", "inf"),
    (LOAD, "--stall-timeout", "nan"),
    (LOAD, "--stall-timeout", "inf"),
    (LOAD, "--request-timeout", "nan"),
    (LOAD, "--request-timeout", "0"),
    (LOAD, "--temperature", "nan"),
    (LOAD, "--top-p", "nan"),
    (LOAD, "--seed", HUGE),
    (LOAD, "--max-error-rate", "nan"),
    (LOAD, "--max-tokens", "0"),
    (LOAD, "--k", "0"),
    (LOAD, "--k", "65"),  # above measuring.config.K_MAX_LIMIT
    (LOAD, "--k", HUGE),  # per-position rates are laid out to k: this one hung
    ([*LOAD, "--rate", "1", "--arrival", "gamma"], "--burstiness", "nan"),
    (MONITOR, "--tau-baseline", "nan"),
    (MONITOR, "--tau-baseline", "0.5"),
    (MONITOR, "--alert-alpha", "nan"),
    (MONITOR, "--alert-tau-drop", "nan"),
    (MONITOR, "--interval", "400d"),
    (MONITOR, "--duration", "99999999999999999999d"),
    (MONITOR, "--k", "0"),
    (MONITOR, "--k", "65"),
    (MONITOR, "--k", HUGE),
    (WHATIF, "--temperature", "nan"),
    (WHATIF, "--top-p", "inf"),
    (WHATIF, "--alpha", "nan"),
    (WHATIF, "--alpha", "1.5"),
    (WHATIF, "--rates", "nan"),
    (WHATIF, "--at-alpha", "nan"),
    (WHATIF, "--at-alpha", "1.5"),
    (WHATIF, "--batch", "0"),
    (WHATIF, "--k", "0"),
    (WHATIF, "--seed", HUGE),
    (WHATIF, "--cost-repeats", "0"),
    (STANDIN, "--standin", "nan"),
    (STANDIN, "--standin", "1"),
    (TRAIN, "--lr", "nan"),
    (TRAIN, "--lr", "inf"),
    (TRAIN, "--lr", "0"),
    (TRAIN, "--seed", "-1"),
    (TRAIN, "--hidden", "0"),
    (DISTILL, "--lr", "nan"),
    (DISTILL, "--heldout", "-1"),
    (DISTILL, "--new-tokens", "0"),
    ([*ROI, "--speedup", "1.5"], "--horizon-months", "nan"),
    (ROI, "--speedup", "inf"),
    (["doctor"], "--seconds", "nan"),
    (["plan", "--target", "T"], "--utilization", "nan"),
    (["golden", "--from", "P", "--out", "O/g.jsonl"], "--near-threshold", "nan"),
    (["golden", "--from", "P", "--out", "O/g.jsonl"], "--seed", "-1"),
    (["drift", "--requests", "P"], "--level", "nan"),
    (["serve", "--target", "T", "--draft", "D"], "--k", "-1"),
]


@pytest.mark.parametrize(("base", "option", "value"), CASES, ids=[f"{c[0][0]} {c[1]} {c[2]}" for c in CASES])
def test_out_of_range_or_not_finite(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch, base: list[str], option: str, value: str
) -> None:
    monkeypatch.setattr(specmeter.server.hosting, "run_foreground", lambda *a, **k: None)
    args = [files.get(a, a.replace("O/", files["O"] + "/")) for a in base]
    assert_usage_error(runner.invoke(app, [*args, option, value]), option)


def test_serve_k_beyond_the_context(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(specmeter.server.hosting, "run_foreground", lambda *a, **k: None)
    result = runner.invoke(
        app, ["serve", "--target", str(tiny.target), "--draft", str(tiny.draft), "--k", "5000"]
    )
    assert_usage_error(result, "--k 5000: a step needs k + 1 = 5001 positions beyond the prompt")


def test_bench_k_beyond_the_context_names_k(tiny: Any, files: dict[str, str]) -> None:
    # Issue 12: "--k 1000" was told that the prompt "needs 1066 positions", without a word about --k.
    base = [files.get(a, a) for a in BENCH]
    line = assert_usage_error(runner.invoke(app, [*base, "--k", "1000", "--max-tokens", "30"]), "--k 1000")
    assert "1001 for the last step's drafts at --k 1000" in line
    assert_usage_error(runner.invoke(app, [*base, "--k", "5000"]), "--k 5000: a step needs k + 1 = 5001")


def test_a_json_array_as_prompts_is_one_line(tiny: Any, files: dict[str, str], tmp_path: Path) -> None:
    array = tmp_path / "prompts.json"
    array.write_text(json.dumps([{"id": "a", "prompt": "x"}]))
    base = [files.get(a, a) for a in BENCH]
    args = [*base[: base.index("--prompts") + 1], str(array), *base[base.index("--prompts") + 2 :]]
    assert_usage_error(runner.invoke(app, args), "a JSON array; a golden set is JSONL")
    load = [files.get(a, a) for a in LOAD]
    load[load.index("--prompts") + 1] = str(array)
    assert_usage_error(runner.invoke(app, load), "a JSON array; a golden set is JSONL")
