"""JSON from outside the process, parsed into a clear error whatever it holds (issue 29, hostile data).

``json.loads`` turns a syntax error into ``JSONDecodeError``, but three inputs escape it:

* nesting deeper than Python's recursion limit (``[`` × 100000) raises ``RecursionError``, which no reader
  caught: a traceback from ``golden``, ``drift``, ``monitor``, ``report`` and the rest;
* nesting deep enough to parse but too deep for the code that walks the value afterwards (a copy through
  ``json.dumps``, a recursive scrubber) would raise the same error later, far from the file;
* an integer of more than 4300 digits raises a plain ``ValueError`` (Python's int-string limit).

:func:`loads` is ``json.loads`` with all three turned into :class:`JSONLimitError`, a
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
    """JSON past a limit: nested deeper than :data:`MAX_DEPTH` levels, or a number too long to read."""


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


def _check_depth(value: Any, text: str, start: int, end: int, limit: int) -> Any:
    # Counting brackets is fast and bounds the depth from above: only a text with many walks the value.
    if text.count("[", start, end) + text.count("{", start, end) > limit and depth(value, stop=limit) > limit:
        raise _too_deep(text, limit, start, end)
    return value


def loads(text: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)``; :class:`JSONLimitError` (a ``JSONDecodeError``) for nesting deeper than
    ``max_depth`` or an integer too long for Python, ``JSONDecodeError`` for a syntax error as before.
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
    return _check_depth(value, text, 0, len(text), max_depth)


_DECODER = json.JSONDecoder()


def raw_decode(text: str, pos: int = 0, *, max_depth: int = MAX_DEPTH) -> tuple[Any, int]:
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
    return _check_depth(value, text, pos, end, max_depth), end
