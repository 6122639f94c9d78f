"""Replay of a greedy `serve` log equals what `bench` and `load` measure live with the same method.

A baseline `serve` (the tiny target, k = 0, one request at a time, ``--log-output``) answers a small golden
set sent by `load` (concurrency 1); the log is replayed with every deterministic method at k = 3: the
n-gram family, suffix decoding, a draft model directory and ``layers:n=2``. Then, live:

- `bench --draft M … --prompts GOLDEN --temperature 0 --log`: its per-request accepted / drafted / steps
  (the log's lines) and its totals (the result's summary);
- `load` (concurrency 1, no warm-up) against a `serve --draft M --k 3` (max batch 1) with ``--log``: the
  per-request figures load rebuilt from the server's per-request report (``metrics.speculative_decoding``),
  and the speculating server's own log lines, whose responses are the baseline's (greedy).

An EAGLE head needs one that drafts what the target says, or acceptance would be 0 whatever it drafted
(proving nothing): the bundled target and its trained head (``eagle-legal``) run the same checks on a few
legal prompts, replaying the speculating server's own log.

They must be equal request by request, for every method, except where the log cannot settle it: a step
whose draft matched the response through its EOS and went on (``past_end``, docs/replay.md). The live
verifier judged the drafts past EOS too and counted those it accepted (as vLLM counts them: its scheduler
takes the spec-decoding stats before the stop check trims the step's tokens), which no log can show:
replay's acceptance there is a lower bound, short by at most k − 1 per such step, drafted and steps equal.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.bundled.models import bundled_model
from specmeter.bundled.names import resolve_bundled
from specmeter.cli.app import app
from specmeter.methods import MethodSpec, parse_candidate
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine

runner = CliRunner()

K = 3
MODEL_FREE = ("ngram:min=1,max=3", "ngram-simple:n=1,m=4", "ngram-map-k:n=1,m=3", "suffix")
PROMPTS = (
    {"id": "p0", "category": "legal", "max_tokens": 20,
     "prompt": "The Supplier shall indemnify the Customer against all losses"},
    {"id": "p1", "category": "legal",
     "messages": [{"role": "user", "content": "Either party may terminate this Agreement by giving notice"}]},
    {"id": "p2", "category": "general",
     "prompt": "The children played in the garden until the sun went down"},
    {"id": "p3", "category": "general", "max_tokens": 28,
     "prompt": "She walked to the station, bought a coffee"},
)  # fmt: skip
MAX_TOKENS = 24
Figures = tuple[int, int, int]  # accepted, drafted, steps (steps that drafted at least one token)


@dataclass(frozen=True)
class Replayed:
    """Replay's per-request figures per method label (log order), its totals and its past-end steps."""

    rows: dict[str, list[Figures]]
    totals: dict[str, Figures]
    past_end: dict[str, int]


def _label(spec: str) -> str:
    """The run key of a `--draft`/`--method` spec: the method's label, or a directory's name."""
    parsed = parse_candidate(spec)
    return parsed.label if isinstance(parsed, MethodSpec) else Path(spec).name


def _golden(folder: Path, prompts: Any) -> Path:
    path = folder / "golden.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in prompts), "utf-8")
    return path


def _serve(target: Path, spec: str | None, k: int, log: Path) -> ServerThread:
    """`serve --target T [--draft SPEC --k K] --log LOG --log-prompts --log-output --max-batch 1`."""
    draft: Any = None
    if spec is not None:
        parsed = parse_candidate(spec)
        draft = parsed if isinstance(parsed, MethodSpec) else Path(spec)
    engine = LocalEngine.load(target, draft, k, device="cpu")
    config = ServeConfig(log_path=log, log_prompts=True, log_output=True, max_batch=1)
    return ServerThread(create_app(engine, config))


def _load(url: str, golden: Path, max_tokens: int, out: Path) -> list[dict[str, Any]]:
    """`load` at concurrency 1 without warm-up (every request it sends is one it records, in order)."""
    result = runner.invoke(app, [
        "load", "--endpoint", url, "--prompts", str(golden), "--concurrency", "1", "--max-tokens",
        str(max_tokens), "--temperature", "0", "--warmup", "0", "--warmup-per-level", "0", "--log", str(out),
        "--json", str(out.with_suffix(".json")), "--quiet",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return [json.loads(x) for x in out.read_text("utf-8").splitlines()]


def _replay(target: Path, log: Path, specs: list[str], out: Path) -> Replayed:
    args = ["replay", "--from", str(log), "--target", str(target), "--k", str(K), "--json",
            str(out / "replay.json"), "--csv", str(out / "replay.csv"), "--no-store", "--quiet"]  # fmt: skip
    for spec in specs:
        args += ["--method", spec]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "replay.json").read_text("utf-8"))
    assert data["replay"]["exact"] is True
    rows: dict[str, list[Figures]] = defaultdict(list)
    with (out / "replay.csv").open(encoding="utf-8", newline="") as fh:
        for r in csv.DictReader(fh):
            rows[r["draft"]].append((int(r["accepted_tokens"]), int(r["drafted_tokens"]), int(r["steps"])))
    totals = {
        c["draft"]: (c["summary"]["accepted_tokens"], c["summary"]["drafted_tokens"], c["summary"]["steps"])
        for c in data["candidates"]
    }
    past_end = {c["draft"]: data["replay"]["past_end"][f"{c['draft']}@k={K}"] for c in data["candidates"]}
    return Replayed(dict(rows), totals, past_end)


def _bench(
    target: Path, golden: Path, specs: list[str], max_tokens: int, out: Path
) -> tuple[dict[str, list[Figures]], dict[str, Figures]]:
    """`bench --draft …` greedily: per label, the per-request figures (golden-set order) and the totals."""
    args = ["bench", "--target", str(target), "--prompts", str(golden), "--k", str(K), "--max-tokens",
            str(max_tokens), "--temperature", "0", "--cost-repeats", "1", "--json", str(out / "b.json"),
            "--log", str(out / "b.jsonl"), "--no-store", "--quiet"]  # fmt: skip
    for spec in specs:
        args += ["--draft", spec]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (out / "b.jsonl").read_text("utf-8").splitlines()]
    order = [json.loads(x)["id"] for x in golden.read_text("utf-8").splitlines()]
    per_request, totals = {}, {}
    for cand in json.loads((out / "b.json").read_text("utf-8"))["candidates"]:
        label = cand["draft"]
        mine = {x["id"]: x for x in lines if x["run"] == f"{label}@k={K}"}
        assert sorted(mine) == sorted(order), label
        assert all(mine[i]["matches_baseline"] is True for i in order), label  # greedy: the same outputs
        per_request[label] = [_figures(mine[i]) for i in order]
        s = cand["summary"]
        totals[label] = (s["accepted_tokens"], s["drafted_tokens"], s["steps"])
        assert totals[label] == tuple(sum(x[j] for x in per_request[label]) for j in range(3)), label
    assert set(per_request) == {_label(s) for s in specs}
    return per_request, totals


def _figures(line: dict[str, Any]) -> Figures:
    return int(line["accepted_tokens"]), int(line["drafted_tokens"]), int(line["steps"])


def _assert_equal(method: str, live: list[Figures], replay: list[Figures], past_end: int) -> None:
    """Equal request by request; a request whose acceptance differs is explained by past-end steps:
    drafted and steps equal, replay's acceptance short by at most k − 1 per such step, in all and in at
    most ``past_end`` requests."""
    assert len(live) == len(replay), method
    for i, (a, b) in enumerate(zip(live, replay, strict=True)):
        assert a[1:] == b[1:], (method, i, a, b)
        assert a[0] >= b[0], (method, i, a, b)
    short = [a[0] - b[0] for a, b in zip(live, replay, strict=True)]
    assert sum(short) <= (K - 1) * past_end and sum(1 for x in short if x) <= past_end, (method, short)
    if past_end == 0:
        assert live == replay, method
    assert sum(x[1] for x in live) > 0, f"{method} drafted nothing: the comparison would prove nothing"


# ------------------------------------------------------------------------------------ the tiny target


@pytest.fixture(scope="module")
def methods(tiny: Any) -> dict[str, str]:
    """Every deterministic method on the tiny target, by label (the EAGLE head: the bundled test below)."""
    return {_label(spec): spec for spec in [*MODEL_FREE, str(tiny.draft), "layers:n=2"]}


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _golden(tmp_path_factory.mktemp("golden"), PROMPTS)


@pytest.fixture(scope="module")
def served(tiny: Any, golden: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The baseline server's log of the golden set, sent by `load`."""
    folder = tmp_path_factory.mktemp("served")
    log = folder / "serve.jsonl"
    with _serve(tiny.target, None, 0, log) as server:
        _load(server.url, golden, MAX_TOKENS, folder / "load.jsonl")
    return log


@pytest.fixture(scope="module")
def replayed(
    tiny: Any, served: Path, methods: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Replayed:
    out = _replay(tiny.target, served, list(methods.values()), tmp_path_factory.mktemp("replay"))
    assert set(out.rows) == set(methods)
    assert all(len(rows) == len(PROMPTS) for rows in out.rows.values())
    return out


def test_replay_equals_bench(
    tiny: Any, golden: Path, methods: dict[str, str], replayed: Replayed, tmp_path: Path
) -> None:
    per_request, totals = _bench(tiny.target, golden, list(methods.values()), MAX_TOKENS, tmp_path)
    for label, live in per_request.items():
        _assert_equal(label, live, replayed.rows[label], replayed.past_end[label])
        if replayed.past_end[label] == 0:
            assert totals[label] == replayed.totals[label], label


@pytest.mark.parametrize("label", [
    "suffix", "draft",
    pytest.param("ngram:min=1,max=3", marks=pytest.mark.slow),
    pytest.param("ngram-simple:n=1,m=4", marks=pytest.mark.slow),
    pytest.param("ngram-map-k:n=1,m=3", marks=pytest.mark.slow),
    pytest.param("layers:n=2", marks=pytest.mark.slow),
])  # fmt: skip
def test_replay_equals_load_against_serve(
    tiny: Any, golden: Path, served: Path, methods: dict[str, str], replayed: Replayed, label: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """`serve --draft M --k 3` (max batch 1) under `load`: load's per-request figures (from the server's
    per-request reports) and the server's own log lines equal replay's."""
    log = tmp_path / "serve.jsonl"
    with _serve(tiny.target, methods[label], K, log) as server:
        loaded = _load(server.url, golden, MAX_TOKENS, tmp_path / "load.jsonl")
    assert [x["id"] for x in loaded] == [p["id"] for p in PROMPTS]
    live = [_figures(x) for x in loaded]
    logged = [json.loads(x) for x in log.read_text("utf-8").splitlines()]
    baseline = [json.loads(x) for x in served.read_text("utf-8").splitlines()]
    assert [x["output_ids"] for x in logged] == [x["output_ids"] for x in baseline]  # greedy
    assert [_figures(x) for x in logged] == live  # the server's log says what its reports said
    _assert_equal(label, live, replayed.rows[label], replayed.past_end[label])


# ----------------------------------------------------------------------- an EAGLE head (bundled models)


@pytest.mark.slow
def test_eagle_head_replay_equals_bench_and_load(tmp_path: Path) -> None:
    """The bundled target with its EAGLE head (``eagle-legal``): `serve --draft eagle:head=… --k 3` under
    `load`, that server's own log replayed with the head (the target's forwards feeding it its hidden
    states, docs/replay.md), and `bench` with the head on the same prompts: equal request by request."""
    target, spec = bundled_model("target"), f"eagle:head={bundled_model('eagle-legal')}"
    legal = resolve_bundled("legal").read_text("utf-8")
    prompts = [{"id": f"legal-{i}", "category": "legal", "prompt": json.loads(line)["prompt"]}
               for i, line in enumerate(legal.splitlines()[:3])]  # fmt: skip
    golden = _golden(tmp_path, prompts)
    log = tmp_path / "serve.jsonl"
    with _serve(target, spec, K, log) as server:
        loaded = [_figures(x) for x in _load(server.url, golden, 16, tmp_path / "load.jsonl")]
    assert [_figures(json.loads(x)) for x in log.read_text("utf-8").splitlines()] == loaded
    replayed = _replay(target, log, [spec], tmp_path)
    label = _label(spec)
    per_request, _ = _bench(target, golden, [spec], 16, tmp_path)
    for live in (loaded, per_request[label]):
        _assert_equal(label, live, replayed.rows[label], replayed.past_end[label])
    accepted, drafted, _ = replayed.totals[label]
    assert accepted > drafted / 4, "the head drafts what the target says often enough to prove something"
