"""The monitor's exporter says when α and β rest on an estimated D (TGI: no drafted-token counter)."""

from __future__ import annotations

from specmeter.monitoring.acceptance import ServerAcceptance
from specmeter.monitoring.exporter import EXPORTED_METRICS, MonitorExporter
from specmeter.monitoring.promtext import parse_metrics
from specmeter.monitoring.windows import Window

TGI = ServerAcceptance(
    "tgi", "counters", steps=60, drafted_tokens=240, accepted_tokens=140, rejections=20,
    acceptance_rate=140 / 240, acceptance_length=1 + 140 / 60, beta=0.8, k=4,
    drafted_estimated=True, estimated=("drafted_tokens", "acceptance_rate", "rejections", "beta"),
)  # fmt: skip
VLLM = ServerAcceptance(
    "vllm", "counters", steps=10, drafted_tokens=40, accepted_tokens=30, acceptance_rate=0.75,
    acceptance_length=4.0, k=4,
)  # fmt: skip


def _samples(text: str, name: str) -> dict[str, float]:
    return {dict(s.labels)["target"]: s.value for s in parse_metrics(text).samples if s.name == name}


def test_estimated_alpha_is_marked_beside_it() -> None:
    exporter = MonitorExporter()
    exporter.observe_window(Window("tgi", "tgi", 0.0, 5.0, TGI))
    exporter.observe_window(Window("vllm", "vllm", 0.0, 5.0, VLLM))
    exporter.observe_window(Window("none", "sglang", 0.0, 5.0, None))
    text = exporter.text()
    assert _samples(text, "specmeter_drafted_estimated") == {"tgi": 1.0, "vllm": 0.0}
    assert set(_samples(text, "specmeter_beta")) == {"tgi"}  # TGI's β is exported, and so it is estimated
    assert "specmeter_drafted_estimated" in EXPORTED_METRICS
    # The help text is true of every β exported (TGI's rests on D = S·k, not on full drafts measured).
    beta_help = next(line for line in text.splitlines() if line.startswith("# HELP specmeter_beta "))
    assert "full drafts only" not in beta_help and "specmeter_drafted_estimated" in beta_help
    # A window without figures takes the marker away with α.
    exporter.observe_window(Window("tgi", "tgi", 5.0, 10.0, None))
    assert "tgi" not in _samples(exporter.text(), "specmeter_drafted_estimated")
