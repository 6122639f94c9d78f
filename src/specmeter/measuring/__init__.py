"""The measuring core: load models, prepare prompts, run baseline and candidates, summarise, close.

``bench``, ``tune``, ``select`` and ``demo`` are thin shells around this package; so can be serve-side code,
the load path and tests. Nothing here exits the program or prints: problems raise :class:`MeasureError`,
progress and messages go to a :class:`Reporter` the caller passes in, and a finished (or interrupted) run
returns an :class:`~specmeter.measuring.run.Outcome` with the exit code a command should end with.

Modules (this ``__init__`` imports only the torch-free ones):

* ``config`` — :class:`MeasureConfig`, validated once when built; its class attributes are the defaults.
* ``outputs`` — :func:`check_output_paths`, the one check of output paths for every command.
* ``errors`` — :class:`MeasureError`, :class:`MeasureInterrupted`, exit codes.
* ``progress`` — the :class:`Reporter` protocol and :class:`Silent`.
* ``models`` / ``prompts`` — loading the native engine's models, preparing the golden set.
* ``run`` — :func:`~specmeter.measuring.run.run_candidates` and :func:`~specmeter.measuring.run.close`.
* ``vllm`` — the ``--backend vllm`` path (handles, sequential runs, vLLM's counters).
* ``bench`` / ``tune`` / ``select`` — each command's measurement and its own section.
"""

from specmeter.measuring.config import BENCH_K, SELECT_K, TUNE_K_MAX, MeasureConfig, VllmOptions
from specmeter.measuring.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    MeasureError,
    MeasureInterrupted,
)
from specmeter.measuring.outputs import check_output_paths
from specmeter.measuring.progress import Reporter, Silent, Task

__all__ = [
    "BENCH_K",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "SELECT_K",
    "TUNE_K_MAX",
    "MeasureConfig",
    "MeasureError",
    "MeasureInterrupted",
    "Reporter",
    "Silent",
    "Task",
    "VllmOptions",
    "check_output_paths",
]
