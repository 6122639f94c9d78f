"""``specmeter drift``: has acceptance moved? This window against a reference, per domain, tested per request.

The statistics live in ``monitoring.drift``, the sentences in ``monitoring.view_drift``; this module picks
the two windows and reads the logs (or a stored run as the reference, ``store.observations``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from specmeter.cli.common import check_outputs, console, err_console, fail, parse_option, store_path
from specmeter.cli.options import STORE, shared
from specmeter.exitcodes import EXIT_FAILED, EXIT_NOTHING_TO_COMPARE

if TYPE_CHECKING:
    from specmeter.monitoring.requestlog import RequestObs

EXIT_DROP = EXIT_FAILED
MAX_SHOWN_PROBLEMS = 50
_RELATIVE = re.compile(r"\s*[0-9]*\.?[0-9]+\s*(ms|s|m|h|d)\s*")  # --since 24h: a duration, with its unit


def _time(value: str, option: str) -> float:
    from specmeter.monitoring.requestlog import parse_time

    try:
        t = parse_time(value)
    except ValueError:
        fail(f"{option}: {value!r} is not a time (ISO 8601 such as 2026-11-30T12:00, or Unix seconds)")
    assert t is not None
    return t


def _since(value: str, end: float | None) -> float:
    """``--since``: a time, or a duration (``24h``, ``90m``) before the current window's ``end`` (the last
    request, or ``--until``), so a command line means the same on any day."""
    if not _RELATIVE.fullmatch(value):
        return _time(value, "--since")
    from specmeter.monitoring.durations import parse_seconds

    seconds = parse_option(lambda text: parse_seconds(text, "--since"), value, ValueError)
    if end is None:
        fail(f"--since {value}: a duration needs the window's end, and no request has a time stamp")
    return end - seconds


def _read(path: Path, fields: dict[str, str], option: str) -> list[RequestObs]:
    from specmeter.monitoring.requestlog import LogTail

    if not path.exists():
        fail(f"{option}: {path} does not exist")
    tail = LogTail(path, fields)
    obs, problems = tail.poll()
    more, late_problems = tail.flush()
    problems += late_problems
    for p in problems[:MAX_SHOWN_PROBLEMS]:
        err_console.print(f"{p}: skipped", markup=False, highlight=False, emoji=False, soft_wrap=True)
    if len(problems) > MAX_SHOWN_PROBLEMS:
        err_console.print(f"... and {len(problems) - MAX_SHOWN_PROBLEMS} more")
    if problems:
        err_console.print(f"{option}: {len(problems)} log line(s) skipped")
    if not obs and not more:  # say why, not "no time stamp" or "holds no request" (issue 29)
        why = f"every line was skipped ({tail.reasons_text()})" if problems else "it holds no line"
        fail(f"{option}: no usable request in {path}: {why}")
    return obs + more


def _between(obs: Sequence[RequestObs], start: float | None, end: float | None) -> list[RequestObs]:
    return [
        r
        for r in obs
        if r.time is not None and (start is None or r.time >= start) and (end is None or r.time < end)
    ]


@shared(tail=STORE)
def drift(
    requests: Path = typer.Option(
        ..., "--requests", help="Per-request log (file or directory): the current window."
    ),
    fields: str | None = typer.Option(None, "--fields", help="Map log fields, as in monitor --requests."),
    since: str | None = typer.Option(
        None,
        "--since",
        help="Start of the current window: a time, or a duration before its end such as 24h "
        "(default: --window before its end).",
    ),
    until: str | None = typer.Option(
        None, "--until", help="End of the current window (default: the last request)."
    ),
    window: str = typer.Option(
        "1d", "--window", help="Window length: the current window without --since, the reference before it."
    ),
    reference: str | None = typer.Option(
        None,
        "--reference",
        help="Reference: another log (file/directory) or a stored run (id, latest, latest~N). "
        "Default: the equally long window just before the current one.",
    ),
    reference_since: str | None = typer.Option(
        None, "--reference-since", help="Start of the reference window."
    ),
    reference_until: str | None = typer.Option(
        None, "--reference-until", help="End of the reference window."
    ),
    slot: str | None = typer.Option(None, "--slot", help="With a stored run: which run of it (draft@k=4)."),
    level: float = typer.Option(0.01, "--level", help="Significance level (Holm-adjusted across domains)."),
    min_requests: int = typer.Option(20, "--min-requests", help="Requests each side needs to be tested."),
    json_out: Path | None = typer.Option(None, "--json", help="Write every comparison as JSON."),
    *,
    options: dict[str, Any],
) -> None:
    """Compare α and τ per domain between a window and a reference; exit 1 on a significant drop, 3 when
    there is nothing to compare."""
    from specmeter.monitoring.domains import group_key
    from specmeter.monitoring.drift import align_domains, compare_windows
    from specmeter.monitoring.durations import parse_seconds
    from specmeter.monitoring.requestlog import FieldMapError, parse_fields
    from specmeter.monitoring.view_drift import render_drift, when
    from specmeter.store.sources import is_run_ref

    store = options["store"]
    if not 0.0 < level < 1.0:
        fail(f"--level must be in (0, 1), got {level:g}")
    if min_requests < 2:
        fail(f"--min-requests must be >= 2, got {min_requests}")
    if slot is not None and (reference is None or not is_run_ref(reference)):
        fail("--slot applies to --reference RUN (a stored run)")
    try:
        field_map = parse_fields(fields)
    except FieldMapError as e:
        fail(str(e))
    length = parse_option(lambda text: parse_seconds(text, "--window"), window, ValueError)
    check_outputs({}, {"--requests": requests})  # a name too long for the file system: one line, not errno 36
    if json_out is not None:
        inputs = [
            p for s in (requests, Path(reference or requests)) for p in (s.rglob("*") if s.is_dir() else [s])
        ]
        check_outputs({"--json": json_out}, {"--requests/--reference": inputs, "--store": store})
    current_all = _read(requests, field_map, "--requests")
    stamped = [r.time for r in current_all if r.time is not None]
    end = _time(until, "--until") if until is not None else (max(stamped) + 1e-6 if stamped else None)
    start = _since(since, end) if since is not None else (None if end is None else end - length)
    ref_start: float | None
    ref_end: float | None
    if reference is None:
        if end is None or start is None:
            fail("--requests: no request has a time stamp; give --reference to compare against")
        ref_start = _time(reference_since, "--reference-since") if reference_since else start - length
        ref_end = _time(reference_until, "--reference-until") if reference_until else start
        reference_obs = _between(current_all, ref_start, ref_end)
        ref_name = f"{when(ref_start)} → {when(ref_end)}"
    elif is_run_ref(reference):
        from specmeter.store import StoreError
        from specmeter.store.observations import stored_observations

        path = store_path(store)
        reference_obs = parse_option(lambda ref: stored_observations(path, ref, slot), reference, StoreError)
        ref_name = f"stored run {reference}"
        ref_start = ref_end = None
    else:
        ref_path = Path(reference)
        reference_obs = _read(ref_path, field_map, "--reference")
        ref_start = _time(reference_since, "--reference-since") if reference_since else None
        ref_end = _time(reference_until, "--reference-until") if reference_until else None
        if ref_start is not None or ref_end is not None:
            reference_obs = _between(reference_obs, ref_start, ref_end)
        ref_name = str(ref_path)
    current = _between(current_all, start, end) if stamped else current_all
    if not current:
        fail("the current window holds no request: nothing to compare", code=EXIT_NOTHING_TO_COMPARE)
    if not reference_obs:
        fail(f"the reference ({ref_name}) holds no request: nothing to compare", code=EXIT_NOTHING_TO_COMPARE)
    reference_obs, current = align_domains(reference_obs, current)  # legal vs legal/… (docs/monitoring.md)
    rows = compare_windows(reference_obs, current, level=level, min_requests=min_requests)
    only = sorted({group_key(*r.group) for r in current} ^ {group_key(*r.group) for r in reference_obs})
    render_drift(rows, start=start, end=end, current=len(current), reference_name=ref_name,
                 reference=len(reference_obs), only=only, console=console)  # fmt: skip
    if not rows:
        fail("no domain appears in both windows: nothing to compare", code=EXIT_NOTHING_TO_COMPARE)
    if json_out is not None:
        from specmeter.report.files import write_json_atomic

        data: dict[str, Any] = {
            "current": {"start": start, "end": end, "requests": len(current)},
            "reference": {
                "name": ref_name,
                "start": ref_start,
                "end": ref_end,
                "requests": len(reference_obs),
            },
            "level": level,
            "test": "request-level ratio z-test (delta method), Holm-adjusted",
            "comparisons": [r.as_dict() for r in rows],
        }
        write_json_atomic(json_out, data, marker="drift")
    if any(r.direction == "drop" for r in rows):
        raise typer.Exit(EXIT_DROP)
