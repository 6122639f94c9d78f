"""Text from outside the process made safe to store and to show (issue 29, hostile data).

Two ways outside text hurts: a lone surrogate (``"\\ud800"``, legal in a JSON string) is not text, so every
UTF-8 file, SQLite row or terminal it reaches raises ``UnicodeEncodeError``; and a control character
(``ESC [2J``, ``ESC ]8;;`` links, a bare carriage return) printed raw lets a server's error text, a log
line or a run note rewrite the user's terminal. specmeter refuses a surrogate where it enters through a
prompts file or log (``jsonsafe``); text it must keep (a label in a request log, a server's message) goes
through :func:`valid_text` before it is stored, and every outside text goes through :func:`printable`
before it reaches the console: the CLI's consoles apply it to every piece of text they write
(``cli.common.TerminalConsole``), and :func:`markup` is for outside text put inside rich markup. Text in
any language passes all three unchanged.
"""

from __future__ import annotations

import re

__all__ = ["markup", "printable", "valid_text"]

# C0 controls but tab and newline, DEL, C1 controls, and lone surrogates (a str cannot hold a valid pair).
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate written as its escape (``\\ud800``): encodable as UTF-8."""
    return _SURROGATE.sub(_escape, text)


def printable(text: str, *, newlines: bool = True) -> str:
    """``text`` safe for a terminal: control characters (escape, carriage return, backspace, C1) and lone
    surrogates written as escapes (``\\x1b``, ``\\ud800``), tab and (with ``newlines``) newline kept.

    It does not escape rich markup: print the result with ``markup=False`` or through ``rich.markup.escape``.
    """
    out = _UNPRINTABLE.sub(_escape, text)
    return out if newlines else out.replace("\n", "\\n")


def markup(text: object) -> str:
    """Outside text to put inside a rich markup string (``f"[bold]{markup(name)}[/]"``): :func:`printable`,
    and ``[`` escaped so that a category named ``[red]…`` or ``[link=…]`` is shown, not obeyed."""
    from rich.markup import escape

    return escape(printable(str(text)))
