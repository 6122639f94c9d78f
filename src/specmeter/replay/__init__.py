"""Replay: what each method would have accepted on traffic already served, from the logs (docs/replay.md).

Every logged response is walked with each method's proposer as the live loop would have walked it; the
target never runs. Model-free methods need only the tokenizer; the core imports no torch (suffix decoding's
cache and the draft-model methods import the engine when they are built).
"""

from specmeter.replay.config import ReplayConfig, ReplayError, parse_shard
from specmeter.replay.merge import merge_results
from specmeter.replay.run import replay_log, run_replay

__all__ = ["ReplayConfig", "ReplayError", "merge_results", "parse_shard", "replay_log", "run_replay"]
