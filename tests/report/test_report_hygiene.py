"""The machine's verdict in the console (a prominent line above and below a busy result) and in HTML."""

from __future__ import annotations

import io
from typing import Any

import pytest
from report_fixtures import make_result
from rich.console import Console

from specmeter.hygiene.section import build_section
from specmeter.report.html import render_report
from specmeter.report.view import render_result


def machine(other: float, **extra: Any) -> dict[str, Any]:
    figures = {
        "duration_s": 12.0, "interval_s": 0.5, "samples": 24, "cores": 2, "physical_cores": 2, "threads": 2,
        "own_cores": 1.9 - other, "other_cores": other, "other_share": other / 2,
        "other_cores_peak": other * 1.2, "other_busy_time_share": 1.0 if other > 0.5 else 0.0,
        "steal_share": 0.001, "cpu_pressure_share": 0.3, "load1": {"start": 1.0, "max": 3.0, "end": 2.9},
        "freq_mhz": {"min": 2596.0, "mean": 2596.0, "max_rated": None},
        "top_processes": [{"pid": 4242, "name": "python", "cmd": "python hog.py <&>", "cores": other}],
        "gpu": {"available": False, "reason": "NVML bindings not installed"},
        "sampler": {"cpu_s": 0.012, "share_of_core": 0.001, "per_sample_ms": 0.5, "scans": 3},
        "timeline": {"t_s": [], "other_cores": []},
    }  # fmt: skip
    return build_section(figures, extra.get("stability"))


def text_of(result: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    render_result(result, Console(file=out, width=200, force_terminal=False))
    return [line for line in out.getvalue().splitlines() if line.strip()]


def test_a_busy_run_is_framed_by_the_warning() -> None:
    result = make_result()
    result["hygiene"] = machine(1.0)
    lines = text_of(result)
    assert lines[0].startswith("⚠ MACHINE UNUSABLE: other processes used 1.00 core on average")
    assert lines[-1] == lines[0]
    assert any("machine" in line and "unusable · other processes 1.00 of 2 cores" in line for line in lines)


def test_a_quiet_run_has_no_warning_but_says_so_in_the_header() -> None:
    result = make_result()
    result["hygiene"] = machine(0.02)
    lines = text_of(result)
    assert not any("MACHINE" in line for line in lines)
    assert any("quiet · other processes 0.02 of 2 cores · sampler 0.10% of a core" in line for line in lines)


def test_a_result_without_the_section_renders_as_before() -> None:
    lines = text_of(make_result())
    assert not any("MACHINE" in line or "machine " in line for line in lines)
    assert "Machine during the run" not in render_report(make_result())


def test_drift_notes_are_printed_with_the_verdict() -> None:
    moved = {"requests": 40, "spread": 1.3, "explained_by_acceptance": 0.1, "speedup_first_half": 1.6,
             "speedup_second_half": 0.9, "baseline_drift": 1.4, "drift_p": 0.0005, "blocks": 4,
             "machine_moved": True, "note": "the machine moved during the run: …"}  # fmt: skip
    result = make_result()
    result["hygiene"] = machine(0.02, stability={"draft@k=4": moved})
    lines = text_of(result)
    assert lines[-1] == "⚠ draft@k=4: the machine moved during the run: …"
    html = render_report(result)
    assert "draft@k=4: the machine moved during the run" in html and "<td>0.0005</td>" in html


@pytest.mark.parametrize(("other", "css"), [(0.3, "warn"), (1.5, "bad")])
def test_html_shows_the_verdict_box_and_the_figures(other: float, css: str) -> None:
    result = make_result()
    result["hygiene"] = machine(other)
    html = render_report(result)
    assert f"<p class='verdict {css}'>MACHINE " in html
    assert "<h2>Machine during the run</h2>" in html
    assert "python hog.py &lt;&amp;&gt; (pid 4242)" in html  # escaped
    assert "took 0.50 core or more" in html and "NVML bindings not installed" in html
