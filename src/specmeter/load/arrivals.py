"""Arrival schedules: when an open-loop level sends its next request.

A closed-loop level (``--concurrency N``) needs no schedule: N workers each send their next request when
the previous one ends, so the server's pace sets the arrivals. An open-loop level (``--rate R``) sends at
times fixed in advance, whatever the server does; the gaps between sends come from here. Pure functions of
a seeded ``random.Random``, so a run's arrivals repeat with its ``--seed``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from specmeter.load.config import Arrival

__all__ = ["arrival_gaps"]


def arrival_gaps(
    rate: float, arrival: Arrival, rng: random.Random, burstiness: float = 1.0
) -> Iterator[float]:
    """Seconds between consecutive sends at ``rate`` requests per second, endlessly.

    ``poisson``: exponential gaps with mean 1/rate (independent users); ``constant``: exactly 1/rate;
    ``gamma``: Gamma(shape = B, scale = 1/(rate·B)) gaps, B = ``burstiness`` — vLLM's ``benchmark_serving
    --burstiness`` definition: mean 1/rate whatever B, coefficient of variation 1/√B, so B = 1 is Poisson,
    B < 1 bursty (clusters of requests, then lulls), B > 1 more even than Poisson.
    """
    if rate <= 0:
        raise ValueError(f"rate must be > 0 requests per second, got {rate:g}")
    if burstiness <= 0:
        raise ValueError(f"burstiness must be > 0, got {burstiness:g}")
    while True:
        if arrival == "poisson":
            yield rng.expovariate(rate)
        elif arrival == "gamma":
            yield rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
        else:
            yield 1.0 / rate
