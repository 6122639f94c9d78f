"""Method specs that parse but cannot run (issue 39): keys out of the range the method runs in are one line
for every command, and ``compat TARGET SPEC`` answers what the commands would do with the spec."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from replay_results import write_log
from specmeter.bundled.models import bundled_model
from specmeter.cli.app import app
from specmeter.exitcodes import EXIT_CANNOT_CHECK, EXIT_INCOMPATIBLE, EXIT_OK
from specmeter.methods import MethodSpecError, parse_candidate

runner = CliRunner()
TARGET = bundled_model("target")
HEAD = bundled_model("eagle-legal")


@pytest.mark.parametrize("spec", ["suffix:factor=1e39", "suffix:offset=-1e308", "suffix:factor=1e308",
                                  "suffix:offset=3e38"])  # fmt: skip
def test_suffix_keys_beyond_float32_are_refused_where_they_are_parsed(spec: str, tmp_path: Path) -> None:
    with pytest.raises(MethodSpecError, match="must be"):
        parse_candidate(spec)
    log = write_log(tmp_path / "log.jsonl")
    result = runner.invoke(app, ["replay", "--from", str(log), "--target", str(TARGET), "--model", "target",
                                 "--method", spec, "--no-store", "--quiet"])  # fmt: skip
    assert_usage_error(result, "--method", "suffix", "must be")


def test_suffix_keys_at_their_bounds_still_replay(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl")
    result = runner.invoke(app, ["replay", "--from", str(log), "--target", str(TARGET), "--model", "target",
                                 "--method", "suffix:factor=1000000,offset=-1000000", "--no-store",
                                 "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output


def _compat(spec: str) -> tuple[int, str]:
    result = runner.invoke(app, ["compat", str(TARGET), spec])
    assert "Traceback" not in result.output and (
        result.exception is None or isinstance(result.exception, SystemExit)
    )
    return result.exit_code, result.output


def _head(tmp_path: Path, top: dict[str, object] | None = None, **layer: object) -> Path:
    head = tmp_path / "head"
    shutil.copytree(HEAD, head)
    config = json.loads((head / "config.json").read_text("utf-8"))
    config["transformer_layer_config"].update(layer)
    config.update(top or {})
    (head / "config.json").write_text(json.dumps(config), "utf-8")
    return head


def test_compat_runs_layers_n_against_the_targets_layers() -> None:
    layers = json.loads((TARGET / "config.json").read_text("utf-8"))["num_hidden_layers"]
    code, out = _compat(f"layers:n={layers - 1}")
    assert code == EXIT_OK and "compatible" in out
    code, out = _compat("layers:n=999")
    assert code == EXIT_INCOMPATIBLE and f"1 … {layers - 1}" in out


def test_compat_loads_the_head_it_is_given(tmp_path: Path) -> None:
    code, out = _compat(f"eagle:head={HEAD}")
    assert code == EXIT_OK and "compatible" in out
    code, out = _compat("eagle:head=/dev/zero")
    assert code == EXIT_CANNOT_CHECK and "/dev/zero" in out
    truncated = tmp_path / "truncated"
    shutil.copytree(HEAD, truncated)
    with open(truncated / "model.safetensors", "r+b") as fh:
        fh.truncate(100_000)
    code, out = _compat(f"eagle:head={truncated}")
    assert code == EXIT_CANNOT_CHECK and "truncated" in out


def test_compat_refuses_a_head_of_another_target(tmp_path: Path) -> None:
    vocab = json.loads((HEAD / "config.json").read_text("utf-8"))["transformer_layer_config"]["vocab_size"]
    head = _head(tmp_path, {"draft_vocab_size": vocab + 7}, vocab_size=vocab + 7)
    code, out = _compat(f"eagle:head={head}")
    assert code == EXIT_INCOMPATIBLE and "another target" in out
    shutil.rmtree(head)
    code, out = _compat(f"eagle:head={_head(tmp_path, {'eagle_aux_hidden_state_layer_ids': [2, 5, 70]})}")
    assert code == EXIT_INCOMPATIBLE and "reads target layers" in out


def test_compat_refuses_a_head_whose_tensors_are_not_its_configs(tmp_path: Path) -> None:
    config = json.loads((HEAD / "config.json").read_text("utf-8"))["transformer_layer_config"]
    code, out = _compat(f"eagle:head={_head(tmp_path, intermediate_size=config['intermediate_size'] * 2)}")
    assert code == EXIT_INCOMPATIBLE and "mlp" in out


@pytest.mark.parametrize("command", ["serve", "bench"])
def test_serve_and_bench_refuse_a_suffix_key_beyond_float32(command: str) -> None:
    args = [command, "--target", str(TARGET), "--draft", "suffix:factor=1e308"]
    if command == "bench":
        args += ["--prompts", "bundled:legal", "--no-store"]
    assert_usage_error(runner.invoke(app, args), "--draft", "factor")
