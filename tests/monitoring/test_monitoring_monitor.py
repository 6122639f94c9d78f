"""The monitor against fake engines: windows, alerts (console, JSONL, webhook), SQLite history, exporter."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from specmeter.monitoring.alerts import AlertRules, ConsoleSink, JsonlSink, WebhookSink
from specmeter.monitoring.exporter import EXPORTED_METRICS, MonitorExporter
from specmeter.monitoring.monitor import Monitor, MonitorConfig, sglang_server_info_tau
from specmeter.monitoring.promtext import parse_metrics
from specmeter.monitoring.store import HistoryStore
from specmeter.monitoring.windows import Window
from specmeter.server.hosting import ServerThread


class Engine:
    """A fake vLLM whose counters advance by a chosen (steps, drafted, accepted) at every scrape."""

    def __init__(self) -> None:
        self.totals = [0, 0, 0, 0, 0, 0, 0]  # S, D, A, pos0..pos3
        self.plan: list[tuple[int, int, int, list[int]] | str] = []
        self.up = True

    def text(self) -> str:
        if self.plan:
            step = self.plan.pop(0)
            if step == "restart":
                self.totals = [0] * 7
            elif isinstance(step, tuple):
                s, d, a, pos = step
                self.totals = [
                    self.totals[0] + s,
                    self.totals[1] + d,
                    self.totals[2] + a,
                    *(t + p for t, p in zip(self.totals[3:], pos, strict=True)),
                ]
        s, d, a, *pos = self.totals
        lab = 'engine="0",model_name="m"'
        lines = [
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {s}",
            f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {d}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {a}",
            f"vllm:generation_tokens_total{{{lab}}} {a + s}",
        ]
        lines += [
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{i}"}} {n}'
            for i, n in enumerate(pos)
        ]
        return "\n".join(lines) + "\n"


def _app(engine: Engine, received: list[dict[str, Any]]) -> Starlette:
    async def metrics(request: Request) -> Response:
        if not engine.up:
            return PlainTextResponse("down", status_code=503)
        return PlainTextResponse(engine.text())

    async def hook(request: Request) -> Response:
        received.append(await request.json())
        return Response(status_code=204)

    return Starlette(routes=[Route("/metrics", metrics), Route("/hook", hook, methods=["POST"])])


@pytest.fixture
def engine() -> Iterator[tuple[Engine, str, list[dict[str, Any]]]]:
    e, received = Engine(), []
    with ServerThread(_app(e, received)) as server:
        yield e, server.url, received


GOOD = (10, 40, 32, [10, 9, 7, 6])  # α = 0.8, τ = 4.2
BAD = (10, 40, 12, [6, 3, 2, 1])  # α = 0.3, τ = 2.2


def test_windows_alerts_history_and_exporter(
    engine: tuple[Engine, str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    fake, url, received = engine
    fake.plan = [GOOD, GOOD, GOOD, BAD, BAD, "restart", BAD, GOOD, GOOD]
    store, exporter = HistoryStore(tmp_path / "h.sqlite"), MonitorExporter()
    printed: list[str] = []

    async def go() -> Monitor:
        async with httpx.AsyncClient() as client:
            sinks = [
                ConsoleSink(printed.append),
                JsonlSink(tmp_path / "alerts.jsonl"),
                WebhookSink(url + "/hook", client, on_error=printed.append),
            ]
            monitor = Monitor(
                MonitorConfig([url + "/metrics"], interval=0.01),
                AlertRules(alpha_threshold=0.5, alpha_windows=2, tau_drop_pct=30.0),
                sinks,
                store,
                exporter,
            )
            for _ in range(9):
                await monitor.tick(client)
            sinks[1].close()  # type: ignore[attr-defined]
            return monitor

    monitor = asyncio.run(go())
    windows = store.windows()
    assert len(windows) == 8  # the first scrape only opens the first window
    alphas = [w["acceptance_rate"] for w in windows]
    # The restart window: counters went back to zero, so the window saw no drafts (α undefined, not 0).
    assert alphas[4] is None and windows[4]["steps"] == 0 and windows[4]["resets"] is not None
    assert alphas[:4] + alphas[5:] == pytest.approx([0.8, 0.8, 0.3, 0.3, 0.3, 0.8, 0.8])
    assert windows[5]["steps"] == 10  # after the restart: post-reset values are the increase
    assert json.loads(windows[0]["per_position"])[0]["cumulative"] == pytest.approx(1.0)

    events = [(a["rule"], a["state"]) for a in store.alerts()]
    # τ fell from 4.2 to 2.2 (−48 %) at the first bad window; α needed two bad windows in a row.
    assert events == [
        ("tau_drop", "firing"),
        ("alpha_low", "firing"),
        ("alpha_low", "resolved"),
        ("tau_drop", "resolved"),
    ]
    lines = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert [(x["rule"], x["state"]) for x in lines] == events
    assert [(x["rule"], x["state"]) for x in received] == events  # the webhook got every transition
    assert sum("ALERT alpha_low" in p for p in printed) == 1

    text = exporter.text()
    families = {s.name for s in parse_metrics(text).samples}
    assert "specmeter_acceptance_rate" in families and "specmeter_alerts_total" in families
    exposed = {n[: -len("_created")] + "_total" if n.endswith("_created") else n for n in families}
    assert exposed <= set(EXPORTED_METRICS)
    last = {s.labels: s.value for s in parse_metrics(text).samples if s.name == "specmeter_acceptance_rate"}
    assert list(last.values()) == pytest.approx([0.8])
    assert monitor.latest()[url + "/metrics"]["acceptance_rate"] == pytest.approx(0.8)


def test_failed_scrape_is_an_error_window_and_exported(
    engine: tuple[Engine, str, list[dict[str, Any]]],
) -> None:
    fake, url, _ = engine
    fake.plan = [GOOD, GOOD, GOOD]
    exporter = MonitorExporter()
    seen: list[Window] = []

    async def go() -> None:
        async with httpx.AsyncClient() as client:
            monitor = Monitor(
                MonitorConfig([url + "/metrics"]), exporter=exporter, on_window=lambda w, t: seen.append(w)
            )
            await monitor.tick(client)
            fake.up = False
            await monitor.tick(client)
            fake.up = True
            await monitor.tick(client)

    asyncio.run(go())
    assert seen[0].error is not None and "503" in seen[0].error
    assert seen[1].error is None and seen[1].alpha == pytest.approx(
        0.8
    )  # spans the gap since the last good scrape
    errors = [s for s in parse_metrics(exporter.text()).samples if s.name == "specmeter_scrape_errors_total"]
    assert errors[0].value == 1


def test_run_once_and_exporter_over_http(engine: tuple[Engine, str, list[dict[str, Any]]]) -> None:
    fake, url, _ = engine
    fake.plan = [GOOD, BAD]
    exporter = MonitorExporter()
    port = exporter.serve(0)
    try:
        monitor = Monitor(MonitorConfig([url + "/metrics"], interval=0.05, once=True), exporter=exporter)
        asyncio.run(monitor.run())
        body = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    finally:
        exporter.close()
    assert [len(t.history) for t in monitor.trackers.values()] == [1]
    assert 'specmeter_acceptance_rate{target="' in body


def test_sglang_gauges_and_server_info() -> None:
    async def metrics(request: Request) -> Response:
        return PlainTextResponse(
            'sglang:spec_accept_length{model_name="m"} 2.5\nsglang:generation_tokens_total 7\n'
        )

    async def info(request: Request) -> Response:
        states = [{"avg_spec_accept_length": 2.0}, {"avg_spec_accept_length": 3.0}]
        return Response(json.dumps({"internal_states": states}), media_type="application/json")

    app = Starlette(routes=[Route("/metrics", metrics), Route("/get_server_info", info)])
    seen: list[Window] = []
    with ServerThread(app) as server:

        async def go() -> float | None:
            async with httpx.AsyncClient() as client:
                monitor = Monitor(
                    MonitorConfig([server.url + "/metrics"]), on_window=lambda w, t: seen.append(w)
                )
                await monitor.tick(client)
                await monitor.tick(client)
                return await sglang_server_info_tau(client, server.url + "/metrics")

        assert asyncio.run(go()) == pytest.approx(2.5)  # mean over data-parallel ranks
    assert seen[0].kind == "sglang" and seen[0].acceptance is not None
    assert seen[0].acceptance.source == "gauges"
    assert seen[0].tau == pytest.approx(2.5)  # the gauge wins over server info when both exist
    assert seen[0].alpha is None  # an SGLang without spec_accept_rate cannot give α


def test_live_view_renders_every_target() -> None:
    from rich.console import Console

    from specmeter.monitoring.acceptance import ServerAcceptance
    from specmeter.monitoring.view_live import render, window_line
    from specmeter.monitoring.windows import WindowTracker

    good, waiting = WindowTracker("http://a/metrics", "vllm"), WindowTracker("http://b/metrics")
    acc = ServerAcceptance(
        "vllm",
        "counters",
        steps=5,
        acceptance_rate=0.42,
        acceptance_length=2.1,
        per_position=[{"cumulative": 0.6}, {"cumulative": 0.3}],
        tokens_per_s=12.0,
    )
    good.history.append(Window("http://a/metrics", "vllm", 0.0, 15.0, acc))
    console = Console(width=140, record=True)
    console.print(render({"a": good, "b": waiting}, AlertRules(), 0.5))
    text = console.export_text()
    assert "0.420" in text and "0.60 0.30" in text and "waiting for a second scrape" in text
    assert "α 0.420" in window_line(good.history[0])


def test_windows_carry_the_servers_queue_at_their_end() -> None:
    from rich.console import Console

    from specmeter.monitoring.view_live import render, window_line
    from specmeter.monitoring.windows import WindowTracker

    def text(running: int, waiting: int, drafts: int) -> str:
        return (
            f'vllm:spec_decode_num_drafts_total{{engine="0"}} {drafts}\n'
            f'vllm:spec_decode_num_draft_tokens_total{{engine="0"}} {drafts * 3}\n'
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="0"}} {drafts * 2}\n'
            f'vllm:num_requests_running{{engine="0"}} {running}\n'
            f'vllm:num_requests_waiting{{engine="0"}} {waiting}\n'
        )

    tracker = WindowTracker("http://a/metrics")
    assert tracker.observe(parse_metrics(text(1, 0, 10))) is None
    window = tracker.observe(parse_metrics(text(7, 2, 20)))
    assert window is not None and window.queue == {"running": 7.0, "waiting": 2.0}  # the end's, not 1/0
    assert window.as_dict()["queue"] == {"at": "window_end", "running": 7.0, "waiting": 2.0}
    assert "running/waiting 7/2" in window_line(window)
    console = Console(width=160, record=True)
    console.print(render({"a": tracker}, AlertRules(), 0.5))
    shown = console.export_text()
    assert "run/wait" in shown and "7/2" in shown
    # A server that exports no queue gauges: None, and the line says nothing about it.
    plain = WindowTracker("http://b/metrics")
    plain.observe(parse_metrics(vllm_text := 'vllm:spec_decode_num_drafts_total{engine="0"} 1\n'))
    bare = plain.observe(parse_metrics(vllm_text))
    assert bare is not None and bare.queue is None and bare.as_dict()["queue"] is None
    assert "running/waiting" not in window_line(bare)
