"""Replay of `serve`'s own log equals a live run of the engine's speculative loop with the same method.

A baseline `serve` (the tiny target, k = 0) answers greedy requests and logs them with ``--log-output``.
Each (method, k) then runs live: ``engine.speculative.speculative_decode`` with
``engine.candidate.make_proposer(method)`` on the logged prompt ids, one proposer per run reused across
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
from specmeter.engine.candidate import make_proposer
from specmeter.engine.loader import LoadedModel, load_model
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


def _live(target: LoadedModel, lines: list[dict[str, Any]], method: str, k: int) -> list[tuple[int, int, int]]:
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
    args = ["replay", "--from", str(greedy_log), "--target", str(tiny.target), "--k", ",".join(map(str, KS)),
            "--category-field", "domain", "--json", str(out), "--csv", str(csv_path), "--no-store"]  # fmt: skip
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
        assert [(int(r["accepted_tokens"]), int(r["drafted_tokens"]), int(r["steps"])) for r in per_request] == live
    assert sum(t[2][1] for t in table) > 0, "no method drafted anything: the test would prove nothing"
    print("\nexactness (live vs replay: accepted, drafted, steps)")
    for row in table:
        print(row)
