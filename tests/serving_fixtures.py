"""Fixtures shared by the server, load and sweep tests (imported by their conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from serving_fakes import Behaviour, fake_openai
from specmeter.server.hosting import ServerThread


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    # On 2 shared cores, OpenMP threads waiting for a descheduled peer stall for hundreds of milliseconds;
    # one thread keeps these behavioural tests fast. Nothing here asserts on timings.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def fake() -> Iterator[tuple[Behaviour, str]]:
    """A fake OpenAI server (``serving_fakes``) whose ``Behaviour`` a test sets: (behaviour, base URL)."""
    behaviour = Behaviour()
    with ServerThread(fake_openai(behaviour), graceful_timeout=2) as server:
        yield behaviour, server.url
