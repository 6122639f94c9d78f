"""Pure metric functions over recorded runs: acceptance, speedup, latency, memory, statistics, summaries.

Every definition is stated once, in docs/metrics.md, and implemented in one module here; callers import
it from that module (``from specmeter.metrics.acceptance import acceptance_rate``), not from the package.
Nothing in this package imports torch, so reports, stores and monitors that use it load and test fast.
"""
