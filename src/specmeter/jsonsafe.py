"""JSON from outside the process, parsed into a clear error whatever it holds (issue 29, hostile data).

``json.loads`` turns a syntax error into ``JSONDecodeError``, but three inputs escape it:

* nesting deeper than Python's recursion limit (``[`` × 100000) raises ``RecursionError``, which no reader
  caught: a traceback from ``golden``, ``drift``, ``monitor``, ``report`` and the rest;
* nesting deep enough to parse but too deep for the code that walks the value afterwards (a copy through
  ``json.dumps``, a recursive scrubber) would raise the same error later, far from the file;
* an integer of more than 4300 digits raises a plain ``ValueError`` (Python's int-string limit);
* a lone surrogate (``"\\ud800x"``) parses into a ``str`` that is not text: the tokenizer refuses it
  (``TypeError`` from ``bench`` and ``whatif``), and every UTF-8 file or SQLite row it reaches raises
  ``UnicodeEncodeError``. Text in any language round-trips; a surrogate is no language's text, so it is
  refused where it enters, with its line.

:func:`loads` is ``json.loads`` with all four turned into :class:`JSONLimitError`, a
``json.JSONDecodeError`` (so every reader's ``except json.JSONDecodeError`` and its ``msg``, ``lineno`` and
``colno`` take it exactly as they take a syntax error) whose position is where the limit was passed. The
limit on nesting is :data:`MAX_DEPTH` levels (docs/results.md, "Input limits"); every file specmeter reads
or writes is a handful of levels deep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_DEPTH", "JSONLimitError", "depth", "loads", "raw_decode"]

MAX_DEPTH = 200  # arrays and objects inside each other; the deepest file specmeter knows is ~10 levels

# A JSON string (escapes included) or one bracket: what decides the nesting level at each position.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)
_LONG_NUMBER = re.compile(r"-?\d{4300,}")


class JSONLimitError(json.JSONDecodeError):
    """JSON past a limit: nested deeper than :data:`MAX_DEPTH` levels, a number too long to read, or a
    string that is not text (a lone surrogate). ``end`` is the offset after the refused value where the
    value itself parsed (so a reader of an array can go on with the next element), else None."""

    end: int | None = None


def depth(value: object, *, stop: int | None = None) -> int:
    """How many arrays and objects are nested in ``value`` (a scalar 0, ``[]`` 1, ``[{}]`` 2); iterative, so
    a value of any depth is measured. With ``stop``, the walk ends as soon as the depth passes it."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)] if isinstance(value, list | dict) else []
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if stop is not None and deepest > stop:
            break
        children: Iterable[object] = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        stack.extend((c, level + 1) for c in children if isinstance(c, list | dict))
    return deepest


def _deep_position(text: str, limit: int) -> int:
    """The offset of the bracket that opens level ``limit + 1`` (0 if none does)."""
    level = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            level += 1
            if level > limit:
                return match.start()
        elif token in "]}":
            level -= 1
    return 0


def _too_deep(text: str, limit: int, start: int = 0, end: int | None = None) -> JSONLimitError:
    where = start + _deep_position(text[start:end], limit)
    return JSONLimitError(f"nested deeper than {limit} levels", text, where)


def _too_long(text: str, start: int) -> JSONLimitError:
    found = _LONG_NUMBER.search(text, start)
    return JSONLimitError("a number with more than 4300 digits", text, found.start() if found else start)


# A \uD800-\uDFFF escape or a raw surrogate code point: the only ways a parsed string can hold one.
_MAYBE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\.|[\ud800-\udfff]", re.S)


def _strings(value: object) -> Iterable[str]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            yield from (k for k in node if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _is_text(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lone_surrogate(text: str, start: int, end: int) -> tuple[int, str]:
    """The offset and spelling of the first surrogate in ``text[start:end]`` that is not half of a pair."""
    matches = list(_ESCAPE.finditer(text, start, end))
    i = 0
    while i < len(matches):
        m = matches[i]
        if m.group(1) is None:
            if len(m.group()) == 1:  # a raw surrogate (not an escape): never text in a str
                return m.start(), f"\\u{ord(m.group()):04x}"
            i += 1
            continue
        code = int(m.group(1), 16)
        if 0xD800 <= code <= 0xDBFF:
            after = matches[i + 1] if i + 1 < len(matches) else None
            low = after is not None and after.start() == m.end() and after.group(1) is not None
            if low and 0xDC00 <= int(after.group(1), 16) <= 0xDFFF:  # type: ignore[union-attr]
                i += 2
                continue
            return m.start(), m.group()
        if 0xDC00 <= code <= 0xDFFF:
            return m.start(), m.group()
        i += 1
    return start, "a surrogate"


def _check(value: Any, text: str, start: int, end: int, limit: int, surrogates: bool) -> Any:
    error = None
    # Counting brackets is fast and bounds the depth from above: only a text with many walks the value.
    if text.count("[", start, end) + text.count("{", start, end) > limit and depth(value, stop=limit) > limit:
        error = _too_deep(text, limit, start, end)
    elif (
        not surrogates
        and _MAYBE_SURROGATE.search(text, start, end)
        and not all(_is_text(s) for s in _strings(value))
    ):
        where, spelling = _lone_surrogate(text, start, end)
        error = JSONLimitError(f"{spelling} is a lone surrogate, not text", text, where)
    if error is not None:
        error.end = end
        raise error
    return value


def loads(text: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH, surrogates: bool = False) -> Any:
    """``json.loads(text)``; :class:`JSONLimitError` (a ``JSONDecodeError``) for nesting deeper than
    ``max_depth``, an integer too long for Python or (unless ``surrogates``) a string holding a lone
    surrogate, ``JSONDecodeError`` for a syntax error as before. ``surrogates=True`` is for specmeter's own
    files, which may carry one escaped (``report.files`` writes what it cannot encode as ``\\udXXX``).
    Bytes are decoded as ``json.loads`` decodes them (UTF-8, -16 or -32; ``UnicodeDecodeError`` if not)."""
    if isinstance(text, bytes | bytearray):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text, max_depth) from None
    except json.JSONDecodeError:
        raise
    except ValueError as e:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise _too_long(text, 0) from e
    return _check(value, text, 0, len(text), max_depth, surrogates)


_DECODER = json.JSONDecoder()


def raw_decode(
    text: str, pos: int = 0, *, max_depth: int = MAX_DEPTH, surrogates: bool = False
) -> tuple[Any, int]:
    """``json.JSONDecoder().raw_decode(text, pos)`` (one value starting at ``pos`` and the offset after it)
    with :func:`loads`'s limits; a JSON array read element by element (``golden``) uses it."""
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except RecursionError:
        raise _too_deep(text, max_depth, pos) from None
    except json.JSONDecodeError:
        raise
    except ValueError as e:
        raise _too_long(text, pos) from e
    return _check(value, text, pos, end, max_depth, surrogates), end
