"""Which logged requests are warm-up, not traffic: the one definition replay, golden, drift and monitor use.

``load`` marks each warm-up request with ``metadata.specmeter_warmup = "true"`` (OpenAI metadata values
are strings); ``serve --log`` writes the mark as ``"warmup": true`` on the request's line. A gateway that
logs the request body keeps the metadata key, found at the top of the line or under ``request``/``body``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["WARMUP_METADATA", "is_warmup"]

WARMUP_METADATA = "specmeter_warmup"


def is_warmup(record: Mapping[str, Any]) -> bool:
    """Whether a logged record is one of `load`'s warm-up requests (see the module docstring)."""
    if record.get("warmup") is True:
        return True
    for base in (record, record.get("request"), record.get("body")):
        meta = base.get("metadata") if isinstance(base, Mapping) else None
        if isinstance(meta, Mapping) and str(meta.get(WARMUP_METADATA, "")).lower() == "true":
            return True
    return False
