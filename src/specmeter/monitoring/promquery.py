"""``monitor --prometheus URL``: the monitor's windows from Prometheus' HTTP API instead of scraping engines.

A fleet of replicas is already scraped by Prometheus (or a compatible store: Thanos, Mimir, VictoriaMetrics
all serve ``/api/v1/query_range``); scraping every pod again from specmeter does not scale. For each window
of length W ending at t, Prometheus is asked for the counters' increases over ``[t − W, t]``, summed by a
label (``--group-by``: ``model_name``, ``pod``, ``instance``, a domain label):

    sum by (G) (increase(vllm:spec_decode_num_drafts_total{SEL}[W]))                  → S
    sum by (G) (increase(vllm:spec_decode_num_draft_tokens_total{SEL}[W]))            → D
    sum by (G) (increase(vllm:spec_decode_num_accepted_tokens_total{SEL}[W]))         → A
    sum by (G, position) (increase(vllm:spec_decode_num_accepted_tokens_per_pos_total{SEL}[W]))
    sum by (G) (increase(vllm:generation_tokens_total{SEL}[W]))

one ``query_range`` per counter with ``step = W``, so consecutive points are consecutive, non-overlapping
windows. The increases become a :class:`~specmeter.monitoring.adapters.CounterDelta` and go through
``acceptance_from_delta`` — α, τ, β, per-position rates and throughput exactly as from scrapes — and then
through the same alert rules, history store and exporter (target ``G=value``).

``increase()`` handles counter resets per series (what the scrape monitor does itself) and extrapolates each
series to the window's edges; the extrapolation scales every counter of one target by the same factor (all
its series share scrape times), so α and τ per target are exactly the counters' own (they are formed before
the counts are rounded for display); a sum over targets with different scrape phases weights each target
by its own factor, so a fleet's α can differ from the counters' ratio by a little (for two engines
≤ 0.25 · |α_a − α_b| · scrape interval / span: ~5e-3 in the test's 20-second span, less over longer
windows).

With ``--server llamacpp`` (``kind="llamacpp"``; never detected here, the default is vLLM's names) the
queries name llama.cpp's counters from ``adapters.counter_names``: ``llamacpp:spec_decode_num_drafts_total``
(S), ``…_num_draft_tokens_total`` (D), ``…_num_accepted_tokens_total`` (A) and
``llamacpp:tokens_predicted_total``, and its per-position counter
``llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position}`` (``LLAMACPP_PER_POS``, labelled like
vLLM's), so α, τ, per-position rates and tokens/s come out as for vLLM. The fork builds'
``llamacpp:n_drafted_*`` names, which a direct scrape still reads, are not asked for.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import httpx

from specmeter import jsonsafe
from specmeter.metrics.acceptance import AcceptanceCounts, acceptance_length, acceptance_rate
from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_delta
from specmeter.monitoring.adapters import (
    ACCEPTED,
    DRAFT_TOKENS,
    DRAFTS,
    GENERATION_TOKENS,
    LLAMACPP_PER_POS,
    VLLM_PER_POS,
    CounterDelta,
    ServerKind,
    counter_names,
    position_key,
)
from specmeter.monitoring.monitor import Monitor
from specmeter.monitoring.requestlog import TIME_MAX, TIME_MIN
from specmeter.monitoring.windows import Window, WindowTracker

__all__ = ["PrometheusError", "PrometheusMonitor", "PrometheusSource", "query_range"]

_COUNTERS = (DRAFTS, DRAFT_TOKENS, ACCEPTED, GENERATION_TOKENS)
_PER_POS = "per_position"


class PrometheusError(RuntimeError):
    """Prometheus could not be asked, or answered with an error (one line)."""


async def query_range(
    client: httpx.AsyncClient,
    url: str,
    query: str,
    start: float,
    end: float,
    step: float,
    timeout: float = 30.0,
) -> list[dict[str, Any]]:
    """``/api/v1/query_range`` → its ``result``, a matrix: ``[{"metric": {...}, "values": [[t, "v"]]}]``."""
    endpoint = url.rstrip("/") + "/api/v1/query_range"
    params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    try:
        response = await client.get(endpoint, params=params, timeout=timeout)
    except httpx.HTTPError as e:
        raise PrometheusError(f"cannot reach {endpoint}: {e or type(e).__name__}") from None
    try:
        body = jsonsafe.loads(response.content)
    except ValueError as e:  # not JSON, not UTF-8, or JSON past jsonsafe's limits (nested 100000 deep)
        reason = f" ({e.msg})" if isinstance(e, jsonsafe.JSONLimitError) else ""
        raise PrometheusError(
            f"{endpoint} answered HTTP {response.status_code} without JSON{reason}"
        ) from None
    if not isinstance(body, dict):
        raise PrometheusError(
            f"{endpoint} answered HTTP {response.status_code} with JSON that is not an object"
        )
    if response.status_code != 200 or body.get("status") != "success":
        raise PrometheusError(
            f"{endpoint}: {body.get('errorType', 'error')}: {body.get('error', response.status_code)}"
        )
    data = body.get("data") or {}
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        got = data.get("resultType") if isinstance(data, dict) else data
        raise PrometheusError(f"{endpoint}: expected a matrix, got {_shown(got)}")
    return _matrix(data.get("result") or [], endpoint)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _matrix(result: object, endpoint: str) -> list[dict[str, Any]]:
    """The matrix checked field by field: a server that answers ``"metric": "x"``, a value that is not a
    number or a time outside 1970–3000 is a :class:`PrometheusError` naming the field, not a traceback."""
    if not isinstance(result, list):
        raise PrometheusError(f"{endpoint}: data.result: expected a list, got {_shown(result)}")
    out = []
    for i, series in enumerate(result):
        where = f"{endpoint}: data.result[{i}]"
        if not isinstance(series, dict):
            raise PrometheusError(f"{where}: expected an object, got {_shown(series)}")
        metric, values = series.get("metric") or {}, series.get("values") or []
        if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
            raise PrometheusError(f"{where}.metric: expected an object of label values, got {_shown(metric)}")
        if not isinstance(values, list):
            raise PrometheusError(f"{where}.values: expected a list of [time, value], got {_shown(values)}")
        points = []
        for j, point in enumerate(values):
            try:
                t, value = point
                t, number = float(t), float(value)
            except (TypeError, ValueError):
                raise PrometheusError(
                    f'{where}.values[{j}]: expected [time, "value"], got {_shown(point)}'
                ) from None
            if not TIME_MIN <= t <= TIME_MAX:
                raise PrometheusError(f"{where}.values[{j}]: time {t:g} is not between 1970 and 3000")
            points.append((t, number))
        out.append({"metric": {str(k): v for k, v in metric.items()}, "values": points})
    return out


def _unrounded(acceptance: ServerAcceptance, values: Mapping[str, float]) -> ServerAcceptance:
    """α and τ from the increases as Prometheus returned them, before rounding to whole counts.

    ``increase()`` scales every counter of one target by the same extrapolation factor, which cancels in
    A/D and A/S only if nothing is rounded first; the counts in the result stay rounded (they are counts).
    """
    steps, drafted, accepted = values.get(DRAFTS), values.get(DRAFT_TOKENS), values.get(ACCEPTED)
    if accepted is None:
        return acceptance
    # The counts are real-valued here; metrics.acceptance's formulas are the same for them.
    counts = AcceptanceCounts(
        steps=cast(int, steps or 0), target_forwards=0, drafted=cast(int, drafted or 0),
        accepted=cast(int, accepted), emitted=0, rejections=0, draft_forwards=0,
    )  # fmt: skip
    return dataclasses.replace(
        acceptance,
        acceptance_rate=acceptance_rate(counts) if drafted is not None else acceptance.acceptance_rate,
        acceptance_length=acceptance_length(counts) if steps is not None else acceptance.acceptance_length,
    )


def _duration(seconds: float) -> str:
    return f"{round(seconds * 1000)}ms"


@dataclass(frozen=True)
class PrometheusSource:
    url: str
    window: float  # seconds; also the query step
    group_by: str = "model_name"
    selector: str = ""  # label matchers without braces: job="vllm",namespace="prod"
    kind: ServerKind = "vllm"
    k: int | None = None

    def queries(self) -> dict[str, str]:
        names = counter_names(self.kind)
        sel = "{" + self.selector + "}" if self.selector else ""
        w = _duration(self.window)
        out = {
            canon: f"sum by ({self.group_by}) (increase({names[canon]}{sel}[{w}]))"
            for canon in _COUNTERS
            if canon in names
        }
        per_pos = {"vllm": VLLM_PER_POS, "llamacpp": LLAMACPP_PER_POS}.get(self.kind)
        if per_pos is not None:  # both label the position "position"
            out[_PER_POS] = f"sum by ({self.group_by}, position) (increase({per_pos}{sel}[{w}]))"
        return out

    def target(self, metric: Mapping[str, str]) -> str:
        return f"{self.group_by}={metric.get(self.group_by, '')}"

    async def windows(self, client: httpx.AsyncClient, first_end: float, last_end: float) -> list[Window]:
        """Every window ending at first_end, first_end + W, …, last_end, per group, oldest first."""
        table: dict[tuple[float, str], dict[str, float]] = {}
        positions: dict[str, int] = {}  # per target: k as its per-position series reveal it
        for canon, query in self.queries().items():
            for series in await query_range(client, self.url, query, first_end, last_end, self.window):
                target = self.target(series.get("metric") or {})
                for t, value in series.get("values") or []:
                    number = float(value)
                    if not math.isfinite(number):
                        continue
                    key = canon
                    if canon == _PER_POS:
                        position = (series.get("metric") or {}).get("position", "")
                        if not (
                            str(position).isdigit() and len(str(position)) <= 4
                        ):  # int() of 5000 digits raises
                            continue
                        key = position_key(int(position))
                        positions[target] = max(positions.get(target, 0), int(position) + 1)
                    table.setdefault((round(float(t), 3), target), {})[key] = number
        out = []
        for (t, target), values in sorted(table.items()):
            delta = CounterDelta(values, (), self.window)
            acceptance = _unrounded(
                acceptance_from_delta(self.kind, delta, k=self.k or positions.get(target) or None), values
            )
            out.append(Window(target, f"prometheus/{self.kind}", t - self.window, t, acceptance))
        return out


@dataclass
class PrometheusMonitor(Monitor):
    """The scrape monitor's loop, store, exporter and alerts, with windows from Prometheus.

    The first tick asks for ``lookback`` seconds of windows ending now (with ``once``, that is all);
    every later tick asks for the windows that ended since the last one.
    """

    source: PrometheusSource | None = None
    lookback: float | None = None
    last_end: float | None = None
    clock: Any = field(default=time.time)
    on_error: Callable[[str], None] | None = None  # live mode: a failed query is reported, then retried

    async def tick(self, client: httpx.AsyncClient) -> None:
        assert self.source is not None
        width = self.source.window
        now = float(self.clock())
        if self.last_end is None:
            count = max(1, int((self.lookback or width) // width))
            first, last = now - (count - 1) * width, now
        else:
            steps = int((now - self.last_end) // width)
            if steps < 1:
                return
            first, last = self.last_end + width, self.last_end + steps * width
        try:
            windows = await self.source.windows(client, first, last)
        except PrometheusError as e:
            if self.config.once or self.on_error is None:
                raise
            self.on_error(str(e))
            return  # the same windows are asked for again at the next tick
        self.last_end = last
        for w in windows:
            tracker = self.trackers.setdefault(w.target, WindowTracker(w.target, self.source.kind))
            tracker.history.append(w)
            await self._publish(w, tracker)

    def _done(self, started: float) -> bool:
        if self.config.once:
            return True
        return super()._done(started)
