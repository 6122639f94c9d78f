"""Replay of `serve`'s own log equals a live run of the engine's speculative loop with the same method.

A baseline `serve` (the tiny target, k = 0) answers greedy requests and logs them with ``--log-output``.
Each (method, k) then runs live: ``engine.speculative.speculative_decode`` with
``engine.proposers.candidate.make_proposer(method)`` on the logged prompt ids, one proposer per run reused
across
the requests in log order (suffix decoding's cache learns across them), and `specmeter replay` replays the
log. Accepted, drafted and steps must be equal, request by request and in total.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.engine.loader import LoadedModel, load_model
from specmeter.engine.proposers.candidate import make_proposer
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import speculative_decode
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine

runner = CliRunner()

METHODS = ("ngram:min=1,max=3", "ngram-simple:n=1,m=4", "ngram-map-k:n=1,m=3", "suffix")
KS = (2, 4)
PROMPTS = (
    ("legal", "completions", "The Supplier shall indemnify the Customer against all losses"),
    ("legal", "chat", "Either party may terminate this Agreement by giving notice"),
    ("general", "completions", "The children played in the garden until the sun went down"),
    ("general", "chat", "To reset the device, hold the power button"),
    ("legal", "completions", "This Agreement shall be governed by and construed"),
    ("general", "completions", "She walked to the station, bought a coffee"),
)


def _serve_log(target: Path, log: Path, temperature: float, seeds: range) -> None:
    engine = LocalEngine.load(target, None, 0, device="cpu")
    config = ServeConfig(log_path=log, log_prompts=True, log_output=True, max_batch=1)
    with ServerThread(create_app(engine, config)) as server:
        for seed in seeds:
            for i, (domain, api, text) in enumerate(PROMPTS):
                body: dict[str, Any] = {
                    "max_tokens": 24 + 4 * i, "temperature": temperature, "seed": seed * 100 + i,
                    "metadata": {"domain": domain},
                }  # fmt: skip
                if api == "chat":
                    body["messages"] = [{"role": "user", "content": text}]
                else:
                    body["prompt"] = text
                path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
                response = httpx.post(server.url + path, json=body, timeout=60)
                assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def greedy_log(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    log = tmp_path_factory.mktemp("replay") / "serve.jsonl"
    _serve_log(tiny.target, log, 0.0, range(1))
    yield log


@pytest.fixture(scope="module")
def target(tiny: Any) -> LoadedModel:
    return load_model(tiny.target, device="cpu")


def _live(
    target: LoadedModel, lines: list[dict[str, Any]], method: str, k: int
) -> list[tuple[int, int, int]]:
    proposer = make_proposer(method, target)
    out = []
    for line in lines:
        gen = speculative_decode(
            target.model, proposer, line["prompt_ids"], k=k, params=SamplingParams(),
            max_tokens=line["max_tokens"], eos_ids=target.eos_ids,
        )  # fmt: skip
        assert list(gen.output_ids) == line["output_ids"]  # greedy: the output does not depend on the method
        steps = [s for s in gen.steps if s.drafted >= 1]
        out.append((sum(s.accepted for s in steps), sum(s.drafted for s in steps), len(steps)))
    return out


def test_greedy_replay_equals_the_live_loop(
    tiny: Any, greedy_log: Path, target: LoadedModel, tmp_path: Path
) -> None:
    lines = [json.loads(x) for x in greedy_log.read_text("utf-8").splitlines()]
    assert {"output_ids", "output", "prompt_ids", "finish_reason", "max_tokens", "model"} <= set(lines[0])
    out, csv_path = tmp_path / "replay.json", tmp_path / "replay.csv"
    ks = ",".join(map(str, KS))
    args = ["replay", "--from", str(greedy_log), "--target", str(tiny.target), "--k", ks, "--category-field",
            "domain", "--json", str(out), "--csv", str(csv_path), "--no-store"]  # fmt: skip
    for m in METHODS:
        args += ["--method", m]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text("utf-8"))
    assert data["kind"] == "replay" and data["replay"]["exact"] is True
    with csv_path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    table = []
    for cand in data["candidates"]:
        live = _live(target, lines, cand["draft"], cand["k"])
        s = cand["summary"]
        replayed = (s["accepted_tokens"], s["drafted_tokens"], s["steps"])
        totals = tuple(sum(x[i] for x in live) for i in range(3))
        table.append((cand["draft"], cand["k"], totals, replayed))
        assert replayed == totals, (cand["draft"], cand["k"])
        label = f"{cand['draft']}@k={cand['k']}"
        per_request = [r for r in rows if r["run"] == label]
        assert len(per_request) == len(lines)
        assert [
            (int(r["accepted_tokens"]), int(r["drafted_tokens"]), int(r["steps"])) for r in per_request
        ] == live
    assert sum(t[2][1] for t in table) > 0, "no method drafted anything: the test would prove nothing"
    print("\nexactness (live vs replay: accepted, drafted, steps)")
    for row in table:
        print(row)


def _replay(args: list[str]) -> Any:
    return runner.invoke(app, ["replay", *args, "--no-store"])


def test_shards_merged_equal_one_run(tiny: Any, greedy_log: Path, tmp_path: Path) -> None:
    """Three shards (each walking every third request, the others only feeding suffix's cache) merged give
    the single run's figures, intervals included."""
    base = ["--from", str(greedy_log), "--target", str(tiny.target), "--k", "2,3", "--method", "suffix",
            "--method", "ngram:min=1,max=2", "--category-field", "domain", "--warm", "1"]  # fmt: skip
    single = tmp_path / "single.json"
    assert _replay([*base, "--json", str(single)]).exit_code == 0
    shards = [tmp_path / f"shard{i}.json" for i in range(3)]
    for i, path in enumerate(shards):
        result = _replay([*base, "--shard", f"{i}/3", "--json", str(path), "--quiet"])
        assert result.exit_code == 0, result.output
    merged = tmp_path / "merged.json"
    result = runner.invoke(app, ["replay", "--merge", str(shards[2]), "--merge", str(shards[0]), "--merge",
                                 str(shards[1]), "--json", str(merged), "--no-store"])  # fmt: skip
    assert result.exit_code == 0, result.output
    one, many = json.loads(single.read_text("utf-8")), json.loads(merged.read_text("utf-8"))
    assert one["candidates"] == many["candidates"]
    assert (
        sum(json.loads(p.read_text("utf-8"))["replay"]["log"]["measured"] for p in shards) == len(PROMPTS) - 1
    )
    # A missing shard, or a shard of another replay, is refused in one line.
    result = runner.invoke(
        app, ["replay", "--merge", str(shards[0]), "--merge", str(shards[1]), "--no-store"]
    )
    assert result.exit_code == 2 and "shard 2 of 3 missing" in result.output
    result = runner.invoke(app, ["replay", "--merge", str(single), "--no-store"])
    assert result.exit_code == 2 and "is not a shard" in result.output


def test_a_log_from_another_model_is_detected(tiny: Any, greedy_log: Path, tmp_path: Path) -> None:
    # The log names the model `target`; replaying it as another model's (same tokenizer) is refused.
    result = _replay(["--from", str(greedy_log), "--target", str(tiny.qwen2), "--method", "ngram"])
    assert result.exit_code == 2
    assert "no request of model 'qwen2'" in result.output and "target" in result.output
    assert "--model" in result.output
    # A tokenizer that cannot have produced the logged ids: every request is set aside as such.
    result = _replay(["--from", str(greedy_log), "--target", str(tiny.other_tokenizer_draft), "--method",
                      "ngram", "--model", "target", "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert result.exit_code == 2
    assert "no usable request" in result.output
    # --model picks the log's model; the tokenizer is the same, so every request replays.
    result = _replay(["--from", str(greedy_log), "--target", str(tiny.qwen2), "--method", "ngram",
                      "--model", "target", "--json", str(tmp_path / "ok.json")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "ok.json").read_text("utf-8"))["replay"]["log"]["measured"] == len(PROMPTS)


def test_bad_lines_are_one_line_each_and_the_rest_replays(
    tiny: Any, greedy_log: Path, tmp_path: Path
) -> None:
    lines = greedy_log.read_text("utf-8").splitlines()
    no_output = {k: v for k, v in json.loads(lines[1]).items() if k not in ("output_ids", "output")}
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        "\n".join([lines[0], '{"prompt": "cut', json.dumps(no_output), "[1, 2]", *lines[2:]]) + "\n", "utf-8"
    )
    out = tmp_path / "r.json"
    result = _replay(
        ["--from", str(mixed), "--target", str(tiny.target), "--method", "ngram", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"{mixed}:2: invalid JSON" in result.output
    assert f"{mixed}:3: no response logged" in result.output
    assert f"{mixed}:4: expected a JSON object" in result.output
    log = json.loads(out.read_text("utf-8"))["replay"]["log"]
    assert log["bad_lines"] == 3 and log["measured"] == len(PROMPTS) - 1


def test_a_log_without_responses_is_one_error(tiny: Any, tmp_path: Path) -> None:
    log = tmp_path / "prompts.jsonl"
    log.write_text(
        json.dumps({"id": "a", "prompt": "Hello", "accepted_tokens": 1, "drafted_tokens": 2}) + "\n"
    )
    result = _replay(["--from", str(log), "--target", str(tiny.target), "--method", "ngram"])
    assert result.exit_code == 2
    assert f"{log}:1: no response logged" in result.output and "--log-output" in result.output
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_sampled_replay_alpha_lies_in_the_live_interval(
    tiny: Any, target: LoadedModel, tmp_path: Path
) -> None:
    """Temperature 1: the logged token equals a deterministic draft token with the live acceptance
    probability, so replayed α estimates live α; with several seeds of live runs, replay's α lies within
    the live run's 95% interval."""
    from specmeter.metrics.stats import bootstrap_ratio_ci

    log = tmp_path / "sampled.jsonl"
    _serve_log(tiny.target, log, 1.0, range(3))
    lines = [json.loads(x) for x in log.read_text("utf-8").splitlines()]
    out = tmp_path / "r.json"
    result = _replay(["--from", str(log), "--target", str(tiny.target), "--method", "ngram:min=1,max=2",
                      "--k", "3", "--json", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    replayed = json.loads(out.read_text("utf-8"))["candidates"][0]["summary"]["acceptance_rate"]
    import torch

    accepted, drafted = [], []
    for seed in range(5):
        proposer = make_proposer("ngram:min=1,max=2", target)
        for i, line in enumerate(lines):
            generator = torch.Generator().manual_seed(10_000 + seed * 1000 + i)
            gen = speculative_decode(
                target.model, proposer, line["prompt_ids"], k=3, params=SamplingParams(temperature=1.0),
                max_tokens=line["max_tokens"], eos_ids=target.eos_ids, generator=generator,
            )  # fmt: skip
            accepted.append(sum(s.accepted for s in gen.steps))
            drafted.append(sum(s.drafted for s in gen.steps))
    ci = bootstrap_ratio_ci(accepted, drafted)
    assert ci is not None and sum(drafted) > 50
    assert ci[0] <= replayed <= ci[1], (replayed, ci)


def test_draft_model_and_layer_skip_replay_equal_the_live_loop(
    tiny: Any, greedy_log: Path, target: LoadedModel, tmp_path: Path
) -> None:
    """Methods with weights replay with the proposer alone (argmax drafts over the logged tokens): a draft
    model directory and self-speculation with the target's first layers. Drafted tokens and steps are the
    live ones exactly; acceptance too, but in the steps whose draft matched through the response's EOS and
    went on (``past_end``): live, the target judged the tokens after EOS, which no log holds, so replay's
    acceptance there is a lower bound, short by at most k - 1 per such step."""
    lines = [json.loads(x) for x in greedy_log.read_text("utf-8").splitlines()]
    out = tmp_path / "r.json"
    result = _replay(["--from", str(greedy_log), "--target", str(tiny.target), "--method", str(tiny.draft),
                      "--method", "layers:n=2", "--k", "3", "--json", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text("utf-8"))
    for cand in data["candidates"]:
        method = str(tiny.draft) if cand["draft"] == tiny.draft.name else cand["draft"]
        live = [sum(x[i] for x in _live(target, lines, method, 3)) for i in range(3)]
        s = cand["summary"]
        past_end = data["replay"]["past_end"][f"{cand['draft']}@k=3"]
        assert (s["drafted_tokens"], s["steps"]) == (live[1], live[2]) and s["drafted_tokens"] > 0
        assert 0 <= live[0] - s["accepted_tokens"] <= 2 * past_end
        shown = [s[x] for x in ("accepted_tokens", "drafted_tokens", "steps")]
        print(f"\n{cand['draft']} k=3: live {live}, replay {shown}, past_end {past_end}")
