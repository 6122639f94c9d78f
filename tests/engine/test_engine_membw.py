"""The copy-bandwidth reference of bandwidth_fraction: a real measurement, bytes read + written."""

from __future__ import annotations

import math

import pytest
import torch

from specmeter.engine import membw
from specmeter.engine.membw import measure_copy_bandwidth


def test_copy_bandwidth_is_a_positive_rate_counting_reads_and_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    rate = measure_copy_bandwidth("cpu", nbytes=8 * 2**20, repeats=3)
    assert rate is not None and math.isfinite(rate) and rate > 0
    # a copy that took exactly 1 ms moves 2 × 8 MiB in that time
    ticks = iter([0.0, 0.001] * 3)
    monkeypatch.setattr(membw, "perf_counter", lambda: next(ticks))
    assert measure_copy_bandwidth("cpu", nbytes=8 * 2**20, repeats=3) == pytest.approx(2 * 8 * 2**20 / 0.001)


def test_an_unallocatable_buffer_gives_no_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> torch.Tensor:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(membw.torch, "empty", refuse)
    assert measure_copy_bandwidth("cpu", nbytes=1024) is None
    with pytest.raises(ValueError):
        measure_copy_bandwidth("cpu", nbytes=0)
