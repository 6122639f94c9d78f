"""``specmeter replay --ray ADDRESS``: a replay's shards as tasks on an existing Ray cluster, then merged.

Each task is exactly ``replay --shard i/N``: :func:`replay_shard` runs
:func:`~specmeter.replay.run.replay_from`, the path of every replay, on the shard's config. The driver
gathers the N shard results as they finish and merges them with :func:`~specmeter.replay.merge.merge_shards`,
the function behind ``--merge``, so the merged figures are the single run's (docs/replay.md, "Past one
machine"). Nothing is merged or written until every shard has come back.

Ray is an optional extra (``pip install 'specmeter[ray]'``), imported only inside these functions, so
``import specmeter`` never needs it. Every worker runs its own installed specmeter (Ray pickles
:func:`replay_shard` by reference) and must read the log, ``--target`` and ``--rules`` at the driver's
paths (relative ones from the driver's working directory): a shared filesystem, or the same files at the
same paths on every node.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from specmeter import __version__
from specmeter.measuring.progress import Reporter, Silent
from specmeter.replay.config import EmptyShard, ReplayConfig, ReplayError
from specmeter.replay.merge import merge_shards
from specmeter.replay.run import Row, replay_from

__all__ = ["INSTALL_HINT", "ShardFailed", "replay_on_ray", "replay_shard"]

INSTALL_HINT = "pip install 'specmeter[ray]'"
CONNECT_TIMEOUT_S = 10.0  # the head's port must answer within this before ray.init is tried


class ShardFailed(RuntimeError):
    """A shard's task died on the cluster (not a bad input): one line naming the shard; nothing written."""


def replay_shard(
    cfg: ReplayConfig, index: int, count: int, version: str, cwd: str | None = None
) -> dict[str, Any]:
    """On a Ray worker: ``specmeter replay --shard index/count`` with ``cfg``'s log, methods and k (the
    tokenizer, and the weights for draft methods, opened there); the shard's result, rows included.
    ``version`` is the driver's specmeter: a worker with another one refuses (its figures could differ).
    ``cwd`` is the driver's working directory: relative paths (the log, ``--target``, a draft directory)
    are read from there when this node has it, else the checks name the path this node does not have."""
    if version != __version__:
        raise ReplayError(
            f"this worker has specmeter {__version__}, the driver {version}: install the same on every node"
        )
    with _within(cwd):
        shard = dataclasses.replace(
            cfg, shard=(index, count), ray=None, shards=None, json_out=None, csv_out=None, html_out=None
        )
        result, _ = replay_from(shard)
    return result


@contextlib.contextmanager
def _within(directory: str | None) -> Iterator[None]:
    """In ``directory`` while the task runs, when this node has it (a Ray worker runs one task at a time
    and goes on to the next one: its working directory is put back)."""
    before = os.getcwd()
    if directory is not None and os.path.isdir(directory):
        os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise ReplayError(f"--ray needs Ray, an optional extra: {INSTALL_HINT}") from None
    module: ModuleType = ray
    return module


def _reachable(address: str) -> None:
    """A ``host:port`` (or ``ray://host:port``) nothing answers on is told at once (``ray.init`` retries
    for a long while before it gives up); ``auto``, ``local`` and the rest are left to Ray."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise ReplayError(f"--ray {address}: cannot connect to a Ray cluster there ({reason})") from None


def _connect(ray: ModuleType, address: str) -> None:
    """``ray.init(address)``; a cluster that cannot be reached is one line naming the address."""
    _reachable(address)
    try:
        ray.init(address=address, logging_level=logging.WARNING, configure_logging=True)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ReplayError(f"--ray {address}: cannot connect to a Ray cluster there ({first})") from None


def _cause(error: BaseException) -> BaseException:
    """The exception a task raised, out of Ray's wrapper (``RayTaskError.cause``)."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


def _failed(error: BaseException, index: int, count: int) -> Exception:
    from specmeter.pricing import CostsError

    cause = _cause(error)
    if isinstance(cause, EmptyShard):
        return ReplayError(
            f"--ray: shard {index}/{count} holds no request to replay (the log has fewer usable requests "
            f"than --shards {count}): give fewer --shards"
        )
    if isinstance(cause, (ReplayError, CostsError)):  # a bad input, as the worker saw it
        return ReplayError(f"--ray: shard {index}/{count}: {cause}")
    lines = str(cause).strip().splitlines()
    text = f"{type(cause).__name__}: {lines[-1]}" if lines else type(cause).__name__
    return ShardFailed(f"--ray: shard {index}/{count} failed on the cluster ({text}); nothing was written")


def replay_on_ray(
    cfg: ReplayConfig, *, reporter: Reporter | None = None
) -> tuple[dict[str, Any], dict[tuple[str, int], list[Row]]]:
    """Run ``cfg``'s replay as N shard tasks on the Ray cluster at ``cfg.ray`` and merge them into the
    single run's result (``--json``, ``--csv`` written once every shard is back); the result and the rows.
    A line per finished shard goes to ``reporter``. Raises :class:`ReplayError` (Ray missing, the cluster
    unreachable, a shard's bad input) or :class:`ShardFailed`."""
    if cfg.ray is None:
        raise ValueError("replay_on_ray needs cfg.ray (an address)")
    reporter = reporter or Silent()
    ray = _ray()
    from specmeter.pricing import predictor

    predict = predictor(cfg.costs) if cfg.costs is not None else None
    shard_cfg = dataclasses.replace(cfg, json_out=None, csv_out=None, html_out=None)  # the driver writes
    _connect(ray, cfg.ray)
    results: dict[int, Mapping[str, Any]] = {}
    try:
        count = cfg.shard_count(float(ray.cluster_resources().get("CPU", 1)))
        task = ray.remote(num_cpus=1)(replay_shard)
        cwd = os.getcwd()
        refs = {task.remote(shard_cfg, i, count, __version__, cwd): i for i in range(count)}
        pending = list(refs)
        with reporter.task(f"shards on Ray ({cfg.ray})", count) as bar:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                index = refs[done[0]]
                try:
                    results[index] = ray.get(done[0])
                except ray.exceptions.RayError as e:
                    for ref in pending:
                        ray.cancel(ref, force=True)
                    raise _failed(e, index, count) from None
                bar.advance(1)
                measured = int(results[index]["replay"]["log"]["measured"])
                reporter.note(f"shard {index}/{count} done: {measured} requests replayed")
    finally:
        ray.shutdown()
    config = {**cfg.as_dict(), "merged": count, "ray": cfg.ray}
    shards = [(f"shard {i}/{count} (Ray)", results[i]) for i in range(count)]
    return merge_shards(shards, cfg.json_out, cfg.csv_out, config=config, costs=predict)
