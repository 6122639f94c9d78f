"""`bundled:NAME`: every path option of every command takes the bundled models and golden sets (issue 32)."""

from __future__ import annotations

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter.bundled.models import bundled_model
from specmeter.bundled.names import BundledNameError, bundled_names, resolve_bundled, resolve_bundled_args
from specmeter.cli.app import app
from specmeter.workloads import bundled_prompts

runner = CliRunner()


def test_names_resolve_to_the_shipped_paths() -> None:
    models, sets = bundled_names()
    assert models == ("target", "draft-general", "draft-tiny", "draft-legal", "eagle-legal")
    assert {"general", "legal", "smoke"} <= set(sets)
    for name in models:
        assert (
            resolve_bundled(name) == bundled_model(name) and (resolve_bundled(name) / "config.json").is_file()
        )
    for name in sets:
        assert resolve_bundled(name) == bundled_prompts(name) and resolve_bundled(name).is_file()
    with pytest.raises(BundledNameError, match=r"bundled:nope: .*models: target, .*golden sets: .*legal"):
        resolve_bundled("nope")


def test_a_method_specs_head_takes_a_bundled_name() -> None:
    head = str(bundled_model("eagle-legal"))
    args = ["--draft", "eagle:head=bundled:eagle-legal", "--draft=eagle:head=bundled:eagle-legal",
            "eagle:head=xbundled:eagle-legal", "note head=bundled:eagle-legal and more"]  # fmt: skip
    assert resolve_bundled_args(args) == [
        "--draft", f"eagle:head={head}", f"--draft=eagle:head={head}",
        "eagle:head=xbundled:eagle-legal", "note head=bundled:eagle-legal and more",
    ]  # fmt: skip
    with pytest.raises(BundledNameError, match="bundled:nope"):
        resolve_bundled_args(["eagle:head=bundled:nope"])


def test_only_whole_arguments_are_replaced() -> None:
    target, legal = str(bundled_model("target")), str(bundled_prompts("legal"))
    args = ["bench", "--target", "bundled:target", "--prompts=bundled:legal", "--note", "bundled: a note",
            "--launch", "specmeter serve --target bundled:target", "xbundled:target"]  # fmt: skip
    assert resolve_bundled_args(args) == [
        "bench", "--target", target, f"--prompts={legal}", "--note", "bundled: a note",
        "--launch", "specmeter serve --target bundled:target", "xbundled:target",
    ]  # fmt: skip


def test_commands_take_bundled_names_and_refuse_unknown_ones() -> None:
    ok = runner.invoke(app, ["compat", "bundled:target", "bundled:draft-legal", "--prompts", "bundled:smoke"])
    assert ok.exit_code == 0, ok.output
    assert "COMPATIBLE" in ok.stdout
    bad = runner.invoke(app, ["compat", "bundled:target", "bundled:draft-huge"])
    assert_usage_error(bad, "bundled:draft-huge: no bundled model or golden set of that name", "draft-legal")
