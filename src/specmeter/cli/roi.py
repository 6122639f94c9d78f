"""``specmeter roi``: the field report's ROI from a run's measured speedup or from given numbers.

    specmeter roi latest --monthly-tokens 3B --baseline-throughput 2500 \\
        --baseline-price 4.00 --spec-price 7.00 --engineering-cost 40000

Amounts accept K, M, B (10^9) and T suffixes. ``--speedup`` overrides the run (or replaces it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from specmeter.cli.common import (
    check_outputs,
    check_range,
    console,
    fail,
    parse_option,
    read_json_option,
    run_inputs,
    store_path,
)
from specmeter.cli.options import STORE, shared

# capacity_roi's fields, by the option they come from
_SWEEP_OPTIONS = {
    "traffic": "--traffic",
    "baseline_price": "--price-baseline",
    "spec_price": "--price-speculative",
    "engineering_cost": "--engineering-cost",
    "horizon_months": "--horizon-months",
}


def _amount(text: str, option: str) -> float:
    from specmeter.economics.roi import parse_amount

    return parse_option(lambda t: parse_amount(t, option), text, ValueError)


def candidate_label(c: Mapping[str, Any]) -> str:
    """A candidate's name: ``draft@k=4`` (bench), a sweep's cell ``k=4 at c=8`` (its configuration and level),
    a load level ``model @ url@k=4 at c=8``."""
    from specmeter.load.config import Phase
    from specmeter.metrics.records import run_label

    name = str(c["run"]) if "run" in c else run_label(str(c.get("draft")), int(c.get("k") or 0))
    if not any(key in c for key in ("concurrency", "rate", "trace")):
        return name
    level = Phase(concurrency=c.get("concurrency"), rate=c.get("rate"), trace=bool(c.get("trace")))
    return f"{name} at {level.label}"


def pick_candidate(result: Mapping[str, Any], wanted: str | None) -> tuple[str, float]:
    """(label, E_meas) of the named candidate (``draft``, ``draft@k`` or its label), else the best measured
    one. A sweep's entries carry the sweep's E (against both baseline runs, ``sweep.result.against_both``)."""
    from specmeter.report.fmt import as_float

    measured = []
    for c in result.get("candidates") or []:
        e = as_float((c.get("summary") or {}).get("speedup_measured")) if isinstance(c, Mapping) else None
        if e is not None:
            measured.append((candidate_label(c), str(c.get("draft")), e))
    if not measured:
        if result.get("kind") == "replay":
            fail("a replay result holds acceptance, not a measured speedup: price it with --from-whatif W "
                 "--alpha-from RESULT, or pass --speedup (select --from RESULT --costs predicts "
                 "one)")  # fmt: skip
        fail("the run has no measured speedup (no baseline or no candidate finished); pass --speedup")
    if wanted is None:
        label, _, e = max(measured, key=lambda m: m[2])
        return label, e
    key = wanted.replace("@", "@k=") if "@" in wanted and "@k=" not in wanted else wanted
    matches = [(label, e) for label, draft, e in measured if key in (label, draft)]
    if len(matches) != 1:
        names = ", ".join(label for label, _, _ in measured)
        fail(f"--candidate {wanted!r} matches {len(matches)} candidates; choose one of {names}")
    return matches[0]


def _roi_inputs(*figures: Any) -> Any:
    """``economics.roi.roi_inputs`` of the command's figures, or one ``error:`` line naming the option."""
    from specmeter.economics.roi import roi_inputs

    return parse_option(lambda given: roi_inputs(*given), figures, ValueError)


def read_sweep(path: Path) -> dict[str, Any]:
    """``--from-sweep``'s result file, checked against the sweep section's schema (one line per problem)."""
    from specmeter.report.validate import validate_sweep

    result = read_json_option(path, "--from-sweep")
    if not isinstance(result, dict):
        fail(f"--from-sweep: {path}: not a result object")
    problems = validate_sweep(result)
    if problems:
        fail("\n".join(f"--from-sweep: {path}: {p}" for p in problems))
    return result


def read_whatif(path: Path) -> tuple[dict[str, Any], str | None]:
    """``--from-whatif``'s what-if section, checked (every cell's α, k and B) before the surface is read,
    and the line its machine verdict calls for (a run judged busy or unusable), or None."""
    from specmeter.pricing.book import machine_warning, result_verdict
    from specmeter.report.validate import validate_whatif

    result = read_json_option(path, "--from-whatif")
    if isinstance(result, dict) and result.get("kind") == "whatif":
        problems = validate_whatif(result)
        if problems:
            fail("\n".join(f"--from-whatif: {path}: {p}" for p in problems))
    if (
        not isinstance(result, dict)
        or result.get("kind") != "whatif"
        or not (result.get("whatif") or {}).get("cells")
    ):
        kind = result.get("kind") if isinstance(result, dict) else None
        fail(
            f"--from-whatif: {path} is not a whatif result with measured cells (kind {kind!r}); "
            "run specmeter whatif --json"
        )
    return dict(result["whatif"]), machine_warning(result_verdict(result), f"{path.name}'s what-if surface")


def roi_from_sweep(
    path: Path, traffic: float, baseline_price: float, spec_price: float | None, engineering_cost: float,
    horizon_months: float, json_out: Path | None,
) -> None:  # fmt: skip
    """``roi --from-sweep``: instances and money at the sweep's measured capacity, beside today's batch-1
    figure (``economics.capacityroi``)."""
    from specmeter.economics.capacityroi import TooManyInstances, capacity_roi, sweep_capacity
    from specmeter.economics.view_roi import render_sweep_roi
    from specmeter.report.files import write_json_atomic

    check_range("--traffic", traffic, low=0, low_open=True)
    result = read_sweep(path)
    try:
        capacity = sweep_capacity(result, where=str(path))
        r = capacity_roi(
            capacity, traffic, baseline_price, baseline_price if spec_price is None else spec_price,
            engineering_cost, horizon_months,
        )  # fmt: skip
    except TooManyInstances as e:
        fail(f"--from-sweep: {path}: {e}")
    except ValueError as e:
        message = str(e)
        field = message.split(" ")[0]
        option = _SWEEP_OPTIONS.get(field)
        fail(f"{option} {message.removeprefix(field).strip()}" if option else message)
    render_sweep_roi(r, path.name, console)
    if json_out is not None:
        write_json_atomic(json_out, r.to_dict(), marker="roi")


def roi_from_whatif(
    path: Path, inputs: Any, *, alpha: float | None, k: int | None, batch: int | None,
    payback_months: float | None, json_out: Path | None, capacity: Any = None, alpha_from: Any = None,
) -> None:  # fmt: skip
    """``roi --from-whatif``: ``selection.whatif_roi`` answers, ``selection.view_whatif_roi`` prints."""
    from specmeter.report.files import write_json_atomic
    from specmeter.selection.view_whatif_roi import render_whatif_roi
    from specmeter.selection.whatif_roi import baseline_capacity, price_whatif

    section, machine = read_whatif(path)
    base = None
    if capacity is not None:
        sweep = None if capacity.sweep is None else read_sweep(capacity.sweep)
        base = parse_option(lambda ask: baseline_capacity(ask, sweep), capacity, ValueError)
    answer = parse_option(
        lambda s: price_whatif(s, path, inputs, alpha=alpha, k=k, batch=batch, payback_months=payback_months,
                               capacity=capacity, base=base, alpha_from=alpha_from),
        section, ValueError,
    )  # fmt: skip
    render_whatif_roi(answer, console)
    data = answer.data
    if machine is not None:
        console.print(f"[yellow]warning: {escape(machine)}[/]", soft_wrap=True)
        data = {**data, "warnings": [machine]}
    if json_out is not None:
        write_json_atomic(json_out, data, marker="roi")


@shared(tail=STORE)
def roi(
    run: str | None = typer.Argument(None, help="Run id, latest~N or result JSON; omit with --speedup."),
    speedup: float | None = typer.Option(
        None, "--speedup", help="Use this speedup instead of a run's E_meas."
    ),
    candidate: str | None = typer.Option(
        None, "--candidate", help="draft or draft@k (default: best E_meas); with --alpha-from, its candidate."
    ),
    monthly_tokens: str | None = typer.Option(
        None, "--monthly-tokens", help="Tokens served per month, e.g. 3B."
    ),
    baseline_throughput: float | None = typer.Option(
        None, "--baseline-throughput", help="Tokens/s one baseline instance sustains."
    ),
    baseline_price: float | None = typer.Option(
        None, "--baseline-price", "--price-baseline", help="Baseline instance price per hour."
    ),
    spec_price: float | None = typer.Option(
        None,
        "--spec-price",
        "--price-speculative",
        help="Price per hour of the instance holding target + draft (default: same).",
    ),
    from_sweep: Path | None = typer.Option(
        None,
        "--from-sweep",
        help="A sweep result: instances needed at its measured capacity (with --traffic); with --from-whatif "
        "the baseline's capacity.",
    ),
    traffic: float | None = typer.Option(
        None, "--traffic", help="--from-sweep, or --from-whatif's fleet: requests/s to serve."
    ),
    baseline_capacity: float | None = typer.Option(
        None,
        "--baseline-capacity",
        help="--from-whatif --traffic without a sweep: requests/s one baseline instance serves (its SLO "
        "capacity).",
    ),
    from_whatif: Path | None = typer.Option(
        None,
        "--from-whatif",
        help="A whatif result: the speedup its surface measured at --alpha (or the α --target-roi needs); "
        "with --traffic also whole instances at an assumed capacity of baseline × E.",
    ),
    alpha: float | None = typer.Option(None, "--alpha", help="--from-whatif: the α the draft would reach."),
    alpha_from: Path | None = typer.Option(
        None,
        "--alpha-from",
        help="--from-whatif: take α from a replay (or bench) result instead: --candidate's per-position "
        "acceptance at its k (or --k).",
    ),
    k: int | None = typer.Option(None, "--k", help="--from-whatif: this draft length (default: the best)."),
    batch: int | None = typer.Option(
        None,
        "--batch",
        help="--from-whatif: the batch size the instances run at (one of those measured; default with a "
        "sweep: the one nearest its baseline capacity level's concurrency).",
    ),
    target_roi: float | None = typer.Option(
        None,
        "--target-roi",
        "--payback-within",
        help="--from-whatif: months; the α a draft must reach to pay the engineering cost back within them.",
    ),
    engineering_cost: str = typer.Option("0", "--engineering-cost", help="One-off cost of adopting it."),
    horizon_months: float = typer.Option(12.0, "--horizon-months", help="Months of savings ROI counts."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the figures as JSON."),
    *,
    options: dict[str, Any],
) -> None:
    """ROI = (GPU-time cost saved − extra memory cost) / engineering cost, with monthly cost and payback."""
    import dataclasses

    from specmeter.economics import compute_roi
    from specmeter.economics.view_roi import render_roi
    from specmeter.report.files import write_json_atomic
    from specmeter.store import StoreError, load_source

    store = options["store"]
    whatif_only = {"--alpha": alpha, "--alpha-from": alpha_from, "--k": k, "--batch": batch,
                   "--target-roi": target_roi, "--baseline-capacity": baseline_capacity}  # fmt: skip
    if from_whatif is None and any(v is not None for v in whatif_only.values()):
        fail(f"{', '.join(n for n, v in whatif_only.items() if v is not None)}: only with --from-whatif")
    if from_whatif is not None:
        from specmeter.selection.whatif_roi import CapacityAsk

        if run is not None or speedup is not None:
            fail("--from-whatif takes the speedup from the what-if surface: drop RUN and --speedup")
        if traffic is None and (from_sweep is not None or baseline_capacity is not None):
            fail("--from-sweep/--baseline-capacity with --from-whatif size a fleet: give --traffic REQ_PER_S")
        if traffic is not None and (from_sweep is None) == (baseline_capacity is None):
            fail("--traffic with --from-whatif needs the baseline's capacity: --from-sweep S.json or "
                 "--baseline-capacity REQ_PER_S (one of them)")  # fmt: skip
        if alpha is not None and alpha_from is not None:
            fail("--alpha and --alpha-from: give one source of α")
        if candidate is not None and alpha_from is None:
            fail(
                "--candidate with --from-whatif names the --alpha-from result's candidate: give --alpha-from"
            )
        if alpha is None and alpha_from is None and target_roi is None:
            fail("--from-whatif needs --alpha (the ROI at that α; or --alpha-from RESULT) or --target-roi "
                 "MONTHS (the α paying back)")  # fmt: skip
        by_tokens = traffic is None or monthly_tokens is not None or baseline_throughput is not None
        if baseline_price is None or (by_tokens and (monthly_tokens is None or baseline_throughput is None)):
            fail("--from-whatif needs --price-baseline, and --monthly-tokens with --baseline-throughput "
                 "(or --traffic with --from-sweep or --baseline-capacity)")  # fmt: skip
        if alpha is not None:
            check_range("--alpha", alpha, low=0, high=1)
        if target_roi is not None:
            check_range("--target-roi", target_roi, low=0, low_open=True)
        check_range("--traffic", traffic, low=0, low_open=True)
        check_range("--baseline-capacity", baseline_capacity, low=0, low_open=True)
        check_range("--horizon-months", horizon_months, low=0, low_open=True)
        given = {"--from-whatif": from_whatif} | ({} if from_sweep is None else {"--from-sweep": from_sweep})
        given |= {} if alpha_from is None else {"--alpha-from": alpha_from}
        check_outputs({"--json": json_out}, given)
        alpha_source = None
        if alpha_from is not None:
            from specmeter.selection.acceptance_source import AcceptanceSourceError, read_source
            from specmeter.selection.whatif_roi import alpha_from_source

            try:
                alpha, k, alpha_source = alpha_from_source(
                    read_source(alpha_from, "--alpha-from"), candidate, k
                )
            except AcceptanceSourceError as e:
                fail(str(e))
        inputs = None
        if by_tokens:
            assert monthly_tokens is not None and baseline_throughput is not None
            inputs = _roi_inputs(monthly_tokens, baseline_throughput, baseline_price, spec_price,
                                 engineering_cost, horizon_months)  # fmt: skip
        ask = None
        if traffic is not None:
            cost = _amount(engineering_cost, "--engineering-cost")
            check_range("--engineering-cost", cost, low=0)
            check_range("--price-baseline", baseline_price, low=0)
            check_range("--price-speculative", spec_price, low=0)
            spec = baseline_price if spec_price is None else spec_price
            ask = CapacityAsk(
                traffic, from_sweep, baseline_capacity, baseline_price, spec, cost, horizon_months
            )
        roi_from_whatif(from_whatif, inputs, alpha=alpha, k=k, batch=batch, payback_months=target_roi,
                        json_out=json_out, capacity=ask, alpha_from=alpha_source)  # fmt: skip
        return
    if from_sweep is not None:
        if (
            run is not None
            or speedup is not None
            or monthly_tokens is not None
            or baseline_throughput is not None
        ):
            fail("--from-sweep takes capacities from the sweep: drop RUN, --speedup, --monthly-tokens and "
                 "--baseline-throughput")  # fmt: skip
        if traffic is None or baseline_price is None:
            fail("--from-sweep needs --traffic (requests/s) and --price-baseline")
        check_outputs({"--json": json_out}, {"--from-sweep": from_sweep})
        cost = _amount(engineering_cost, "--engineering-cost")
        roi_from_sweep(from_sweep, traffic, baseline_price, spec_price, cost, horizon_months, json_out)
        return
    if traffic is not None:
        fail("--traffic goes with --from-sweep")
    if monthly_tokens is None or baseline_throughput is None or baseline_price is None:
        fail(
            "give --monthly-tokens, --baseline-throughput, --baseline-price (or --from-sweep with --traffic)"
        )
    check_outputs({"--json": json_out}, run_inputs([run], store))
    source_text = "given"
    if speedup is None:
        if run is None:
            fail("give a RUN (store id or result JSON) or --speedup")
        try:
            source = load_source(run, store_path(store))
        except StoreError as e:
            fail(str(e))
        label, speedup = pick_candidate(source.result, candidate)
        source_text = f"E_meas of {label} in {source.name}"
    inputs = _roi_inputs(monthly_tokens, baseline_throughput, baseline_price, spec_price, engineering_cost,
                         horizon_months, speedup)  # fmt: skip
    r = compute_roi(inputs)
    render_roi(r, source_text, console)
    if json_out is not None:
        data = {**dataclasses.asdict(r), "instances_before": r.instances_before}
        data["instances_after"] = r.instances_after
        write_json_atomic(json_out, data, marker="roi")
