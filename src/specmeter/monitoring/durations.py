"""Durations as monitor and drift take them (``--interval 15s``, ``--window 1d``): windows, look-backs
and runs up to a year."""

from __future__ import annotations

import re

__all__ = ["MAX_SECONDS", "parse_seconds"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "": 1.0}
MAX_SECONDS = 366 * 86400.0  # windows, look-backs and runs up to a year


def parse_seconds(value: str, option: str) -> float:
    """``15s``, ``500ms``, ``2m``, ``1h``, ``1d`` or a bare number of seconds; > 0 and at most a year.
    ValueError (one line naming ``option``) otherwise."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h|d|)\s*", value)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"{option}: {value!r} is not a positive duration such as 15s, 500ms or 2m")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_SECONDS:
        raise ValueError(f"{option}: {value!r} is longer than a year (366d)")
    return seconds
