"""Arrival schedules: when an open-loop level sends its next request.

A closed-loop level (``--concurrency N``) needs no schedule: N workers each send their next request when
the previous one ends, so the server's pace sets the arrivals. An open-loop level (``--rate R``) sends at
times fixed in advance, whatever the server does; the gaps between sends come from here. Pure functions of
a seeded ``random.Random``, so a run's arrivals repeat with its ``--seed``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from specmeter.serving.loadconfig import Arrival

__all__ = ["arrival_gaps"]


def arrival_gaps(rate: float, arrival: Arrival, rng: random.Random) -> Iterator[float]:
    """Seconds between consecutive sends at ``rate`` requests per second, endlessly.

    ``poisson``: exponential gaps with mean 1/rate (independent users); ``constant``: exactly 1/rate.
    """
    if rate <= 0:
        raise ValueError(f"rate must be > 0 requests per second, got {rate:g}")
    while True:
        yield rng.expovariate(rate) if arrival == "poisson" else 1.0 / rate
