"""Memory and weight-traffic metrics against hand-computed cases."""

from __future__ import annotations

import pytest

from specmeter.metrics.memory import (
    GIB,
    achieved_bytes_per_s,
    bandwidth_efficiency,
    bandwidth_fraction,
    bytes_per_element,
    extra_memory_bytes,
    kv_bytes_per_token,
    weight_traffic_per_token,
)


def test_kv_bytes_per_token() -> None:
    # Llama-3-8B shape: 2 (K and V) · 32 layers · 8 kv heads · 128 head_dim · 2 bytes = 131072 (128 KiB)
    assert kv_bytes_per_token(32, 8, 128, 2) == 131072
    # tiny: 2 · 1 · 1 · 4 · 4 = 32
    assert kv_bytes_per_token(1, 1, 4, 4) == 32


def test_bytes_per_element() -> None:
    assert bytes_per_element("bfloat16") == 2
    assert bytes_per_element("torch.float16") == 2
    assert bytes_per_element("float32") == 4
    assert bytes_per_element("FP8") == 1
    with pytest.raises(ValueError):
        bytes_per_element("float3")


def test_extra_memory_bytes() -> None:
    # W_D = 100, draft KV 2 B/token, 37 tokens: 100 + 74 = 174
    assert extra_memory_bytes(100, 2, 37) == 174
    assert extra_memory_bytes(100, 2, 0) == 100
    assert extra_memory_bytes(100, 2, -5) == 100  # a nonsense length does not reduce the weights


def test_weight_traffic_per_token() -> None:
    # worked example: S_all = 7 forwards of W_T = 1000, F_D = 22 forwards of W_D = 100, N = 15
    # (7000 + 2200)/15 = 613.33
    assert weight_traffic_per_token(7, 22, 15, 1000, 100) == pytest.approx(9200 / 15)
    # baseline: one forward per token, no draft -> W_T
    assert weight_traffic_per_token(15, 0, 15, 1000) == 1000.0
    # all rejected, k = 4: per token one target forward and four draft forwards -> W_T + 4 W_D
    assert weight_traffic_per_token(3, 12, 3, 1000, 100) == 1400.0
    assert weight_traffic_per_token(0, 0, 0, 1000) is None  # nothing emitted


def test_bandwidth_efficiency() -> None:
    # saved 1000 − 600 = 400 B/token with 1 GiB extra -> 400 B/token per GiB
    assert bandwidth_efficiency(1000.0, 600.0, GIB) == pytest.approx(400.0)
    # 0.5 GiB extra -> 800
    assert bandwidth_efficiency(1000.0, 600.0, GIB // 2) == pytest.approx(800.0)
    # a draft that costs more traffic than it saves is negative, not clipped
    assert bandwidth_efficiency(1000.0, 1400.0, GIB) == pytest.approx(-400.0)
    assert bandwidth_efficiency(1000.0, 600.0, 0) is None
    assert bandwidth_efficiency(1000.0, None, GIB) is None
    assert bandwidth_efficiency(None, 600.0, GIB) is None
    assert bandwidth_efficiency(1000.0, 600.0, None) is None


def test_achieved_bandwidth_and_fraction() -> None:
    # 600 B/token · 50 tokens/s = 30000 B/s; against a 60000 B/s copy bandwidth -> 0.5
    achieved = achieved_bytes_per_s(600.0, 50.0)
    assert achieved == pytest.approx(30000.0)
    assert bandwidth_fraction(achieved, 60000.0) == pytest.approx(0.5)
    assert achieved_bytes_per_s(None, 50.0) is None
    assert achieved_bytes_per_s(600.0, None) is None
    assert bandwidth_fraction(30000.0, None) is None
    assert bandwidth_fraction(30000.0, 0.0) is None
    assert bandwidth_fraction(None, 1.0) is None
