"""Prometheus text exposition → flat samples, and the scrape that fetches it.

Parsing is delegated to ``prometheus_client.parser`` (the reference parser), then flattened into
``Sample(name, labels, value)`` rows keyed by the *sample* name as it appears on the wire
(``vllm:spec_decode_num_drafts_total``, ``tgi_request_skipped_tokens_bucket``), which is what the adapters
match on: it is the same whether or not the server printed ``# TYPE`` lines, and whichever family name
the parser derived from them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["MetricsSnapshot", "Sample", "ScrapeError", "metrics_url", "parse_metrics", "scrape"]

LabelKey = tuple[tuple[str, str], ...]


class ScrapeError(RuntimeError):
    """A /metrics endpoint could not be read or parsed; the message says which and why."""


@dataclass(frozen=True)
class Sample:
    name: str
    labels: LabelKey
    value: float

    def label(self, key: str) -> str | None:
        for k, v in self.labels:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class MetricsSnapshot:
    """All samples of one scrape, with the wall-clock and monotonic times it was taken."""

    samples: tuple[Sample, ...]
    wall_time: float = field(default_factory=time.time)
    mono_time: float = field(default_factory=time.monotonic)
    url: str = ""

    def names(self) -> set[str]:
        return {s.name for s in self.samples}

    def series(self, name: str) -> dict[LabelKey, float]:
        """Every series of a sample name, by label set (NaN values skipped: they carry nothing)."""
        return {s.labels: s.value for s in self.samples if s.name == name and not math.isnan(s.value)}

    def has_prefix(self, prefix: str) -> bool:
        return any(s.name.startswith(prefix) for s in self.samples)


def _label_key(labels: Mapping[str, str], drop: Iterable[str] = ()) -> LabelKey:
    dropped = set(drop)
    return tuple(sorted((k, v) for k, v in labels.items() if k not in dropped))


def parse_metrics(text: str, *, url: str = "") -> MetricsSnapshot:
    """Parse exposition text; raises ScrapeError naming the problem when the text is not valid."""
    samples: list[Sample] = []
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples.append(Sample(s.name, _label_key(s.labels), float(s.value)))
    except (ValueError, TypeError, IndexError) as e:
        where = f" from {url}" if url else ""
        raise ScrapeError(f"malformed Prometheus text{where}: {e}") from e
    return MetricsSnapshot(tuple(samples), url=url)


def metrics_url(url: str) -> str:
    """``http://host:port`` → ``http://host:port/metrics``; a URL with a path is taken as given."""
    stripped = url.rstrip("/")
    rest = stripped.split("://", 1)[-1]
    return stripped if "/" in rest else stripped + "/metrics"


async def scrape(
    client: httpx.AsyncClient, url: str, *, timeout: float = 10.0, only: tuple[str, ...] | None = None
) -> MetricsSnapshot:
    """GET a /metrics URL and parse it; any failure becomes one ScrapeError with a readable reason.

    ``only`` (metric-name prefixes) parses just the sample lines that start with one of them: a frequent
    read of a few gauges (``load``'s queue samples) then costs the client's event loop next to nothing.
    """
    try:
        response = await client.get(url, timeout=timeout)
    except httpx.ConnectError as e:
        raise ScrapeError(f"cannot connect to {url}: {e or 'connection refused'}") from e
    except httpx.TimeoutException as e:
        raise ScrapeError(f"{url} did not answer within {timeout:g}s") from e
    except httpx.HTTPError as e:
        raise ScrapeError(f"{url}: {type(e).__name__}: {e}") from e
    if response.status_code != 200:
        raise ScrapeError(f"{url} answered HTTP {response.status_code}")
    text = response.text
    if only is not None:
        text = "".join(line + "\n" for line in text.splitlines() if line.startswith(only))
    return parse_metrics(text, url=url)
