"""The device's copy bandwidth: the reference that turns achieved weight traffic into a fraction.

Decode is usually memory-bound, so the field report's third metric asks how close decoding runs to the
memory's limit. The limit used here is measured, not looked up: the best rate of several copies of one
large buffer into another on the same device (STREAM's "Copy"), counting the bytes read *and* the bytes
written, as STREAM does. Best, not median, as STREAM reports it: on the 2-core development VM the median
of five copies jumped between 33 and 45 GB/s from one call to the next, the best stayed at 43–46 GB/s.
The buffer is far larger than any cache, so the copy streams from and to memory; on a CPU it runs on
torch's threads, as the forwards do. ``achieved_bytes_per_s / copy_bytes_per_s`` is then the share of
that bandwidth the decode loop's weight reads use (docs/metrics.md, "achieved bandwidth").

What this is not: a peak figure from a datasheet (a copy reaches somewhat less), nor a measure of the
KV-cache and activation traffic, which the weight-traffic figure leaves out.
"""

from __future__ import annotations

from time import perf_counter

import torch

from specmeter.engine.base import synchronize

__all__ = ["COPY_BYTES", "measure_copy_bandwidth"]

COPY_BYTES = 256 * 2**20  # per buffer: well beyond the last-level cache of a CPU, a fraction of a GPU's


def measure_copy_bandwidth(
    device: torch.device | str, *, nbytes: int = COPY_BYTES, repeats: int = 9
) -> float | None:
    """Bytes read + written per second copying an ``nbytes`` buffer on ``device`` (the fastest of
    ``repeats`` copies after one warm-up copy); None when the buffers cannot be allocated."""
    if nbytes <= 0 or repeats < 1:
        raise ValueError("nbytes and repeats must be positive")
    device = torch.device(device)
    try:
        src = torch.empty(nbytes, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
    except (RuntimeError, MemoryError):  # out of memory: no reference, no fraction
        return None
    src.fill_(1)
    dst.copy_(src)  # warm-up: pages touched, kernels loaded
    times = []
    for _ in range(repeats):
        synchronize(device)
        t = perf_counter()
        dst.copy_(src)
        synchronize(device)
        times.append(perf_counter() - t)
    seconds = min(times)
    del src, dst
    return 2 * nbytes / seconds if seconds > 0 else None
