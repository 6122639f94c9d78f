"""A real Prometheus (Debian's package, `make test-prometheus`) scraping two `specmeter serve` instances.

Checks: `promtool check rules` accepts the shipped rules and Prometheus loads them; `monitor --prometheus`
computes, through `query_range` + `increase()`, the α and τ that the servers' own counters give — per
instance, per model and for the fleet. Skipped when the `prometheus` and `promtool` binaries are absent.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.monitoring.adapters import ACCEPTED, DRAFT_TOKENS, DRAFTS, read_counters
from specmeter.monitoring.promtext import parse_metrics
from specmeter.server.app import create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine

MISSING = [name for name in ("prometheus", "promtool") if shutil.which(name) is None]
if MISSING and os.environ.get("SPECMETER_REQUIRE_REAL"):
    # make test-prometheus sets SPECMETER_REQUIRE_REAL: there a missing binary is a failure, not a green skip.
    raise RuntimeError(f"{' and '.join(MISSING)} not on PATH (make prometheus-bin should have fetched them)")
pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        bool(MISSING), reason="needs Debian's prometheus package (make test-prometheus fetches it)"
    ),
]
RULES = resources.files("specmeter") / "assets" / "prometheus" / "rules.yml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def counters(url: str) -> dict[str, float]:
    reading = read_counters(parse_metrics(httpx.get(url + "/metrics", timeout=10).text))
    return {name: sum(series.values()) for name, series in reading.counters.items()}


def instant(prom: str, query: str) -> list[dict[str, Any]]:
    body = httpx.get(prom + "/api/v1/query", params={"query": query}, timeout=10).json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_promtool_accepts_the_shipped_rules() -> None:
    done = subprocess.run(
        ["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.fixture(scope="module")
def fleet(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    a = LocalEngine.load(tiny.target, tiny.draft, 3, device="cpu", model_name="tiny-a")
    b = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu", model_name="tiny-b")
    work = tmp_path_factory.mktemp("prometheus")
    with ServerThread(create_app(a)) as sa, ServerThread(create_app(b)) as sb:
        port = free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {
                    "job_name": "specmeter",
                    "static_configs": [{"targets": [f"127.0.0.1:{sa.port}", f"127.0.0.1:{sb.port}"]}],
                }
            ],
        }
        (work / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
        process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(work / "prometheus.log", "w"),  # noqa: SIM115 (closed with the process)
            start_new_session=True,
        )
        prom = f"http://127.0.0.1:{port}"
        try:
            wait_for(
                lambda: httpx.get(prom + "/-/ready", timeout=2).status_code == 200, "Prometheus to start"
            )
            wait_for(lambda: len(instant(prom, 'up{job="specmeter"} == 1')) == 2, "both targets up")
            up_at = time.time()  # both targets have at least one sample (all counters at 0) from here
            for i, text in enumerate(["The lighthouse keeper", "The parties agree that", "Once upon a time",
                                      "Tell me about buttons", "This agreement shall be"]):  # fmt: skip
                for server in (sa, sb):
                    body = {"prompt": text, "max_tokens": 24, "temperature": 0, "seed": i}
                    assert (
                        httpx.post(server.url + "/v1/completions", json=body, timeout=60).status_code == 200
                    )
            own = {"a": counters(sa.url), "b": counters(sb.url)}

            def scraped() -> bool:
                rows = instant(prom, "sum by (instance) (vllm:spec_decode_num_draft_tokens_total)")
                values = sorted(float(r["value"][1]) for r in rows)
                return values == sorted([own["a"][DRAFT_TOKENS], own["b"][DRAFT_TOKENS]])

            wait_for(scraped, "Prometheus to scrape the final counters")
            time.sleep(2.5)  # a few more scrapes after the last change
            yield {"prom": prom, "own": own, "a": sa, "b": sb, "work": work, "up_at": up_at}
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            assert process.poll() is not None  # never left running


def monitor_windows(prom: str, group_by: str, tmp: Path) -> list[dict[str, Any]]:
    out = tmp / f"{group_by}.json"
    args = ["monitor", "--prometheus", prom, "--group-by", group_by, "--interval", "10m", "--once"]
    result = CliRunner().invoke(
        app, [*args, "--json", str(out), "--history", str(tmp / f"{group_by}.sqlite")]
    )
    assert result.exit_code == 0, result.output
    windows: list[dict[str, Any]] = json.loads(out.read_text("utf-8"))["windows"]
    return windows


def close(via: float, own: float) -> bool:
    # increase() extrapolates every counter of one target by the same factor: it cancels in the ratio.
    return abs(via - own) <= 1e-9 * own


def test_alpha_through_prometheus_equals_the_servers_counters(fleet: dict[str, Any], tmp_path: Path) -> None:
    own = fleet["own"]
    by_instance = {w["target"]: w for w in monitor_windows(fleet["prom"], "instance", tmp_path)}
    for name in ("a", "b"):
        w = by_instance[f"instance=127.0.0.1:{fleet[name].port}"]
        c = own[name]
        alpha, tau = c[ACCEPTED] / c[DRAFT_TOKENS], 1 + c[ACCEPTED] / c[DRAFTS]
        assert close(w["acceptance_rate"], alpha), (w, c)
        assert close(w["acceptance_length"], tau), (w, c)
        assert w["per_position"] and w["per_position"][0]["cumulative"] > 0
        print(f"\n{w['target']}: α via Prometheus {w['acceptance_rate']:.9f}, own counters {alpha:.9f}")
    by_model = {w["target"]: w for w in monitor_windows(fleet["prom"], "model_name", tmp_path)}
    assert set(by_model) == {"model_name=tiny-a", "model_name=tiny-b"}
    assert by_model["model_name=tiny-a"]["k"] == 3 and by_model["model_name=tiny-b"]["k"] == 4
    (fleet_window,) = monitor_windows(fleet["prom"], "job", tmp_path)
    span = time.time() - fleet["up_at"]
    total_a = own["a"][ACCEPTED] + own["b"][ACCEPTED]
    total_d = own["a"][DRAFT_TOKENS] + own["b"][DRAFT_TOKENS]
    # The fleet sums two targets, each scaled by its own extrapolation factor f = 1 + (time from its last
    # sample to the window's end) / (its sampled span), i.e. within 1.1 scrape intervals / span of 1: the
    # fleet α is the D-weighted mean of the two servers' α with weights moved by at most
    # w_a·w_b·|f_a − f_b| ≤ 0.25 · 1.1 s / span. It may differ from the counters' ratio by that much times
    # |α_a − α_b| (the servers differ: k = 3 and k = 4), and by no more.
    alphas = [own[n][ACCEPTED] / own[n][DRAFT_TOKENS] for n in ("a", "b")]
    bound = abs(alphas[0] - alphas[1]) * 0.25 * 1.1 / (span - 1.1)
    assert abs(fleet_window["acceptance_rate"] - total_a / total_d) <= bound + 1e-12, (fleet_window, bound)
    print(  # the figure for the closing note
        f"\nα via Prometheus (job) {fleet_window['acceptance_rate']:.6f}, "
        f"from the servers' counters {total_a / total_d:.6f} ({total_a:.0f}/{total_d:.0f}; bound {bound:.4f})"
    )


def test_prometheus_loaded_and_evaluates_the_shipped_rules(fleet: dict[str, Any]) -> None:
    groups = httpx.get(fleet["prom"] + "/api/v1/rules", timeout=10).json()["data"]["groups"]
    assert {g["name"] for g in groups} == {
        "specmeter-speculative-decoding-recording",
        "specmeter-speculative-decoding-alerts",
    }
    assert all(r.get("health") != "err" for g in groups for r in g["rules"]), groups
