"""``serve --draft ngram`` / ``suffix`` (a model-free method, no draft model) and ``monitor`` reading it
(issue 26, items 4 and 7).

The server runs the method's proposer for every request, greedy output stays the target's own, its
vLLM-named counters count only the steps that drafted (as vLLM does for n-gram lookups that find nothing),
and the monitor's windows — from /metrics and from the request log — agree with the responses' own
reports, including windows in which the method proposed nothing at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.methods import parse_method
from specmeter.monitoring.adapters import ACCEPTED, DRAFT_TOKENS, DRAFTS, read_counters
from specmeter.monitoring.promtext import parse_metrics
from specmeter.monitoring.windows import WindowTracker
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine

runner = CliRunner()

# On the session's tiny target (greedy, 40 tokens): outputs that loop, which a lookup copies, and one that
# does not (n-gram drafts nothing there).
REPEATING = "To reset the device, hold the power button. To reset the device, hold the"
LOOPING = "The Supplier shall indemnify the Customer against"
PLAIN = "Preheat the oven"


@pytest.fixture(scope="module", params=["ngram:min=2,max=3", "suffix"])
def served(
    tiny: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict[str, Any]]:
    log = tmp_path_factory.mktemp("serve") / "requests.jsonl"
    spec = LocalEngine.load(tiny.target, parse_method(request.param), 3, device="cpu")
    base = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with (
        ServerThread(create_app(spec, ServeConfig(log_path=log, max_batch=2))) as s,
        ServerThread(create_app(base, ServeConfig(max_batch=1))) as b,
    ):
        yield {"spec": s.url, "base": b.url, "log": log, "engine": spec, "method": request.param}


def _complete(url: str, prompt: str, max_tokens: int = 40) -> dict[str, Any]:
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    response = httpx.post(url + "/v1/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _scrape(url: str) -> Any:
    return parse_metrics(httpx.get(url + "/metrics").text)


def test_the_server_runs_the_method_with_the_targets_greedy_output(served: dict[str, Any]) -> None:
    engine = served["engine"]
    assert engine.draft_name == parse_method(served["method"]).label and engine.k == 3
    spec, base = _complete(served["spec"], REPEATING), _complete(served["base"], REPEATING)
    assert spec["choices"][0]["text"] == base["choices"][0]["text"]
    report = spec["metrics"]["speculative_decoding"]
    assert report["num_accepted_draft_tokens"] <= report["num_draft_tokens"] <= 3 * report["num_spec_steps"]


def test_monitor_windows_from_metrics_agree_with_the_responses(served: dict[str, Any]) -> None:
    url = served["spec"]
    tracker = WindowTracker(url)
    assert tracker.observe(_scrape(url)) is None
    reports = [_complete(url, p)["metrics"]["speculative_decoding"] for p in (REPEATING, PLAIN, LOOPING)]
    window = tracker.observe(_scrape(url))
    assert window is not None and window.acceptance is not None and window.error is None
    a = window.acceptance
    drafted = sum(r["num_draft_tokens"] for r in reports)
    accepted = sum(r["num_accepted_draft_tokens"] for r in reports)
    assert a.kind == "vllm" and a.k == 3
    assert (a.steps, a.drafted_tokens, a.accepted_tokens) == (
        sum(r["num_spec_steps"] for r in reports), drafted, accepted,
    )  # fmt: skip
    assert drafted > 0 and a.acceptance_rate == pytest.approx(accepted / drafted)
    # A window in which nothing was served: no drafts, no figures, no error.
    idle = tracker.observe(_scrape(url))
    assert idle is not None and idle.acceptance is not None and idle.error is None
    assert idle.acceptance.steps == 0 and idle.acceptance.acceptance_rate is None


def test_monitor_once_and_requests_mode_read_a_model_free_server(
    served: dict[str, Any], tmp_path: Path
) -> None:
    # Requests that find nothing to copy: the method proposes nothing, the counters stay at their last value.
    _complete(served["spec"], PLAIN, max_tokens=4)
    once = runner.invoke(
        app,
        ["monitor", "--scrape", served["spec"], "--interval", "50ms", "--once", "--history",
         str(tmp_path / "h.sqlite")],
    )  # fmt: skip
    assert once.exit_code == 0, once.output
    assert "Traceback" not in once.output
    out = tmp_path / "windows.json"
    logged = runner.invoke(
        app,
        ["monitor", "--requests", str(served["log"]), "--once", "--interval", "1d", "--json", str(out),
         "--history", str(tmp_path / "r.sqlite")],
    )  # fmt: skip
    assert logged.exit_code == 0, logged.output
    windows = json.loads(out.read_text("utf-8"))["windows"]
    counters = read_counters(_scrape(served["spec"])).counters
    totals = {name: sum(series.values()) for name, series in counters.items()}
    assert sum(w["drafted_tokens"] for w in windows) == totals[DRAFT_TOKENS]
    assert sum(w["accepted_tokens"] for w in windows) == totals[ACCEPTED]
    assert sum(w["steps"] for w in windows) == totals[DRAFTS]
    rows = [json.loads(line) for line in served["log"].read_text("utf-8").splitlines()]
    assert {row["draft"] for row in rows} == {parse_method(served["method"]).label}
