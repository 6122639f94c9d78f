"""One table of exit codes (specmeter.exitcodes): the docs state it, every command's --help lists its rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import COMMANDS, app
from specmeter.exitcodes import EXIT_CODES, codes_for, markdown_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def test_the_docs_state_the_table() -> None:
    assert markdown_table() in DOCS.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", [*COMMANDS, "runs"])
def test_help_lists_the_commands_codes(command: str) -> None:
    out = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400"}).stdout
    text = re.sub(r"\s+", " ", out.replace("│", " "))
    for code in codes_for(command):
        assert f"{code.code} {code.meaning}" in text, (command, code)
    assert {c.code for c in codes_for(command)} >= {2 if command != "compat" else 3, 130}


def test_every_code_has_one_meaning_per_command() -> None:
    for command in [*COMMANDS, "runs"]:
        codes = [c.code for c in codes_for(command)]
        assert len(codes) == len(set(codes)), command
    assert all(c.commands for c in EXIT_CODES)
