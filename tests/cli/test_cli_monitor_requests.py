"""`monitor --requests` on `serve`'s own request log equals the server's counters, per domain and in total."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.monitoring.adapters import ACCEPTED, DRAFT_TOKENS, DRAFTS, read_counters
from specmeter.monitoring.promtext import parse_metrics
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine
from specmeter.workloads import load_workload

runner = CliRunner()


@pytest.fixture(scope="module")
def served(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    log = tmp_path_factory.mktemp("serve") / "requests.jsonl"
    engine = LocalEngine.load(tiny.target, tiny.draft, 3, device="cpu")
    with ServerThread(create_app(engine, ServeConfig(log_path=log, log_prompts=True))) as server:
        reports: dict[str, list[dict[str, Any]]] = defaultdict(list)
        prompts = [
            ("legal", "completions", "The parties agree that force majeure", None),
            ("legal", "chat", "Define the indemnity clause.", "acme"),
            ("general", "completions", "The lighthouse keeper had not seen a ship", None),
            ("general", "chat", "Tell me about buttons.", "acme"),
            ("legal", "completions", "This agreement shall be governed by", "acme"),
        ]
        for i, (domain, api, text, tenant) in enumerate(prompts):
            body: dict[str, Any] = {"max_tokens": 24, "temperature": 0.7 if i % 2 else 0, "seed": i}
            body["metadata"] = {"domain": domain, **({"tenant": tenant} if tenant else {})}
            if api == "chat":
                body["messages"] = [{"role": "user", "content": text}]
            else:
                body["prompt"] = text
            response = httpx.post(
                f"{server.url}/v1/{api.replace('chat', 'chat/completions')}", json=body, timeout=60
            )
            assert response.status_code == 200, response.text
            reports[domain].append(response.json()["metrics"]["speculative_decoding"])
        counters = read_counters(parse_metrics(httpx.get(server.url + "/metrics").text)).counters
        totals = {name: sum(series.values()) for name, series in counters.items()}
    yield {"log": log, "reports": reports, "counters": totals}


def test_requests_windows_equal_the_servers_counters(served: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "windows.json"
    result = runner.invoke(
        app,
        ["monitor", "--requests", str(served["log"]), "--once", "--interval", "1d", "--json", str(out),
         "--history", str(tmp_path / "h.sqlite")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    windows = json.loads(out.read_text("utf-8"))["windows"]
    per_domain: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for w in windows:
        for key in ("accepted_tokens", "drafted_tokens", "steps"):
            per_domain[w["domain"]][key] += w[key]
    # Per domain: the sums of the responses' own per-request reports.
    for domain, reports in served["reports"].items():
        assert per_domain[domain]["accepted_tokens"] == sum(r["num_accepted_draft_tokens"] for r in reports)
        assert per_domain[domain]["drafted_tokens"] == sum(r["num_draft_tokens"] for r in reports)
        assert per_domain[domain]["steps"] == sum(r["num_spec_steps"] for r in reports)
    # In total: the server's Prometheus counters, and hence its α.
    c = served["counters"]
    accepted = sum(d["accepted_tokens"] for d in per_domain.values())
    drafted = sum(d["drafted_tokens"] for d in per_domain.values())
    assert (accepted, drafted, sum(d["steps"] for d in per_domain.values())) == (
        c[ACCEPTED], c[DRAFT_TOKENS], c[DRAFTS],
    )  # fmt: skip
    assert accepted / drafted == c[ACCEPTED] / c[DRAFT_TOKENS]
    tenants = {(w["domain"], w["tenant"]) for w in windows}
    assert tenants == {("legal", None), ("legal", "acme"), ("general", None), ("general", "acme")}
    assert "legal" in result.stdout and "α" in result.stdout


def test_serve_log_prompts_feed_golden(served: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "golden.jsonl"
    result = runner.invoke(
        app, ["golden", "--from", str(served["log"]), "--category-field", "domain", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    workload = load_workload(out)
    assert {c: len(p) for c, p in workload.by_category().items()} == {"legal": 3, "general": 2}
    lines = [json.loads(line) for line in served["log"].read_text("utf-8").splitlines()]
    assert {line["temperature"] for line in lines} == {0.0, 0.7}
    assert all(isinstance(line["time"], float) for line in lines)


def test_requests_option_mistakes(tmp_path: Path) -> None:
    log = tmp_path / "r.jsonl"
    log.write_text('{"note": 1}\n', encoding="utf-8")
    assert_usage_error(runner.invoke(app, ["monitor"]), "give --scrape URL")
    assert_usage_error(
        runner.invoke(app, ["monitor", "--requests", str(log), "--scrape", "http://x"]), "one of them"
    )
    assert_usage_error(runner.invoke(app, ["monitor", "--requests", str(log), "--fields", "x=y"]), "--fields")
    assert_usage_error(runner.invoke(app, ["monitor", "--requests", str(tmp_path / "no")]), "does not exist")
    assert_usage_error(
        runner.invoke(app, ["monitor", "--requests", str(log), "--json", str(log), "--once"]),
        "never overwrites an input",
    )
    result = runner.invoke(
        app, ["monitor", "--requests", str(log), "--once", "--history", str(tmp_path / "h")]
    )
    assert result.exit_code == 1
    assert f"{log}:1: no speculative-decoding counts found" in result.stderr
    assert "no usable request" in result.stderr
