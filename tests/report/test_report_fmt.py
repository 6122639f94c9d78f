"""Unit tests of the plain-string formatters."""

from __future__ import annotations

import math

import pytest

from specmeter.report.fmt import (
    DASH,
    as_float,
    fmt_bytes,
    fmt_ci,
    fmt_dist,
    fmt_int,
    fmt_ms,
    fmt_num,
    fmt_pct,
    fmt_positions,
    fmt_rate,
    fmt_speedup,
    with_ci,
)


def test_as_float_rejects_non_numbers() -> None:
    assert as_float(3) == 3.0
    assert as_float(True) is None
    assert as_float("1.0") is None
    assert as_float(math.nan) is None
    assert as_float(math.inf) is None


def test_fmt_rate_with_count() -> None:
    assert fmt_rate(0.652, 1304, 2000) == "0.652 (1,304/2,000)"
    assert fmt_rate(0.652) == "0.652"
    assert fmt_rate(None, 0, 0) == "— (0/0)"
    assert fmt_rate(0.5, None, 10) == "0.500"


def test_fmt_ci() -> None:
    assert fmt_ci([0.612, 0.689]) == "[0.61, 0.69]"
    assert fmt_ci((1, 2), digits=1) == "[1.0, 2.0]"
    assert fmt_ci(None) == DASH
    assert fmt_ci([None, 0.5]) == DASH
    assert fmt_ci([0.1]) == DASH
    assert fmt_ci("ab") == DASH


def test_with_ci_drops_missing_interval() -> None:
    assert with_ci("1.42×", [1.31, 1.55]) == "1.42× [1.31, 1.55]"
    assert with_ci("1.42×", None) == "1.42×"
    assert with_ci(DASH, [1.0, 2.0]) == DASH


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, DASH),
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (300 * 1024**2, "300.0 MiB"),
        (1.5 * 1024**3, "1.50 GiB"),
        (13 * 1024**3, "13.0 GiB"),
        (-2 * 1024**2, "-2.00 MiB"),
        (2 * 1024**5, "2.00 PiB"),
    ],
)
def test_fmt_bytes(value: float | None, expected: str) -> None:
    assert fmt_bytes(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, DASH), (0.5, "0.50 ms"), (12.34, "12.3 ms"), (1650.4, "1,650 ms"), (math.nan, DASH)],
)
def test_fmt_ms(value: float | None, expected: str) -> None:
    assert fmt_ms(value) == expected


def test_small_formatters() -> None:
    assert fmt_speedup(2.414) == "2.41×"
    assert fmt_speedup(None) == DASH
    assert fmt_num(0.4237) == "0.42"
    assert fmt_num(None) == DASH
    assert fmt_int(12345) == "12,345"
    assert fmt_int(None) == DASH
    assert fmt_pct(0.016) == "1.6%"
    assert fmt_pct(None) == DASH


def test_fmt_dist() -> None:
    assert fmt_dist({"p50": 12.3, "p90": 15.0, "p99": 19.8, "mean": 13.0}) == "12.3 ms / 19.8 ms"
    assert fmt_dist({"p50": 12.3, "p99": None}) == f"12.3 ms / {DASH}"
    assert fmt_dist({"p50": None, "p99": None}) == DASH
    assert fmt_dist(None) == DASH


def test_fmt_positions() -> None:
    positions = [
        {"position": i + 1, "cumulative": c, "conditional": d, "count": 10}
        for i, (c, d) in enumerate([(0.81, 0.81), (0.66, 0.81), (0.5, None)])
    ]
    assert fmt_positions(positions) == f"0.81/0.81 0.66/0.81 0.50/{DASH}"
    assert fmt_positions(positions, limit=2) == "0.81/0.81 0.66/0.81 …"
    assert fmt_positions([]) == DASH
    assert fmt_positions(None) == DASH
