"""Fixtures of the serving tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    # On 2 shared cores, OpenMP threads waiting for a descheduled peer stall for hundreds of milliseconds;
    # one thread keeps these behavioural tests fast. Nothing here asserts on timings.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
