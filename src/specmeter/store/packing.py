"""Compact, lossless binary encodings of a request's steps, emissions and output ids for the run store.

A run of a few hundred requests has tens of thousands of steps; one SQLite row per step would make the
store large and slow, so each request keeps its steps in one blob. The layout is columnar (all ``drafted``
values, then all ``accepted`` values, ...), little-endian, and zlib-compressed: small integer columns
compress very well. Times stay float64 so a stored run reproduces its summary exactly.

Every blob starts with a one-byte format tag so the layout can change without guessing.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from specmeter.metrics.records import Emission, StepRecord

__all__ = [
    "pack_emissions",
    "pack_ids",
    "pack_steps",
    "unpack_emissions",
    "unpack_ids",
    "unpack_steps",
]

_STEPS_V1 = 1  # drafted, accepted, emitted, draft_forwards; draft_s, verify_s
_STEPS_V2 = 2  # v1 plus batch (uint32) and k (int32, -1 = not recorded)
_EMISSIONS_V1 = 1
_IDS_V1 = 1
_COMPRESS_LEVEL = 6


def _seal(tag: int, count: int, payload: bytes) -> bytes:
    return bytes([tag]) + struct.pack("<I", count) + zlib.compress(payload, _COMPRESS_LEVEL)


def _open(blob: bytes, expected_tag: int, what: str) -> tuple[int, bytes]:
    if len(blob) < 5 or blob[0] != expected_tag:
        raise ValueError(f"unknown {what} blob format (tag {blob[:1].hex() or 'missing'})")
    (count,) = struct.unpack_from("<I", blob, 1)
    return count, zlib.decompress(blob[5:])


def pack_steps(steps: Sequence[StepRecord]) -> bytes:
    n = len(steps)
    ints = struct.pack(
        f"<{5 * n}I",
        *(s.drafted for s in steps),
        *(s.accepted for s in steps),
        *(s.emitted for s in steps),
        *(s.draft_forwards for s in steps),
        *(s.batch for s in steps),
    )
    ks = struct.pack(f"<{n}i", *(-1 if s.k is None else s.k for s in steps))
    floats = struct.pack(f"<{2 * n}d", *(s.draft_s for s in steps), *(s.verify_s for s in steps))
    return _seal(_STEPS_V2, n, ints + ks + floats)


def unpack_steps(blob: bytes) -> tuple[StepRecord, ...]:
    if blob[:1] == bytes([_STEPS_V1]):
        n, payload = _open(blob, _STEPS_V1, "steps")
        ints = struct.unpack_from(f"<{4 * n}I", payload, 0)
        batch: Sequence[int] = [1] * n
        ks: Sequence[int] = [-1] * n
        floats = struct.unpack_from(f"<{2 * n}d", payload, 16 * n)
    else:
        n, payload = _open(blob, _STEPS_V2, "steps")
        ints = struct.unpack_from(f"<{5 * n}I", payload, 0)
        batch = ints[4 * n : 5 * n]
        ks = struct.unpack_from(f"<{n}i", payload, 20 * n)
        floats = struct.unpack_from(f"<{2 * n}d", payload, 24 * n)
    return tuple(
        StepRecord(
            drafted=ints[i],
            accepted=ints[n + i],
            emitted=ints[2 * n + i],
            draft_forwards=ints[3 * n + i],
            draft_s=floats[i],
            verify_s=floats[n + i],
            batch=batch[i],
            k=None if ks[i] < 0 else ks[i],
        )
        for i in range(n)
    )


def pack_emissions(emissions: Sequence[Emission]) -> bytes:
    n = len(emissions)
    payload = struct.pack(f"<{n}d", *(e.t for e in emissions)) + struct.pack(
        f"<{n}I", *(e.tokens for e in emissions)
    )
    return _seal(_EMISSIONS_V1, n, payload)


def unpack_emissions(blob: bytes) -> tuple[Emission, ...]:
    n, payload = _open(blob, _EMISSIONS_V1, "emissions")
    times = struct.unpack_from(f"<{n}d", payload, 0)
    tokens = struct.unpack_from(f"<{n}I", payload, 8 * n)
    return tuple(Emission(t=t, tokens=k) for t, k in zip(times, tokens, strict=True))


def pack_ids(ids: Sequence[int]) -> bytes:
    return _seal(_IDS_V1, len(ids), struct.pack(f"<{len(ids)}I", *ids))


def unpack_ids(blob: bytes) -> tuple[int, ...]:
    n, payload = _open(blob, _IDS_V1, "token ids")
    return tuple(struct.unpack_from(f"<{n}I", payload, 0))
