"""The command blocks of README.md and docs/*.md, and the ``doc-test`` markers that say how each is tested.

A *command block* is a fenced block whose language is ``sh``, ``bash``, ``shell`` or ``console``, or a block
without a language one of whose lines starts with ``specmeter `` (an output block shows no command; a
``python`` or ``json`` block is not a shell block). Every command block carries a marker: an HTML comment
on the lines just before its opening fence (invisible on GitHub), in this grammar::

    <!-- doc-test: KIND [; DIRECTIVE]... -->

    KIND
      run                 run every command of the block as written, in order, in the document's working
                          directory (tests/docs/test_doc_commands.py says what it holds); each must exit 0
      check: REASON       not run, for REASON (a server at a named host, placeholders such as T and D,
                          optional [arguments], a server that runs until stopped); every specmeter command's
                          subcommand and options are checked against its parser
      script PATH         the block summarises the script PATH (relative to the repository root): the slow
                          test runs PATH at its smoke size, and every specmeter command of the block must
                          appear in PATH with the same subcommand and options
      needs NAME          needs vllm, llamacpp, prometheus, ray or make (what CI runs as `make …`): skipped
                          here, naming NAME; options checked as for check

    DIRECTIVES (run only)
      smoke `OLD` => `NEW`   the documented smoke size: OLD (which must occur in the block) becomes NEW
      before `CMD`           run CMD first, in the same directory (it makes an input the block reads)
      exit N[,M…]            the exit codes a command of the block may end with (default 0)

A marker may span lines. Backslash-newline continues a command, and so does an indented line (a synopsis'
wrapped options); ``# …`` outside quotes is a comment. Nothing here imports specmeter.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGS = frozenset({"sh", "bash", "shell", "console"})
KINDS = ("run", "check", "script", "needs")
NEEDS = ("vllm", "llamacpp", "prometheus", "ray", "make")

_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
_MARKER = re.compile(r"<!--\s*doc-test:(.*?)-->", re.S)
_SMOKE = re.compile(r"smoke\s+`([^`]+)`\s*=>\s*`([^`]*)`$")
_BEFORE = re.compile(r"before\s+`([^`]+)`$")
_EXIT = re.compile(r"exit\s+(\d+(?:\s*,\s*\d+)*)$")


class MarkerError(ValueError):
    """A marker that does not follow the grammar (the message names file:line)."""


@dataclass(frozen=True)
class Marker:
    kind: str
    arg: str = ""  # check's reason, script's path, needs' name
    smoke: tuple[tuple[str, str], ...] = ()
    before: tuple[str, ...] = ()
    exit_codes: frozenset[int] = frozenset({0})


@dataclass(frozen=True)
class Command:
    line: int  # 1-based line of the command's first line in the document
    text: str  # one logical line: continuations joined, comments removed

    @property
    def is_specmeter(self) -> bool:
        return self.text.startswith("specmeter ") or self.text == "specmeter"


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: Marker | None
    marker_error: str | None = None
    commands: list[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        try:
            shown = self.path.relative_to(ROOT)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"

    def smoked(self) -> list[Command]:
        """The commands with the marker's smoke replacements applied (each OLD must occur)."""
        text = self.text
        for old, new in self.marker.smoke if self.marker else ():
            if old not in text:
                raise MarkerError(f"{self.where}: smoke `{old}` does not occur in the block")
            text = text.replace(old, new)
        return commands(text, self.line + 1)


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def parse_marker(text: str, where: str) -> Marker:
    text = " ".join(text.split())
    if text.startswith("check"):  # the reason is free text, semicolons included
        kind, _, reason = text.partition(":")
        if kind.strip() != "check" or not reason.strip():
            raise MarkerError(f"{where}: `check` needs a reason (check: why it is not run)")
        return Marker("check", reason.strip())
    parts = [p.strip() for p in text.split(";") if p.strip()]
    if not parts:
        raise MarkerError(f"{where}: empty doc-test marker")
    head, rest = parts[0], parts[1:]
    kind, _, arg = head.partition(" ")
    kind, arg = kind.strip(), arg.strip()
    if kind not in KINDS:
        raise MarkerError(f"{where}: doc-test kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "script" and not (ROOT / arg).is_file():
        raise MarkerError(f"{where}: script {arg!r} is not a file of the repository")
    if kind == "needs" and arg not in NEEDS:
        raise MarkerError(f"{where}: needs {arg!r} is not one of {', '.join(NEEDS)}")
    if kind == "run" and arg:
        raise MarkerError(f"{where}: `run` takes no argument (directives follow a ';')")
    if rest and kind != "run":
        raise MarkerError(f"{where}: directives ({rest[0]!r}) apply to `run` only")
    smoke: list[tuple[str, str]] = []
    before: list[str] = []
    codes = frozenset({0})
    for directive in rest:
        if m := _SMOKE.match(directive):
            smoke.append((m[1], m[2]))
        elif m := _BEFORE.match(directive):
            before.append(m[1])
        elif m := _EXIT.match(directive):
            codes = frozenset(int(c) for c in m[1].split(","))
        else:
            raise MarkerError(
                f"{where}: directive {directive!r} is not smoke `OLD` => `NEW`, before `CMD` or exit N"
            )
    return Marker(kind, arg, tuple(smoke), tuple(before), codes)


def _strip_comments(text: str) -> str:
    """``# …`` to the end of the line, outside quotes, where ``#`` starts a word (as the shell reads it)."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def commands(text: str, first_line: int, *, indented_continues: bool = True) -> list[Command]:
    """The block's logical commands: backslash-newline and (in a doc, not in a script, where a loop's body is
    indented) an indented line continue the previous one."""
    out: list[tuple[int, str]] = []
    pending = False  # the previous line ended with a backslash
    for n, raw in enumerate(_strip_comments(text).split("\n")):
        line = raw.rstrip()
        continued = line.endswith("\\")
        body = line[:-1].rstrip() if continued else line
        if not body.strip():
            pending = continued and pending
            continue
        if out and (pending or (indented_continues and raw[:1].isspace())):
            out[-1] = (out[-1][0], f"{out[-1][1]} {body.strip()}")
        else:
            out.append((first_line + n, body.strip()))
        pending = continued
    return [Command(line, text) for line, text in out]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m[2], m[3].lower(), i
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        body = "\n".join(lines[i + 1 : j])
        i = j + 1
        is_command = lang in SHELL_LANGS or (
            not lang and any(x.strip().startswith("specmeter ") for x in body.split("\n"))
        )
        if not is_command:
            continue
        block = Block(path, start + 1, lang, body, None)
        # The marker: the comment ending on the last non-blank line before the fence.
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and lines[k].rstrip().endswith("-->"):
            top = k
            while top >= 0 and "<!--" not in lines[top]:
                top -= 1
            comment = "\n".join(lines[max(top, 0) : k + 1])
            mm = _MARKER.search(comment)
            if mm:
                try:
                    block.marker = parse_marker(mm[1], block.where)
                except MarkerError as e:
                    block.marker_error = str(e)
        block.commands = commands(body, start + 2)
        found.append(block)
    return found


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [b for doc in documents(root) for b in blocks(doc)]


def option_names(text: str) -> tuple[list[str], list[str]]:
    """(words before the first option, the ``--option`` names) of a specmeter command line, synopsis
    brackets and ``|`` alternatives included; quoted arguments (launch templates) are one word."""
    try:
        words = shlex.split(text.replace("[", " ").replace("]", " "))
    except ValueError:  # an unbalanced quote in a synopsis: the words before it are what can be checked
        words = text.replace("[", " ").replace("]", " ").split()
    head: list[str] = []
    opts: list[str] = []
    seen_option = False
    for w in words[1:]:
        if w.startswith("--"):
            seen_option = True
            opts.append(w.split("=", 1)[0])
        elif not seen_option:
            head.append(w)
    return head, opts
