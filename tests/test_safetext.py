"""safetext and the CLI's TerminalConsole: outside text never writes a control character (issue 29)."""

from __future__ import annotations

import io

from rich.table import Table
from rich.text import Text

from specmeter.cli.common import TerminalConsole
from specmeter.safetext import markup, printable, valid_text

EVIL = "a\x1b[2Jb\x1b]8;;http://x\x1b\\c\x9bd\x07e\x00f\ud800g"
WORLD = "日本語のテキスト\tعربي\nemoji 😀 — ok"


def test_printable_escapes_controls_and_surrogates_and_keeps_text() -> None:
    assert printable(EVIL) == "a\\x1b[2Jb\\x1b]8;;http://x\\x1b\\c\\x9bd\\x07e\\x00f\\ud800g"
    assert printable(WORLD) == WORLD
    assert printable("a\nb", newlines=False) == "a\\nb"
    assert valid_text("x\ud800y\U0001f600") == "x\\ud800y\U0001f600"


def test_markup_escapes_rich_markup_too() -> None:
    assert markup("[red]x\x1b") == "\\[red]x\\x1b"


def test_the_terminal_console_writes_no_control_character_but_its_own_styles() -> None:
    out = io.StringIO()
    console = TerminalConsole(
        file=out, force_terminal=True, width=300, color_system="standard", highlight=False
    )
    table = Table("name")
    table.add_row(Text(EVIL))
    console.print(table)
    console.print(EVIL, markup=False)
    console.print(f"[bold red]{markup(EVIL)}[/]")
    written = out.getvalue()
    assert "\x1b[2J" not in written and "\x1b]8" not in written and "\x9b" not in written
    assert "\x07" not in written and "\x00" not in written and "\ud800" not in written
    assert written.count("\\x1b[2J") == 3
    assert "\x1b[1;31m" in written  # rich's own style still reaches the terminal
    plain = io.StringIO()
    TerminalConsole(file=plain, width=100).print(WORLD.replace("\t", " "), markup=False)  # rich expands tabs
    assert plain.getvalue() == WORLD.replace("\t", " ") + "\n"
