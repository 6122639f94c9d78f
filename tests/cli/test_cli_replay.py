"""`specmeter replay` on hand-made logs: table, result file, --costs, gateway lines, option mistakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from pricing_expect import expected_e
from specmeter.cli.app import app
from specmeter.metrics.batch_surface import tau_by_k

runner = CliRunner()

# A response that repeats itself: n-gram methods find it.
RESPONSE = [5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 10, 11]


def _log(path: Path, n: int = 12, model: str = "target") -> Path:
    lines = []
    for i in range(n):
        lines.append(
            {
                "id": f"r{i}",
                "domain": "legal" if i % 2 else "general",
                "temperature": 0.0,
                "model": model,
                "prompt_ids": [1, 2, 3, 4 + i % 3],
                "output_ids": RESPONSE[: 12 + i % 10],
                "finish_reason": "length",
                "max_tokens": 12 + i % 10,
                "accepted_tokens": 0,
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return _log(tmp_path / "serve.jsonl")


def _tau_and_share(out: Path, k: int) -> tuple[dict[str, Any], float, float]:
    """The replay result, its first candidate's τ(k) and the share f of steps at which it proposed."""
    data = json.loads(out.read_text("utf-8"))
    summary = data["candidates"][0]["summary"]
    tau = tau_by_k([p["cumulative"] for p in summary["per_position"]], k)[k]
    assert tau is not None
    f = summary["steps"] / summary["target_forwards"]  # the share of steps at which the method proposed
    assert 0 < f < 1  # the first steps of a response find no match: plain target forwards
    return data, tau, f


def test_table_result_and_csv(tiny: Any, log: Path, tmp_path: Path) -> None:
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    result = runner.invoke(
        app,
        [
            "replay",
            "--from",
            str(log),
            "--target",
            str(tiny.target),
            "--method",
            "ngram:min=2,max=3",
            "--method",
            "suffix",
            "--k",
            "2,4",
            "--category-field",
            "domain",
            "--json",
            str(out),
            "--html",
            str(html),
            "--store",
            str(tmp_path / "runs.sqlite"),
        ],
    )
    assert result.exit_code == 0, result.output
    for text in (
        "acceptance on the logged responses",
        "by category",
        "legal",
        "ngram:min=2,max=3",
        "Acceptance only",
        "recorded as run",
    ):
        assert text in result.output, text
    data = json.loads(out.read_text("utf-8"))
    assert data["complete"] is True and data["kind"] == "replay"
    assert [(c["draft"], c["k"]) for c in data["candidates"]] == [
        ("ngram:min=2,max=3", 2),
        ("ngram:min=2,max=3", 4),
        ("suffix", 2),
        ("suffix", 4),
    ]
    s = data["candidates"][0]["summary"]
    assert s["requests"] == 12 and s["drafted_tokens"] > 0
    assert s["acceptance_rate"] == s["accepted_tokens"] / s["drafted_tokens"]
    assert s["acceptance_rate_ci"] is not None and s["latency_ms"] is None and s["speedup_measured"] is None
    assert set(data["candidates"][0]["by_category"]) == {"legal", "general"}
    assert data["replay"]["log"]["measured"] == 12 and data["replay"]["exact"] is True
    assert "<html" in html.read_text("utf-8")
    # report reads it like any result file
    assert runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "again.html")]).exit_code == 0


def test_costs_predict_speedup_per_batch(tiny: Any, log: Path, tmp_path: Path) -> None:
    points = []
    for b, base in ((1, 10.0), (8, 20.0)):
        for k in (0, 2):
            points.append(
                {"batch": b, "k": k, "step_ms": base + 3 * k, "draft_ms": 1.0 * k, "verify_ms": base}
            )
    surface = tmp_path / "tune.json"
    surface.write_text(json.dumps({"kind": "tune", "batch": {"surface": {"points": points}}}), "utf-8")
    out = tmp_path / "r.json"
    result = runner.invoke(
        app,
        [
            "replay",
            "--from",
            str(log),
            "--target",
            str(tiny.target),
            "--method",
            "ngram:min=2,max=3",
            "--k",
            "2",
            "--costs",
            str(surface),
            "--json",
            str(out),
            "--no-store",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text("utf-8"))
    row = data["replay"]["costs"]["rows"][0]
    summary = data["candidates"][0]["summary"]
    # model-free: the target's part of the step (step − draft) plus the lookup time replay measured, per row
    # and step, at every forward; a batched step costs its longest row (docs/metrics.md, pricing)
    lookup = data["replay"]["lookup_us_per_step"]["ngram:min=2,max=3@k=2"] / 1e6
    assert 0 < lookup < 0.01 and row["cost_basis"] == "lookup" and "measured by replay" in row["cost"]
    for b, base in (("1", 10.0), ("8", 20.0)):

        def step_s(batch: int, d: int, base: float = base) -> float:
            return (base + 2 * d) / 1000 + lookup * batch

        assert row["e"][b] == pytest.approx(expected_e(summary, int(b), step_s, base / 1000))
    assert "predicted speedup E(B)" in result.output and "Acceptance only" not in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}", "utf-8")
    assert_usage_error(
        runner.invoke(
            app,
            [
                "replay",
                "--from",
                str(log),
                "--target",
                str(tiny.target),
                "--method",
                "ngram",
                "--costs",
                str(bad),
                "--no-store",
            ],
        ),
        "holds no cost surface",
    )


def test_gateway_lines_openai_and_anthropic(tiny: Any, tmp_path: Path) -> None:
    text = "The Supplier shall indemnify the Customer against all losses. The Supplier shall indemnify"
    lines = [
        {
            "request": {
                "model": "target",
                "messages": [{"role": "user", "content": "Clause?"}],
                "temperature": 0,
            },
            "response": {
                "model": "target",
                "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            },
        },
        {
            "request": {"model": "target", "prompt": "Clause:"},
            "response": {"choices": [{"text": text, "finish_reason": "length"}]},
        },
        {
            "request": {
                "model": "target",
                "system": "Be brief.",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "Clause?"}]}],
            },
            "response": {
                "type": "message",
                "model": "target",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
            },
        },
        {"request": {"model": "other", "prompt": "x"}, "response": {"choices": [{"text": text}]}},
        {
            "request": {"model": "target", "prompt": "x"},
            "response": {"choices": [{"message": {"tool_calls": []}}]},
        },
    ]
    log = tmp_path / "gateway.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "r.json"
    result = runner.invoke(
        app,
        [
            "replay",
            "--from",
            str(log),
            "--target",
            str(tiny.target),
            "--method",
            "ngram:min=1,max=3",
            "--json",
            str(out),
            "--no-store",
        ],
    )
    assert result.exit_code == 0, result.output
    section = json.loads(out.read_text("utf-8"))["replay"]["log"]
    assert (
        section["measured"] == 3 and section["set_aside"] == {"other_model": 1} and section["bad_lines"] == 1
    )
    assert f"{log}:5: field 'response.choices[0].message.content': no text" in result.output
    assert f"{log}:4: set aside (other_model)" in result.output


def test_option_mistakes(tiny: Any, log: Path, tmp_path: Path) -> None:
    base = ["replay", "--from", str(log), "--target", str(tiny.target)]
    assert_usage_error(runner.invoke(app, base), "--method: give at least one method")
    assert_usage_error(runner.invoke(app, [*base, "--method", "ngram:min=0"]), "--method: ngram: key 'min'")
    assert_usage_error(
        runner.invoke(app, [*base, "--method", "ngram", "--k", "99"]), "--k: each k must be in 1..64"
    )
    assert_usage_error(
        runner.invoke(app, [*base, "--method", "ngram", "--shard", "3/2"]), "--shard: need 0 <= i < N"
    )
    assert_usage_error(
        runner.invoke(app, [*base, "--method", "ngram", "--shard", "0/2"]), "--shard needs --json"
    )
    assert_usage_error(runner.invoke(app, [*base, "--method", "ngram", "--warm", "50"]), "within --warm 50")
    assert_usage_error(runner.invoke(app, ["replay", "--method", "ngram"]), "--from")
    assert_usage_error(
        runner.invoke(app, [*base, "--method", "ngram", "--json", str(log)]), "never overwrites an input"
    )


def test_serve_log_output_needs_a_log(tiny: Any) -> None:
    result = runner.invoke(app, ["serve", "--target", str(tiny.target), "--log-output"])
    assert_usage_error(result, "--log-output needs --log FILE")


def test_costs_from_a_sweep_rescale_its_decode_speedup_by_tau(tiny: Any, log: Path, tmp_path: Path) -> None:
    # a sweep result's cells as `sweep` writes them: closed-loop levels, a rate level, another k
    cells = [
        {"level": "c=1", "concurrency": 1, "rate": None, "k": 2, "e_decode": 1.5, "tau": 2.5},
        {"level": "c=4", "concurrency": 4, "rate": None, "k": 2, "e_decode": 1.2, "tau": 2.4},
        {"level": "c=4", "concurrency": 4, "rate": None, "k": 3, "e_decode": 1.1, "tau": 3.0},
        {"level": "r=2", "concurrency": None, "rate": 2.0, "k": 2, "e_decode": 9.0, "tau": 2.5},
        {"level": "c=8", "concurrency": 8, "rate": None, "k": 2, "e_decode": None, "tau": None},
    ]
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"kind": "sweep", "sweep": {"cells": cells}}), "utf-8")
    out = tmp_path / "r.json"
    args = ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram:min=2,max=3"]
    result = runner.invoke(app, [*args, "--k", "2", "--costs", str(sweep), "--json", str(out), "--no-store"])
    assert result.exit_code == 0, result.output
    data, tau, f = _tau_and_share(out, 2)
    costs = data["replay"]["costs"]
    assert costs["batches"] == ["1", "4"]  # the rate level and the incomplete cell are left out
    e = costs["rows"][0]["e"]
    for b, e_decode, swept_tau in (("1", 1.5, 2.5), ("4", 1.2, 2.4)):
        # a drafting step costs what the sweep's did (swept_tau / e_decode plain steps) and yields tau;
        # a step without a proposal is a plain step yielding one token
        tokens = f * tau + 1 - f
        time = f * swept_tau / e_decode + (1 - f)
        assert e[b] == pytest.approx(tokens / time)
    assert "lower bound" in costs["note"] and "predicted speedup E(B)" in result.output
    # a k the sweep did not run has no figure
    result = runner.invoke(app, [*args, "--k", "4", "--costs", str(sweep), "--json", str(out), "--no-store"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(out.read_text("utf-8"))["replay"]["costs"]["rows"][0]["e"].values()) == {None}
