"""Progress when the output is not a terminal (issue 38: 31 minutes of silence when stderr went to a file)."""

from __future__ import annotations

import io

from rich.console import Console

from specmeter.cli.common import LineTask, RichReporter


def test_a_line_every_few_seconds_with_the_time_left() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    now = [100.0]
    task = LineTask(console, "replaying", 10, every=5.0, clock=lambda: now[0])
    task.advance(1)  # under 5 s: nothing yet
    assert out.getvalue() == ""
    now[0] = 160.0
    task.advance(1)
    now[0] = 162.0
    task.advance(1)  # 2 s after the last line: none
    assert out.getvalue().splitlines() == ["replaying: 2/10 (20%), 1 min 00 s, about 4 min 00 s left"]


def test_the_reporter_uses_lines_off_a_terminal_and_nothing_when_quiet() -> None:
    off = Console(file=io.StringIO(), force_terminal=False)
    with RichReporter(off).task("x", 3) as task:
        assert isinstance(task, LineTask)
    with RichReporter(off, quiet=True).task("x", 3) as task:
        assert not isinstance(task, LineTask)
    on = Console(file=io.StringIO(), force_terminal=True)
    with RichReporter(on).task("x", 3) as task:
        assert not isinstance(task, LineTask)
