"""``load`` results in the shared result schema (docs/results.md), one candidate entry per load level.

Each level's entry is a candidate ``{"draft", "k", "summary", "by_category"}`` like ``bench``'s, plus what
only a load test has: ``concurrency`` / ``rate``, the ``endpoint``, the level's ``baseline`` (the same
workload against the baseline endpoint at the same level, so E_meas compares like with like), the
``effective_concurrency`` actually held beside the nominal one, ``load`` (throughput, errors, where token
counts came from) and ``server`` (acceptance as the server reported it).

Summaries come from ``specmeter.metrics.summarize`` over the completed requests. A remote server shows no
steps, so acceptance is taken from the server — per-request reports when present (they cover exactly this
run's requests), else the /metrics counter deltas of the level (which include any other traffic the server
had); the counters win over reports without steps when their drafted and accepted totals equal the
reports' sums, which proves they counted exactly this run (llama.cpp: τ and per-position come only from
its counters) — and the danger-zone verdict is recomputed with it. Figures that need the models (memory,
cost ratio, model-based speedups) do not apply to a remote endpoint and are null.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from specmeter.goldenset.lengths import length_bucket
from specmeter.load.client import RequestOutcome
from specmeter.load.config import CLIENT_BUSY
from specmeter.load.level import PhaseResult, RoleResult
from specmeter.load.limits import client_cores
from specmeter.metrics.acceptance import per_request_rates
from specmeter.metrics.records import ModelInfo, RunRecord
from specmeter.metrics.slo import SLO, evaluate
from specmeter.metrics.slow_start import slow_start
from specmeter.metrics.summary import MODEL_FILE_KEYS, judge, summarize, summarize_by_category
from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_requests
from specmeter.monitoring.adapters import unavailable_metrics
from specmeter.report.files import ResultFile

__all__ = [
    "LEVEL_KEY",
    "add_level",
    "effective_concurrency",
    "level_entry",
    "nothing_measured",
    "remote_model",
]

MAX_LISTED_FAILURES = 50
LEVEL_KEY = ("concurrency", "rate")  # a load level's entry is keyed by its level, not by draft and k
_FROM_SERVER = (
    "steps",
    "drafted_tokens",
    "accepted_tokens",
    "rejections",
    "acceptance_rate",
    "acceptance_length",
    "beta",
    "per_position",
    "per_position_definition",  # "per_draft": the rates are V_i, not P_i (docs/metrics.md); the HTML says so
)


def remote_model(name: str, url: str) -> ModelInfo:
    """A placeholder ModelInfo: a remote endpoint's weights and layout are unknown."""
    return ModelInfo(
        name=name,
        path=url,
        architecture="remote",
        params=0,
        weight_bytes=0,
        kv_bytes_per_token=0,
        dtype="unknown",
        num_layers=0,
        num_kv_heads=0,
        head_dim=0,
        implementation="remote",
    )


def _exact(role: RoleResult) -> bool:
    """Whether every completed request's steps were rebuilt exactly from the server's per-request reports."""
    done = [o for o in role.outcomes if o.ok]
    return bool(done) and all(o.exact_steps for o in done)


def _run(role: RoleResult, speculative: bool, k: int, temperature: float, top_p: float) -> RunRecord:
    ep = role.endpoint
    target = remote_model(ep.model or ep.url, ep.url)
    draft = remote_model(f"{ep.model or ep.url} (draft)", ep.url) if speculative else None
    done = tuple(o.record for o in role.outcomes if o.ok)
    if not (speculative and _exact(role)):
        # Steps of only some requests would make a summary over a subset look like the whole.
        done = tuple(replace(r, steps=()) for r in done)
    return RunRecord(target=target, draft=draft, k=k, temperature=temperature, top_p=top_p, requests=done)


def _apply_server(summary: dict[str, Any], acceptance: ServerAcceptance | None) -> None:
    for key in MODEL_FILE_KEYS:  # the remote_model placeholders know no weights
        summary[key] = None
    if acceptance is not None and acceptance.source != "none":
        figures = acceptance.as_dict()
        for key in _FROM_SERVER:
            summary[key] = figures[key]
    else:
        # specmeter's own rates, from steps rebuilt exactly (or none at all): every load summary says which.
        summary["per_position_definition"] = "P_i" if summary.get("per_position") else None
    summary.update(judge(summary))


def effective_concurrency(role: RoleResult) -> float | None:
    """Requests in flight, time-weighted over the level: Σ (end − send) of its requests / its wall time.

    Every request of a level is sent and ends within the level's blocks, so the sum of the requests' spans
    is the integral of the in-flight count over the level's wall time (Little's law, exact here). A closed
    loop at concurrency N holds less than N by the turnaround between a request's end and the next send,
    and by each block's ramp-down (the last requests run with fewer beside them); failed requests count.
    """
    if role.wall_s <= 0:
        return None
    return sum(max(o.ended_at - o.started_at, 0.0) for o in role.outcomes) / role.wall_s


def _load_block(role: RoleResult) -> dict[str, Any]:
    outcomes = role.outcomes
    ok = [o for o in outcomes if o.ok]
    failed = [o for o in outcomes if not o.ok]
    tokens = sum(o.record.output_tokens for o in ok)
    errors = Counter((o.error or "unknown").split(":")[0] for o in failed)
    return {
        "endpoint": role.endpoint.url,
        "model": role.endpoint.model,
        "server_kind": role.endpoint.kind,
        "wall_s": role.wall_s,
        "effective_concurrency": effective_concurrency(role),
        "server_queue": role.readings.queue_summary(role.endpoint),  # the server's running/waiting
        "client_cpu": role.client_cpu_s / role.wall_s if role.wall_s > 0 else None,
        "client_processes": role.client_processes,
        **_client_busy(role),
        "requests_sent": len(outcomes),
        "completed": len(ok),
        "partial": sum(1 for o in failed if o.partial),
        "failed": len(failed),
        "errors": dict(errors),
        "failures": [
            {"id": o.record.id, "error": o.error, "status": o.status, "output_tokens": o.record.output_tokens}
            for o in failed[:MAX_LISTED_FAILURES]
        ],
        "output_tokens_per_s": tokens / role.wall_s if role.wall_s > 0 else None,
        "requests_per_s": len(ok) / role.wall_s if role.wall_s > 0 else None,
        "token_sources": dict(Counter(o.token_source for o in ok)),
        "malformed_lines": sum(o.malformed_lines for o in outcomes),
        # The level's own warm-up (LevelRunner.warm_level), at its load just before it: never counted above.
        "warmup_requests": role.warmup_requests,
        "warmup_failed": role.warmup_failed,
        "warmup_s": role.warmup_s,
        "slow_start": _slow_start(role),
    }


def _client_busy(role: RoleResult) -> dict[str, Any]:
    """How busy the client's busiest process was during the level (CPU seconds per wall second, its share
    of one core) and, when it passed ``CLIENT_BUSY``, a warning that says so with the figure: a process
    that reads streams near 100 % of a core stamps chunks late and paces the requests itself, so the
    level's latencies may be the client's rather than the server's."""
    if role.wall_s <= 0 or not role.client_cpu_by_process:
        return {"client_busiest_cpu": None, "client_warning": None}
    busiest = max(role.client_cpu_by_process) / role.wall_s
    warning = None
    if busiest >= CLIENT_BUSY:
        more = (
            "more --client-processes or a client machine with more cores"
            if role.client_processes < client_cores()
            else "a client machine with more cores"
        )
        warning = (
            f"the client was the bottleneck: its busiest process used {busiest:.0%} of a core during the "
            f"level (≥ {CLIENT_BUSY:.0%}); its TTFT and gaps may be the client's delay, not the server's "
            f"({more})"
        )
    return {"client_busiest_cpu": busiest, "client_warning": warning}


def _slow_start(role: RoleResult) -> dict[str, Any] | None:
    """Whether the level's first quarter of requests (in send order) was markedly slower than the rest
    (``metrics.slow_start``): a cold start the warm-up did not absorb."""
    sent = sorted((o for o in role.outcomes if o.ok), key=lambda o: o.started_at)
    figure = slow_start([o.record for o in sent])
    return None if figure is None else figure.to_dict()


def _counters_cover_requests(counters: ServerAcceptance, requests: ServerAcceptance) -> bool:
    """Whether counter deltas count exactly this run's requests and tell more than their reports do.

    True when the deltas' drafted and accepted totals equal the sums of the per-request reports (no other
    traffic reached the server in the level) and the counters have the steps the reports lack (llama.cpp's
    ``timings`` carry no steps; its /metrics has them, with τ and per-position).
    """
    return (
        counters.source == "counters"
        and requests.steps is None
        and counters.steps is not None
        and counters.drafted_tokens == requests.drafted_tokens
        and counters.accepted_tokens == requests.accepted_tokens
    )


def _request_pair(spec: Mapping[str, Any]) -> tuple[float, float] | None:
    """One request's (accepted, drafted) from its server report, in either shape
    ``monitoring.acceptance.acceptance_from_requests`` reads (vLLM's, which SGLang's ``meta_info`` is brought
    to, or llama.cpp's ``timings``)."""
    for a_key, d_key in (("num_accepted_draft_tokens", "num_draft_tokens"), ("draft_n_accepted", "draft_n")):
        a, d = spec.get(a_key), spec.get(d_key)
        if isinstance(a, int | float) and isinstance(d, int | float) and not spec.get("derived_from_rates"):
            return float(a), float(d)
    return None


def _server_block(role: RoleResult, k: int | None) -> tuple[dict[str, Any], ServerAcceptance | None]:
    from_requests = role.request_acceptance(k)
    from_metrics = role.metrics_acceptance(k)
    used = from_requests or (
        from_metrics if from_metrics is not None and from_metrics.source != "none" else None
    )
    if (
        from_requests is not None
        and from_metrics is not None
        and _counters_cover_requests(from_metrics, from_requests)
    ):
        used = from_metrics
    block = {
        "kind": role.endpoint.kind,
        "metrics_url": role.endpoint.metrics,
        "metrics": None if from_metrics is None else from_metrics.as_dict(),
        "per_request": None if from_requests is None else from_requests.as_dict(),
        "used": None if used is None else ("per_request" if used is from_requests else "metrics"),
        # α per request as the engine reported it (its distribution over the level's requests): what a replay
        # of the same traffic is compared with request by request.
        "per_request_alpha": per_request_rates(
            p for o in role.outcomes if o.server_spec and (p := _request_pair(o.server_spec)) is not None
        ),
        "unavailable": list(unavailable_metrics(role.endpoint.kind)),
        "notes": [n for n in (role.endpoint.metrics_note, *role.readings.scrape_errors) if n],
    }
    return block, used


def level_entry(
    result: PhaseResult,
    *,
    label: str,
    k: int | None,
    temperature: float,
    top_p: float,
    slo: SLO | None = None,
) -> dict[str, Any]:
    """The candidate entry of one load level (with its baseline, if one was measured); with ``slo`` each
    role's ``load.slo`` holds its attainment, goodput and violations (:func:`metrics.slo.evaluate`)."""
    spec_role = result.roles["speculative"]
    base_role = result.roles.get("baseline")
    server, acceptance = _server_block(spec_role, k)
    k_used = k or (acceptance.k if acceptance is not None and acceptance.k else 0)
    spec_run = _run(spec_role, True, k_used, temperature, top_p)
    base_run = _run(base_role, False, 0, temperature, top_p) if base_role is not None else None
    summary = summarize(spec_run, base_run)
    if _exact(spec_role):
        # Per-request steps are known exactly: summarize() computed every acceptance figure, with
        # bootstrap intervals over requests and per category, as bench does.
        server["used"] = "per_request_steps"
        _apply_server(summary, None)
    else:
        _apply_server(summary, acceptance)
    by_category = _grouped(
        spec_role, base_role, lambda o: o.record.category, k_used, temperature, top_p, ordered=False
    )
    entry = _entry(result, label, k_used, summary, by_category, base_role, base_run, spec_role, server)
    # Acceptance depends on the input length and the temperature as well as on the category (the field
    # report; vLLM's docs), so the level is broken down by both too.
    entry["by_input_length"] = _grouped(spec_role, base_role, input_bucket, k_used, temperature, top_p)
    entry["by_temperature"] = _grouped(spec_role, base_role, temperature_group, k_used, temperature, top_p)
    if slo is not None:
        roles = [(entry.get("load"), spec_role)]
        if base_role is not None and isinstance(entry.get("baseline"), dict):
            roles.append((entry["baseline"].get("load"), base_role))
        for block, role in roles:
            if isinstance(block, dict):
                block["slo"] = slo_block(slo, role)
    return entry


def slo_block(slo: SLO, role: RoleResult) -> dict[str, Any]:
    """One role's requests at a level judged against ``slo``: every request sent counts (a failed one
    misses), goodput over the role's wall time."""
    records = [o.record for o in role.outcomes]
    return evaluate(slo, records, role.wall_s).to_dict()


def input_bucket(o: RequestOutcome) -> str:
    """The power-of-two bucket of the prompt tokens the server reported: ``≤256`` holds 129–256."""
    n = o.record.prompt_tokens
    return f"≤{length_bucket(n)}" if n > 0 else "unknown"


def temperature_group(o: RequestOutcome) -> str:
    return "unknown" if o.temperature is None else f"T={o.temperature:g}"


def _relabel(role: RoleResult, key: Callable[[RequestOutcome], str]) -> RoleResult:
    outcomes = [replace(o, record=replace(o.record, category=key(o))) for o in role.outcomes]
    return RoleResult(role.endpoint, outcomes, role.wall_s, role.readings, role.client_cpu_s)


def _order(label: str) -> tuple[float, str]:
    digits = "".join(c for c in label if c.isdigit() or c == ".")
    try:
        return (float(digits), label)
    except ValueError:
        return (math.inf, label)


def _grouped(
    spec_role: RoleResult,
    base_role: RoleResult | None,
    key: Callable[[RequestOutcome], str],
    k_used: int,
    temperature: float,
    top_p: float,
    *,
    ordered: bool = True,
) -> dict[str, dict[str, Any]]:
    """Summaries per group of requests (``key`` of each outcome), each with its baseline's E_meas.

    Counters cannot be split by group; per-request reports can (the field report's per-domain α), so
    without exact steps each group's acceptance comes from its own requests' reports.
    """
    spec = _relabel(spec_role, key)
    spec_run = _run(spec, True, k_used, temperature, top_p)
    base_run = _run(_relabel(base_role, key), False, 0, temperature, top_p) if base_role is not None else None
    groups = summarize_by_category(spec_run, base_run)
    exact = _exact(spec_role)
    for group, part in groups.items():
        if exact:
            _apply_server(part, None)
            continue
        reports = (
            o.server_spec for o in spec.outcomes if o.ok and o.record.category == group and o.server_spec
        )
        _apply_server(part, acceptance_from_requests(reports, k=k_used or None))
    return {g: groups[g] for g in sorted(groups, key=_order)} if ordered else groups


def _entry(
    result: PhaseResult,
    label: str,
    k_used: int,
    summary: dict[str, Any],
    by_category: dict[str, dict[str, Any]],
    base_role: RoleResult | None,
    base_run: RunRecord | None,
    spec_role: RoleResult,
    server: dict[str, Any],
) -> dict[str, Any]:
    baseline: dict[str, Any] | None = None
    if base_role is not None and base_run is not None:
        base_summary = summarize(base_run, None)
        base_by_category = summarize_by_category(base_run, None)
        for s in (base_summary, *base_by_category.values()):
            _apply_server(s, None)
        baseline = {"summary": base_summary, "by_category": base_by_category, "load": _load_block(base_role)}
    return {
        "draft": label,
        "k": k_used,
        "concurrency": result.phase.concurrency,
        "effective_concurrency": effective_concurrency(spec_role),
        "rate": result.phase.rate,
        "trace": result.phase.trace,
        "endpoint": spec_role.endpoint.url,
        "complete": result.complete,
        "summary": summary,
        "by_category": by_category,
        "baseline": baseline,
        "load": _load_block(spec_role),
        "server": server,
    }


def add_level(result: ResultFile, entry: Mapping[str, Any]) -> None:
    """Put one level's entry (:func:`level_entry`) into the result file, replacing an earlier one."""
    fields = dict(entry)
    draft, k, summary, by_category = (fields.pop(f) for f in ("draft", "k", "summary", "by_category"))
    result.add_candidate(draft, k, summary, by_category, key=LEVEL_KEY, **fields)


def nothing_measured(result: Mapping[str, Any], endpoint: str, baseline: str | None = None) -> str | None:
    """The one line when an endpoint completed none of its requests at any level, else None.

    Either side counts alone: a baseline that answered nothing leaves every E_meas without its reference, as
    a speculative endpoint that answered nothing leaves it without its subject (issue 29: a failing
    baseline beside a working endpoint used to pass with exit 0).
    """
    levels = [level for level in result.get("candidates") or [] if isinstance(level, Mapping)]
    sides: list[tuple[str, str, list[Any]]] = [
        ("", endpoint, [level.get("load") for level in levels]),
    ]
    if baseline is not None:
        sides.append(
            (" at the baseline", baseline, [(lv.get("baseline") or {}).get("load") for lv in levels])
        )
    for where, url, found in sides:
        blocks: list[Mapping[str, Any]] = [b for b in found if isinstance(b, Mapping)]
        sent = sum(int(b.get("requests_sent") or 0) for b in blocks)
        completed = sum(int(b.get("completed") or 0) for b in blocks)
        if sent and completed:
            continue
        first = next(
            (f.get("error") for b in blocks for f in b.get("failures") or [] if f.get("error")), None
        )
        return f"nothing measured{where}: none of the {sent} request(s) to {url} completed" + (
            f" (first failure: {first})" if first else ""
        )
    return None
