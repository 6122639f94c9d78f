"""A command's defaults are the config's: no measuring or load command restates one (issue 11).

The defaults are read off the (click) commands typer builds from the app, i.e. what ``--help`` shows and
what a run gets when the option is not given, and compared with the config classes' attributes. A
command that declared its own ``--max-tokens 64`` (or an options table that wrote ``default=128`` where
the config says otherwise) fails here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import typer.main
from typer.core import TyperGroup, TyperOption

from specmeter.cli.app import app
from specmeter.cli.common import parse_int_list
from specmeter.load.config import LoadConfig
from specmeter.measuring import MeasureConfig, VllmOptions
from specmeter.sweep.config import SWEEP_K, SearchSettings, SweepConfig

# The shared measuring options that every one of bench, tune and select must have (cli/options.py).
MEASURE_OPTIONS = {
    "temperature", "top_p", "max_tokens", "limit", "seed", "json_out", "csv_out", "log_out", "dtype",
    "device", "implementation", "trust_remote_code", "cost_repeats", "threads", "strict",
}  # fmt: skip
VLLM_OPTIONS = {f.name for f in dataclasses.fields(VllmOptions)} | {"backend"}
# The options load and sweep share (cli/load_options.py), with LoadConfig fields of the same name.
LOAD_OPTIONS = {
    "limit", "warmup", "warmup_per_level", "max_tokens", "top_p", "model", "api_key", "stall_timeout",
    "request_timeout", "client_processes", "seed", "api",
}  # fmt: skip
# load's own options that are LoadConfig fields of the same name.
LOAD_ONLY = {
    "arrival", "trace_speed", "duration", "request_seeds", "chunk_counts", "baseline_model", "k", "blocks",
    "domain_metadata",
}  # fmt: skip
# sweep's own options: (option parameter, the default it must have).
SWEEP_ONLY = {
    "temperature": LoadConfig.temperature,
    "method": SweepConfig.method,
    "startup_timeout": SweepConfig.startup_timeout,
    "stop_timeout": SweepConfig.stop_grace,
    "validate": SweepConfig.validate,
    "target": SweepConfig.slo_target,
    "max_steps": SearchSettings.max_steps,
}


def _defaults(name: str) -> dict[str, Any]:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    command = group.commands[name]
    return {p.name: p.default for p in command.params if isinstance(p, TyperOption) and p.name}


def _class_defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


@pytest.mark.parametrize(("command", "vllm"), [("bench", True), ("tune", True), ("select", False)])
def test_measuring_commands_take_their_defaults_from_the_config(command: str, vllm: bool) -> None:
    cli = _defaults(command)
    expected = {**_class_defaults(MeasureConfig), **(_class_defaults(VllmOptions) if vllm else {})}
    wanted = MEASURE_OPTIONS | (VLLM_OPTIONS if vllm else set())
    assert wanted <= cli.keys(), wanted - cli.keys()
    assert wanted <= expected.keys(), wanted - expected.keys()
    differ = {name: (cli[name], expected[name]) for name in wanted if cli[name] != expected[name]}
    assert differ == {}, f"{command}: CLI default vs config default: {differ}"
    if not vllm:
        assert not VLLM_OPTIONS & cli.keys(), f"{command} has no vLLM backend"


def test_bench_k_default_is_the_configs() -> None:
    assert parse_int_list(_defaults("bench")["k"], "--k") == list(MeasureConfig.k)


@pytest.mark.parametrize("command", ["load", "sweep"])
def test_load_commands_take_their_defaults_from_load_config(command: str) -> None:
    cli = _defaults(command)
    expected = _class_defaults(LoadConfig)
    assert cli.keys() >= LOAD_OPTIONS, LOAD_OPTIONS - cli.keys()
    differ = {name: (cli[name], expected[name]) for name in LOAD_OPTIONS if cli[name] != expected[name]}
    assert differ == {}, f"{command}: CLI default vs LoadConfig default: {differ}"


def test_load_takes_its_own_defaults_from_load_config() -> None:
    cli, expected = _defaults("load"), _class_defaults(LoadConfig)
    differ = {name: (cli[name], expected[name]) for name in LOAD_ONLY if cli[name] != expected[name]}
    assert differ == {}, f"load: CLI default vs LoadConfig default: {differ}"
    assert float(cli["temperature"]) == LoadConfig.temperature


def test_sweep_takes_its_own_defaults_from_sweep_config() -> None:
    cli = _defaults("sweep")
    differ = {name: (cli[name], value) for name, value in SWEEP_ONLY.items() if cli[name] != value}
    assert differ == {}, f"sweep: CLI default vs SweepConfig default: {differ}"
    assert [int(k) for k in cli["ks"].split(",")] == list(SWEEP_K)
