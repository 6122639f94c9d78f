"""``replay --merge`` (and ``--ray``): the N shards of one replay back into the single run's result.

Each shard file is checked field by field and across fields before anything is merged (:func:`shard_problem`:
one line naming the file and the field); the rows are sorted into log order, so the bootstrap resamples
the same requests in the same order as a single run, and the figures come from them through
:func:`specmeter.replay.run.figures`, as a single run's do. The merged figures are priced again (``--costs``,
or the cost file the shards recorded): a shard's own predictions are not the run's.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from specmeter import inputs, jsonsafe
from specmeter.inputs import InputError
from specmeter.metrics.acceptance import K_MAX_LIMIT
from specmeter.metrics.records import run_label
from specmeter.replay.config import ReplayError
from specmeter.replay.run import Row, figures, write_csv
from specmeter.report.files import ResultFile

__all__ = ["merge_results", "merge_shards", "shard_problem"]


def _read_shard(path: Path) -> Mapping[str, Any]:
    try:
        data = jsonsafe.loads(inputs.read_text(path))
    except FileNotFoundError:
        raise ReplayError(f"--merge: {path} does not exist") from None
    except InputError as e:
        raise ReplayError(f"--merge: {path} is {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ReplayError(f"--merge: {path}: cannot read ({e})") from None
    except json.JSONDecodeError as e:
        raise ReplayError(f"--merge: {path}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, Mapping) or data.get("kind") != "replay":
        raise ReplayError(f"--merge: {path} is not a replay result")
    section = data.get("replay")
    if (
        not isinstance(section, Mapping)
        or not isinstance(section.get("shard"), Mapping)
        or "rows" not in section
    ):
        raise ReplayError(f"--merge: {path} is not a shard (a replay run with --shard i/N and --json)")
    if data.get("complete") is not True:
        raise ReplayError(f"--merge: {path} is an unfinished shard (complete: false)")
    problem = shard_problem(data)
    if problem is not None:
        raise ReplayError(f"--merge: {path}: {problem}")
    return data


# A row's bounds: a response of more tokens than this is no log line specmeter reads (and its steps, expanded
# into records, would not fit in memory).
MAX_ROW_TOKENS = 1 << 24
_LOG_COUNTS = ("records", "usable", "warm", "measured", "other_shards", "beyond_limit", "bad_lines")
FINISHES = frozenset({"eos", "length", "interrupted"})


def _count(value: Any, high: int | None = None) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= 0
        and (high is None or value <= high)
    )


def _row_problem(row: Any, k: int) -> str | None:
    """What is wrong with one row of a shard (``Row.as_dict``'s shape, its counts bounded and consistent),
    or None."""
    if not isinstance(row, Mapping):
        return f"expected an object, got {type(row).__name__}"
    for key in ("i", "prompt_tokens", "output_tokens", "past_end", "past_end_drafts"):
        if key == "past_end_drafts" and key not in row:
            continue  # shards written before it existed
        if not _count(row.get(key), MAX_ROW_TOKENS):
            return f"field '{key}' is {row.get(key)!r}, not an integer in 0..{MAX_ROW_TOKENS}"
    for key in ("id", "category", "source"):
        if not isinstance(row.get(key), str):
            return f"field '{key}' is {row.get(key)!r}, not text"
    if row.get("finish") not in FINISHES:
        return f"field 'finish' is {row.get('finish')!r}, not one of {', '.join(sorted(FINISHES))}"
    steps = row.get("steps")
    if not isinstance(steps, list):
        return f"field 'steps' is {steps!r}, not a list"
    total = 0
    for j, step in enumerate(steps):
        if not (isinstance(step, list) and len(step) == 5 and all(_count(x) for x in step)):
            return (
                f"steps[{j}] is {step!r}, not [drafted, accepted, emitted, forwards, count] of integers >= 0"
            )
        drafted, accepted, emitted, _, count = step
        if drafted > k or accepted > drafted or emitted > accepted + 1 or count < 1:
            return (
                f"steps[{j}] {step!r}: need drafted <= k ({k}), accepted <= drafted, emitted <= accepted + 1 "
                "and count >= 1"
            )
        total += count
        if total > row["output_tokens"] + 1:
            return f"steps: {total} or more steps for {row['output_tokens']} output tokens"
    return None


def shard_problem(data: Mapping[str, Any]) -> str | None:
    """What makes a shard's result unusable for a merge, one clause naming the field, or None: its config,
    shard index and count, log counts, candidates and rows checked field by field and across fields (one
    row per measured request and candidate, request indices unique and of this shard, counts bounded)."""
    run = data.get("run")
    config = run.get("config") if isinstance(run, Mapping) else None
    if not isinstance(config, Mapping):
        return "field 'run.config' missing or not an object"
    models = run.get("models") if isinstance(run, Mapping) else None
    if not isinstance(models, Mapping) or not isinstance(models.get("target"), Mapping):
        return "field 'run.models.target' missing or not an object"
    for key in ("model", "target"):
        if not isinstance(config.get(key), str):
            return f"field 'run.config.{key}' is {config.get(key)!r}, not text"
    warm = config.get("warm", 0)
    if not _count(warm):
        return f"field 'run.config.warm' is {warm!r}, not an integer >= 0"
    section = data["replay"]
    shard = section["shard"]
    index, count = shard.get("index"), shard.get("count")
    if not _count(count) or count < 1 or not _count(index) or index >= count:
        return f"field 'replay.shard' is {_short(shard)}, not an index i and a count N with 0 <= i < N"
    log = section.get("log")
    if not isinstance(log, Mapping):
        return "field 'replay.log' missing or not an object"
    for key in _LOG_COUNTS:
        if not _count(log.get(key)):
            return f"field 'replay.log.{key}' is {_short(log.get(key))}, not an integer >= 0"
    measured = log["measured"]
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        return "field 'candidates' missing or empty"
    rows = section.get("rows")
    if not isinstance(rows, Mapping):
        return "field 'replay.rows' is not an object"
    labels = []
    for n, c in enumerate(candidates):
        draft = c.get("draft") if isinstance(c, Mapping) else None
        k = c.get("k") if isinstance(c, Mapping) else None
        if not isinstance(draft, str) or not isinstance(k, int) or not _count(k, K_MAX_LIMIT) or k < 1:
            return f"candidates[{n}]: expected a draft (text) and a k in 1..{K_MAX_LIMIT}"
        label = run_label(draft, k)
        labels.append(label)
        part = rows.get(label)
        if not isinstance(part, list):
            return f"field 'replay.rows' has no list of rows for {label}"
        if len(part) != measured:
            return f"replay.rows.{label}: {len(part)} rows, but replay.log.measured is {measured}"
        seen: set[int] = set()
        for j, row in enumerate(part):
            problem = _row_problem(row, k)
            if problem is not None:
                return f"replay.rows.{label}[{j}]: {problem}"
            i = row["i"]
            if i in seen:
                return f"replay.rows.{label}[{j}]: request index {i} appears twice"
            if i < warm or (i - warm) % count != index:
                return f"replay.rows.{label}[{j}]: request index {i} is not one of shard {index}/{count}'s"
            seen.add(i)
    if len(set(labels)) != len(labels):
        return "field 'candidates' names a method and k twice"
    if set(rows) != set(labels):
        return (
            f"field 'replay.rows' holds {', '.join(sorted(map(str, set(rows) - set(labels))))}: no candidate"
        )
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_SHARD_FREE = ("shard",)


def merge_results(
    paths: Sequence[Path], json_out: Path | None, csv_out: Path | None = None, costs: Path | None = None
) -> tuple[dict[str, Any], dict[tuple[str, int], list[Row]]]:
    """The single run's result from the result files of shards 0 … N-1 of one replay (same log, methods,
    k); ``--csv`` written from the merged rows too. The predicted speedups are computed again from the
    merged figures, with ``costs`` or else the cost file the shards were run with (a shard's own figures
    are not the run's)."""
    from specmeter.pricing import CostsError, predictor

    shards = [(str(p), _read_shard(p)) for p in paths]
    recorded = shards[0][1]["run"]["config"].get("costs") if shards else None
    source = costs if costs is not None else (Path(recorded) if isinstance(recorded, str) else None)
    predict = None
    if source is not None:
        if not source.is_file():
            raise ReplayError(
                f"--merge: the shards were priced with --costs {source}, which is not a file here: "
                "give --costs FILE"
            )
        try:
            predict = predictor(source)
        except CostsError as e:
            raise ReplayError(str(e)) from None
    config = None
    if costs is not None and shards:
        first = shards[0][1]["run"]["config"]
        config = {k: v for k, v in first.items() if k not in _SHARD_FREE}
        config.update(shard=None, merged=len(shards), costs=str(costs))
    return merge_shards(shards, json_out, csv_out, config=config, costs=predict)


def _merged_lookups(shards: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, float]:
    """The shards' lookup times per step (µs), averaged over the shards that timed each candidate."""
    seen: dict[str, list[float]] = {}
    for _, data in shards:
        timed = data["replay"].get("lookup_us_per_step")
        if not isinstance(timed, Mapping):
            continue
        for label, us in timed.items():
            if isinstance(us, int | float) and not isinstance(us, bool) and 0 <= us < 1e9:
                seen.setdefault(str(label), []).append(float(us))
    return {label: sum(v) / len(v) for label, v in seen.items()}


def merge_shards(
    shards: Sequence[tuple[str, Mapping[str, Any]]],
    json_out: Path | None,
    csv_out: Path | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    costs: Callable[[Sequence[Mapping[str, Any]]], Any] | None = None,
) -> tuple[dict[str, Any], dict[tuple[str, int], list[Row]]]:
    """The single run's result from the results of shards 0 … N-1 of one replay, each named by where it
    came from (a file, a Ray task). ``config`` replaces the first shard's as the merged run's
    ``run.config``; ``costs`` recomputes the predicted costs from the merged figures (else the first
    shard's are kept)."""
    first_path, first = shards[0]
    for path, data in shards:
        problem = shard_problem(data)
        if problem is not None:
            raise ReplayError(f"--merge: {path}: {problem}")
    count = int(first["replay"]["shard"]["count"])
    keys = sorted(run_label(str(c["draft"]), int(c["k"])) for c in first["candidates"])
    shard_config = {k: v for k, v in first["run"]["config"].items() if k not in _SHARD_FREE}
    seen: dict[int, str] = {}
    for path, data in shards:
        other = {k: v for k, v in data["run"]["config"].items() if k not in _SHARD_FREE}
        if other != shard_config:
            diff = sorted(k for k in set(other) | set(shard_config) if other.get(k) != shard_config.get(k))
            raise ReplayError(
                f"--merge: {path} is a shard of another replay than {first_path} "
                f"(differs in {', '.join(diff)})"
            )
        shard = data["replay"]["shard"]
        if int(shard["count"]) != count:
            raise ReplayError(f"--merge: {path} is shard {shard['index']}/{shard['count']}, not of {count}")
        if sorted(run_label(str(c["draft"]), int(c["k"])) for c in data["candidates"]) != keys:
            raise ReplayError(f"--merge: {path} holds other methods or k than {first_path}")
        index = int(shard["index"])
        if index in seen:
            raise ReplayError(f"--merge: {seen[index]} and {path} are both shard {index}/{count}")
        seen[index] = path
    if count != len(seen):  # the first few missing, found among the first len(seen) + 5 indices
        missing = list(itertools.islice((i for i in range(count) if i not in seen), 5))
        more = f" ({count - len(seen)} in all)" if count - len(seen) > len(missing) else ""
        raise ReplayError(
            f"--merge: shard{'s' if count - len(seen) > 1 else ''} {', '.join(map(str, missing))}{more} "
            f"of {count} missing"
        )
    rows: dict[tuple[str, int], list[Row]] = {}
    for c in first["candidates"]:
        rows[(str(c["draft"]), int(c["k"]))] = []
    for _, data in shards:
        for c in data["candidates"]:
            key = (str(c["draft"]), int(c["k"]))
            rows.setdefault(key, []).extend(Row.from_dict(r) for r in data["replay"]["rows"][run_label(*key)])
    log = dict(first["replay"]["log"])  # every shard read the whole log: its counts are the log's
    measured = sum(int(d["replay"]["log"]["measured"]) for _, d in shards)
    log.update(measured=measured, other_shards=0)
    merged_config = (
        dict(config) if config is not None else {**shard_config, "shard": None, "merged": len(shards)}
    )
    result = ResultFile(json_out, kind="replay", config=merged_config)
    result.set_models(first["run"]["models"]["target"])
    candidates = figures(rows, str(shard_config.get("model")))
    lookups = _merged_lookups(shards)
    for c in candidates:
        result.add_candidate(c["draft"], c["k"], c["summary"], c["by_category"], method=c["draft"])
        if run_label(c["draft"], c["k"]) in lookups:
            c["lookup_s"] = lookups[run_label(c["draft"], c["k"])] / 1e6
    section = {
        "log": log,
        "exact": first["replay"].get("exact"),
        "past_end": {f"{c['draft']}@k={c['k']}": c["past_end"] for c in candidates},
        "past_end_drafts": {f"{c['draft']}@k={c['k']}": c["past_end_drafts"] for c in candidates},
        "lookup_us_per_step": lookups,
        "costs": costs(candidates) if costs is not None else first["replay"].get("costs"),
        "merged_from": [
            str(p) for p, _ in sorted(shards, key=lambda s: int(s[1]["replay"]["shard"]["index"]))
        ],
    }
    result.set_section("replay", section)
    result.finish()
    if csv_out is not None:
        write_csv(csv_out, rows)
    return result.to_dict(), rows
