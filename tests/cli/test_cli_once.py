"""The command line itself: ``--version`` answers, and no option given twice silently loses a value.

click (and so typer) keeps the last value of a single-value option given twice; every command of the app
refuses that instead (``cli.options.OnceCommand``), which the sweep below checks option by option.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter import __version__
from specmeter.cli.app import app
from specmeter.cli.options import repeated_option

runner = CliRunner()


def test_version_prints_the_version_and_exits_zero() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"specmeter {__version__}"


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group (typer ships its own click classes)
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = list(_commands(typer.main.get_command(app)))
SINGLE = [
    pytest.param(path, option, id=f"{' '.join(path)} {option.opts[-1]}")
    for path, command in COMMANDS
    for option in command.params
    if option.param_type_name == "option" and not option.multiple and not option.count
]


def test_every_command_is_covered() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"bench", "select", "load", "monitor", "drift", "compare", "runs list", "runs show"} <= names
    assert len(SINGLE) > 200  # every single-value option of every command is tried below


@pytest.mark.parametrize(("path", "option"), SINGLE)
def test_a_single_value_option_given_twice_is_refused(
    path: tuple[str, ...], option: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Parsed by the command itself (what `specmeter …` runs), without building the app again per option.
    flag = option.opts[-1]
    once = [flag] if option.is_flag else [flag, "1"]
    twice = [flag] if option.is_flag else [flag, "2"]
    with pytest.raises(typer.Exit) as info:
        dict(COMMANDS)[path].make_context(" ".join(path), [*once, *twice])
    assert info.value.exit_code == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert line.startswith(f"error: {flag} given twice"), line
    if not option.is_flag:
        assert f"({flag} 1, then {flag} 2)" in line


@pytest.mark.parametrize(
    ("path", "flag"),
    [
        (("load",), "--endpoint"),  # load takes several --prompts (as bench does)
        (("monitor",), "--history"),
        (("runs", "list"), "--store"),
        (("drift",), "--since"),
    ],
    ids=["load", "monitor", "runs list", "drift"],
)
def test_the_command_line_refuses_it_end_to_end(path: tuple[str, ...], flag: str) -> None:
    result = runner.invoke(app, [*path, flag, "a.jsonl", flag, "b.jsonl"])
    assert_usage_error(result, f"{flag} given twice ({flag} a.jsonl, then {flag} b.jsonl)")


def test_repeated_spellings_and_inline_values_count_as_one_option() -> None:
    command = dict(COMMANDS)[("bench",)]
    assert repeated_option(command, ["--limit=5", "--limit", "7"]) is not None
    assert repeated_option(command, ["--quiet", "-q"]) is not None
    assert repeated_option(command, ["--store", "a", "--no-store"]) is None  # two options, not one twice
    # An option's value is not an option; neither is anything after "--".
    assert repeated_option(command, ["--seed", "1", "--log", "--seed"]) is None
    assert repeated_option(command, ["--seed", "1", "--", "--seed", "2"]) is None
    # Options that take several values keep taking them.
    assert (
        repeated_option(command, ["--draft", "a", "--draft", "b", "--prompts", "x", "--prompts", "y"]) is None
    )


def test_a_repeated_option_is_refused_before_anything_runs() -> None:
    result = runner.invoke(app, ["roi", "--speedup", "1.5", "--speedup", "2", "--monthly-tokens", "1B"])
    assert_usage_error(result, "--speedup given twice (--speedup 1.5, then --speedup 2)")
