"""Watching speculative decoding in production: Prometheus text → acceptance per window, alerts, exporter.

Nothing here imports torch (docs/internals.md): the monitor runs next to any engine. ``adapters`` maps each
server kind's metrics onto specmeter's counters, ``acceptance`` turns counter deltas into α, β, τ and
per-position rates with the same formulas as ``specmeter.metrics``, ``windows`` keeps the rolling windows,
``alerts``/``store``/``exporter``/``live`` are where the results go, and ``monitor`` is the loop.
"""
