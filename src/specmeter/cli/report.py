"""``specmeter report RUN --out report.html``: one self-contained HTML report (inline SVG, works offline).

RUN is a store run (then the report has the gap distribution and a per-request timeline from the
request records) or a result JSON file. ``--screenshot`` renders it with headless Chromium, for the README.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from specmeter.cli.common import check_outputs, console, fail, parse_option, run_inputs, store_path
from specmeter.cli.options import STORE, shared


def _size(text: str) -> tuple[int, int]:
    width, sep, height = text.lower().partition("x")
    if not sep or not width.isdigit() or not height.isdigit() or int(width) < 200 or int(height) < 200:
        fail(f"--screenshot-size: {text!r} is not WIDTHxHEIGHT in pixels (each >= 200), e.g. 1280x2800")
    return int(width), int(height)


@shared(tail=STORE)
def report(
    run: str = typer.Argument(..., help="Run id, latest, latest~N, or a result JSON file."),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="HTML file to write."),
    request: str | None = typer.Option(
        None, "--request", help="Request id for the timeline (default: the one with the most stalls)."
    ),
    monthly_tokens: str | None = typer.Option(None, "--monthly-tokens", help="ROI: tokens served per month."),
    baseline_throughput: float | None = typer.Option(
        None, "--baseline-throughput", help="ROI: tokens/s per baseline instance."
    ),
    baseline_price: float | None = typer.Option(
        None, "--baseline-price", help="ROI: baseline price per hour."
    ),
    spec_price: float | None = typer.Option(None, "--spec-price", help="ROI: price per hour with the draft."),
    engineering_cost: str = typer.Option("0", "--engineering-cost", help="ROI: one-off engineering cost."),
    horizon_months: float = typer.Option(12.0, "--horizon-months", help="ROI: months of savings counted."),
    screenshot: Path | None = typer.Option(
        None, "--screenshot", help="Also save a PNG of the report (needs chromium)."
    ),
    screenshot_size: str = typer.Option("1280x2800", "--screenshot-size", help="WIDTHxHEIGHT of the PNG."),
    *,
    options: dict[str, Any],
) -> None:
    """Write a self-contained HTML report of one run: verdict, charts, stutter, memory, ROI."""
    from specmeter.economics.roi import roi_inputs
    from specmeter.report.html import render_report, write_report
    from specmeter.store import StoreError, load_source

    store = options["store"]
    size = _size(screenshot_size) if screenshot is not None else None
    check_outputs({"--out": out, "--screenshot": screenshot}, run_inputs([run], store))
    roi = None
    if monthly_tokens is not None or baseline_throughput is not None or baseline_price is not None:
        if monthly_tokens is None or baseline_throughput is None or baseline_price is None:
            fail("ROI needs --monthly-tokens, --baseline-throughput and --baseline-price together")
        figures = (monthly_tokens, baseline_throughput, baseline_price, spec_price, engineering_cost,
                   horizon_months)  # fmt: skip
        roi = parse_option(lambda given: roi_inputs(*given), figures, ValueError)
    try:
        source = load_source(run, store_path(store))
    except StoreError as e:
        fail(str(e))
    records: dict[str, list[Any]] | None = None
    if source.requests:
        records = {}
        for r in source.requests:
            records.setdefault(r.slot, []).append(r.record)
        if request is not None and not any(rec.id == request for recs in records.values() for rec in recs):
            fail(f"--request: {source.name} has no request with id {request!r}")
    elif request is not None:
        fail("--request needs a stored run (a result JSON file has no per-request records)")
    text = render_report(source.result, records=records, source=source.name, notes=source.notes, roi=roi,
                         request_id=request)  # fmt: skip
    try:
        write_report(out, text)
    except OSError as e:
        fail(f"--out {out}: cannot write ({e})")
    console.print(f"Wrote {out} ({len(text) / 1024:.0f} KiB, self-contained).", soft_wrap=True)
    if screenshot is not None and size is not None:
        from specmeter.report.html_browser import BrowserError, screenshot_html

        try:
            screenshot_html(out, screenshot, width=size[0], height=size[1])
        except BrowserError as e:
            fail(f"--screenshot: {e}")
        console.print(f"Wrote {screenshot}.", soft_wrap=True)
