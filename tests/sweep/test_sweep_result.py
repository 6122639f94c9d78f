"""sweep's reading of its own grid: the validation rule for a schedule that collapses (vLLM #49548), at the
grid's levels and at the schedule's switch points between them (the best static k interpolated)."""

from __future__ import annotations

import pytest

from specmeter.engine.schedule import KSchedule
from specmeter.load.config import LoadConfig, Phase
from specmeter.sweep.config import ServerConfig, SweepConfig
from specmeter.sweep.result import below_best_static, build_view, interpolated_static
from specmeter.sweep.state import ConfigRun, SweepRun
from specmeter.workloads import load_workload
from specmeter.workloads.bundled import bundled_prompts
from sweep_states import BASE, drifted_sweep, role


def test_a_schedule_collapses_only_when_its_whole_interval_is_below_the_best_static_k() -> None:
    best = {"k": 4, "e": 1.6, "e_ci": [1.4, 1.8]}
    assert below_best_static([0.7, 0.9], best) is True  # vLLM #49548: the schedule fell to 0.8x
    assert below_best_static([1.2, 1.45], best) is False  # overlaps the best static k's interval
    assert below_best_static([1.2, 1.5], {"k": 4, "e": 1.6}) is True  # no interval: against its E
    assert below_best_static(None, best) is False  # too few requests to say
    assert below_best_static([0.5, 0.6], None) is None  # nothing to compare with


def _cell(k: int, level: str, e: float, ci: list[float] | None) -> dict[str, object]:
    return {"run": f"k={k}", "k": k, "level": level, "e": e, "e_ci": ci, "error": None}


def test_the_best_static_k_between_two_grid_levels_is_interpolated_per_k() -> None:
    cells = [
        _cell(4, "c=4", 1.6, [1.4, 1.8]), _cell(4, "c=8", 1.2, [1.0, 1.4]),
        _cell(2, "c=4", 1.3, [1.2, 1.4]), _cell(2, "c=8", 1.4, [1.2, 1.6]),
        _cell(6, "c=4", 1.7, None),  # not measured at c=8: no line to interpolate on
    ]  # fmt: skip
    best = [{"level": "c=4", "concurrency": 4, "k": 6}, {"level": "c=8", "concurrency": 8, "k": 2}]
    at5 = interpolated_static(5, cells, best)
    assert at5 is not None and at5["k"] == 4 and at5["between"] == ["c=4", "c=8"]
    assert at5["e"] == pytest.approx(1.5) and at5["e_ci"] == pytest.approx([1.3, 1.7])
    at7 = interpolated_static(7, cells, best)  # k=4 falls to 1.3 at 7, k=2 rises to 1.375
    assert at7 is not None and at7["k"] == 2 and at7["e"] == pytest.approx(1.375)
    assert at7["e_ci"] == pytest.approx([1.2, 1.55])
    assert interpolated_static(7, [c | {"e": 0.9} for c in cells], best) == {
        "k": 0, "e": 1.0, "e_ci": None, "between": ["c=4", "c=8"]
    }  # fmt: skip
    assert interpolated_static(9, cells, best) is None  # beyond the measured levels
    assert below_best_static([0.7, 0.9], at5) is True


def _run(sc: ServerConfig, name: str, e: dict[int, float]) -> ConfigRun:
    """A configuration's run whose E against the baseline's latencies is ``e`` per concurrency."""
    run = ConfigRun(sc, name, status="ok")
    for c, speedup in e.items():
        phase = Phase(concurrency=c)
        run.phases.append(phase)
        run.levels[phase.label] = role([BASE[i] / speedup * (1 + 0.04 * (i % 4)) for i in range(16)])
    return run


def test_validate_flags_a_collapse_at_a_switch_point_between_grid_levels() -> None:
    schedule = KSchedule.parse([[1, 5, 4], [6, 8, 0]])
    base_sc, spec_sc = ServerConfig(0, template="t {port}"), ServerConfig(4, template="t {port}")
    prompts = load_workload(bundled_prompts("legal")).prompts
    cfg = SweepConfig(
        load=LoadConfig(endpoint="", prompts=prompts, phases=[Phase(concurrency=4), Phase(concurrency=8)]),
        configs=[base_sc, spec_sc],
    )
    base = ConfigRun(base_sc, "k=0", status="ok")
    end = ConfigRun(base_sc, "k=0 (end)", status="ok")
    for c in (4, 5, 8):
        for run in (base, end) if c != 5 else (end,):  # the last baseline run covers the ramp
            run.phases.append(Phase(concurrency=c))
            run.levels[f"c={c}"] = role(BASE, "baseline")
    static = _run(spec_sc, "k=4", {4: 1.6, 8: 1.2})
    # The schedule holds up at the grid level c=4 but falls to 0.8x at c=5, where k is still 4.
    ran = _run(ServerConfig(4, template="t {port}", schedule=schedule), "schedule", {4: 1.55, 5: 0.8})
    state = SweepRun([base, static, ran, end])
    section = build_view(cfg, state).section
    validate = section["validate"]
    e4, e8 = (next(c["e"] for c in section["cells"] if c["run"] == "k=4" and c["level"] == lv)
              for lv in ("c=4", "c=8"))  # fmt: skip
    rows = {r["level"]: r for r in validate["levels"]}
    assert rows["c=4"]["best_static_interpolated"] is False and rows["c=4"]["below_best_static"] is False
    at5 = rows["c=5"]
    assert at5["best_static_interpolated"] is True and at5["best_static_between"] == ["c=4", "c=8"]
    assert at5["best_static_k"] == 4 and at5["k_scheduled"] == 4
    assert at5["best_static_e"] == pytest.approx(e4 + (e8 - e4) / 4)
    assert at5["e_ci"][1] < at5["best_static_e_ci"][0]
    assert at5["below_best_static"] is True
    assert validate["collapse"] == ["c=5"]


def test_decode_only_e_is_against_both_baseline_runs_like_e() -> None:
    """Issue 28 (2): e_decode was the first-baseline figure; it is the geometric mean of both, as E."""
    cfg, state = drifted_sweep()
    (cell,) = [c for c in build_view(cfg, state).section["cells"] if c["run"] == "k=4"]
    assert cell["e_first"] == pytest.approx(2.0) and cell["e_end"] == pytest.approx(1.62)
    assert cell["e"] == pytest.approx(1.8)
    # Decode time is latency − TTFT = 3/4 of the latency here, so decode-only E has the same figures.
    assert cell["e_decode"] == pytest.approx(1.8)
    assert cell["e_decode_first"] == pytest.approx(2.0) and cell["e_decode_end"] == pytest.approx(1.62)


def test_a_cells_stored_entry_carries_the_sweeps_e() -> None:
    """Issue 28 (3): the candidate entries (what the store, `runs list`, `report` and `roi RUN` read) carry
    the sweep's E, decode-only E and interval, per group too — not E against the first baseline run."""
    cfg, state = drifted_sweep()
    view = build_view(cfg, state)
    (cell,) = [c for c in view.section["cells"] if c["run"] == "k=4"]
    (entry,) = [e for e in view.entries if e["run"] == "k=4"]
    s = entry["summary"]
    assert s["speedup_measured"] == pytest.approx(cell["e"]) == pytest.approx(1.8)
    assert s["speedup_measured_ci"] == pytest.approx(cell["e_ci"])
    assert s["speedup_measured_decode"] == pytest.approx(1.8)
    for groups in (entry["by_category"], entry["by_input_length"], entry["by_temperature"]):
        assert [g["speedup_measured"] for g in groups.values()] == pytest.approx([1.8])
