"""``specmeter replay``: every logged response walked with every method at every k, and the figures.

The path: the log is read line by line (:mod:`.logs`); each request is tokenized and checked
(:mod:`.tokens`); the first ``--warm`` usable requests and, with ``--shard i/N``, the other shards' requests
only feed the methods that learn across requests (suffix decoding's cache, in log order); every other
request is walked by each (method, k) proposer (:mod:`.walk`) into a compact row. The figures come from
the rows through ``metrics.summarize``, the function ``bench`` uses, so α, τ, per-position acceptance and
their bootstrap intervals mean what they mean there (docs/metrics.md); the timing figures, which replay
does not measure, are null. A shard's result keeps its rows; :mod:`.merge` turns the N shards' rows back
into the single run's figures.
"""

from __future__ import annotations

import contextlib
import csv
import gc
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from specmeter.goldenset.categorize import CategoryRules, RulesError, load_rules
from specmeter.goldenset.formats import Problem
from specmeter.measuring.progress import Reporter, Silent
from specmeter.methods import DraftDir, MethodSpec
from specmeter.metrics.records import ModelInfo, RequestRecord, RunRecord, StepRecord, run_label
from specmeter.metrics.summary import MODEL_FILE_KEYS, judge, summarize, summarize_by_category
from specmeter.pricing.book import is_model_free
from specmeter.replay.config import EmptyShard, ReplayConfig, ReplayError
from specmeter.replay.logs import NoResponses, iter_log, log_files
from specmeter.replay.proposers import ReplayProposer, replay_proposer
from specmeter.replay.tokens import Prepared, TokenChecks, prepare
from specmeter.replay.walk import walk
from specmeter.report.files import CSV_COLUMNS, ResultFile, request_row

__all__ = [
    "MAX_LISTED",
    "Row",
    "figures",
    "replay_from",
    "replay_log",
    "run_replay",
]

MAX_LISTED = 50  # bad lines and set-aside requests listed in the result (all are counted)

# Summary keys replay does not measure (times, speedups, bandwidth): null, never zero.
TIMING_KEYS: tuple[str, ...] = (
    "cost_ratio", "cost_curve", "speedup_measured", "speedup_measured_ci", "speedup_measured_decode",
    "speedup_seed", "speedup_leviathan", "speedup_calibrated", "speedup_calibrated_by_k", "ttft_ms",
    "tpot_ms",
    "gap_ms", "gap_per_token_ms", "latency_ms", "jitter", "gap_p99_over_p50", "stalls", "stall_rate",
    "tokens_per_s", "decode_tokens_per_s", "achieved_bytes_per_s", "copy_bytes_per_s", "bandwidth_fraction",
    *MODEL_FILE_KEYS,
)  # fmt: skip

StepKey = tuple[int, int, int, int]  # drafted, accepted, emitted, draft forwards


@dataclass(frozen=True)
class Row:
    """One request replayed with one (method, k): its steps as counts of equal steps (order within a
    request changes no acceptance figure), so a million requests fit in memory and in a shard file."""

    index: int  # the request's place among the log's usable requests (log order)
    id: str
    category: str
    source: str
    prompt_tokens: int
    output_tokens: int
    finish: str
    steps: tuple[tuple[int, int, int, int, int], ...]  # (drafted, accepted, emitted, forwards, count)
    past_end: int
    past_end_drafts: int = 0  # drafted tokens past the log's end at the past_end steps (walk.Walk)

    def record(self) -> RequestRecord:
        steps: list[StepRecord] = []
        for d, a, e, f, count in self.steps:
            steps.extend([_step(d, a, e, f)] * count)
        return RequestRecord(
            id=self.id,
            category=self.category,
            prompt_tokens=self.prompt_tokens,
            output_tokens=self.output_tokens,
            latency_s=0.0,
            ttft_s=0.0,
            prefill_s=0.0,
            steps=tuple(steps),
            finish_reason=self.finish,  # type: ignore[arg-type]
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "i": self.index, "id": self.id, "category": self.category, "source": self.source,
            "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens, "finish": self.finish,
            "steps": [list(s) for s in self.steps], "past_end": self.past_end,
            "past_end_drafts": self.past_end_drafts,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Row:
        return cls(
            int(d["i"]), str(d["id"]), str(d["category"]), str(d["source"]), int(d["prompt_tokens"]),
            int(d["output_tokens"]), str(d["finish"]),
            tuple((int(s[0]), int(s[1]), int(s[2]), int(s[3]), int(s[4])) for s in d["steps"]),
            int(d["past_end"]), int(d.get("past_end_drafts", 0)),
        )  # fmt: skip


_STEP_CACHE: dict[StepKey, StepRecord] = {}


def _step(d: int, a: int, e: int, f: int) -> StepRecord:
    key = (d, a, e, f)
    s = _STEP_CACHE.get(key)
    if s is None:
        s = _STEP_CACHE[key] = StepRecord(d, a, e, 0.0, 0.0, f)
    return s


def _row(index: int, source: str, record: RequestRecord, past_end: int, past_end_drafts: int = 0) -> Row:
    counts = Counter((s.drafted, s.accepted, s.emitted, s.draft_forwards) for s in record.steps)
    steps = tuple(sorted((*key, n) for key, n in counts.items()))
    return Row(
        index, record.id, record.category, source, record.prompt_tokens, record.output_tokens,
        record.finish_reason, steps, past_end, past_end_drafts,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------- tally


@dataclass
class LogTally:
    """What the log held and what replay made of it; every count is of requests (lines with content)."""

    records: int = 0
    usable: int = 0
    warm: int = 0
    measured: int = 0
    other_shards: int = 0
    beyond_limit: int = 0
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    reasons: Counter[str] = field(default_factory=Counter)  # bad lines by reason (the first 1,000 reasons)
    flags: Counter[str] = field(default_factory=Counter)
    flagged: list[dict[str, str]] = field(default_factory=list)
    not_canonical: int = 0
    category_missing: int = 0  # requests --category-field found no value in
    warmup_marked: int = 0  # `load`'s warm-up requests, left out (not traffic)
    retokenized: int = 0  # responses logged as text only, encoded with the target's tokenizer
    engine_figures: int = 0  # measured requests whose log holds the engine's own speculative figures
    engine_listed: list[dict[str, Any]] = field(default_factory=list)  # the first MAX_LISTED of them
    models: Counter[str] = field(default_factory=Counter)
    greedy: int = 0
    sampled: int = 0
    unknown_temperature: int = 0

    def problem(self, p: Problem) -> None:
        self.records += 1
        self.problem_count += 1
        if p.reason in self.reasons or len(self.reasons) < 1000:
            self.reasons[p.reason] += 1
        if len(self.problems) < MAX_LISTED:
            self.problems.append(p)

    def flag(self, source: str, ident: str, flag: str, reason: str) -> None:
        self.flags[flag] += 1
        if len(self.flagged) < MAX_LISTED:
            self.flagged.append({"source": source, "id": ident, "flag": flag, "reason": reason})

    def as_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "usable": self.usable,
            "warm": self.warm,
            "measured": self.measured,
            "other_shards": self.other_shards,
            "beyond_limit": self.beyond_limit,
            "bad_lines": self.problem_count,
            "problems": [str(p) for p in self.problems],
            "set_aside": dict(self.flags),
            "set_aside_listed": self.flagged,
            "not_canonical": self.not_canonical,
            "category_missing": self.category_missing,
            "warmup_marked": self.warmup_marked,
            "retokenized": self.retokenized,
            "engine_figures": self.engine_figures,
            "engine_listed": self.engine_listed,
            "models": dict(self.models),
            "temperature": {
                "greedy": self.greedy,
                "sampled": self.sampled,
                "unknown": self.unknown_temperature,
            },
        }


# ----------------------------------------------------------------------------------------- figures


def _placeholder(name: str, path: str) -> ModelInfo:
    """Replay loads no weights: model facts are unknown (the memory figures are null)."""
    return ModelInfo(name, path, "replay", 0, 0, 0, "unknown", 0, 0, 0, implementation="replay")


def _strip(summary: dict[str, Any]) -> dict[str, Any]:
    for key in TIMING_KEYS:
        summary[key] = None
    summary.update(judge(summary))
    return summary


def figures(rows: Mapping[tuple[str, int], Sequence[Row]], target: str) -> list[dict[str, Any]]:
    """One candidate entry per (method, k): the docs/results.md summary of its rows (log order), overall
    and per category, computed by ``metrics.summarize`` as for ``bench``; timings null."""
    out = []
    info = _placeholder(target, target)
    for (label, k), part in rows.items():
        ordered = sorted(part, key=lambda r: r.index)
        run = RunRecord(info, _placeholder(label, label), k, 0.0, 1.0, tuple(r.record() for r in ordered))
        summary = _strip(summarize(run, None))
        by_category = {c: _strip(s) for c, s in summarize_by_category(run, None).items()}
        past_end = sum(r.past_end for r in ordered)
        past_end_drafts = sum(r.past_end_drafts for r in ordered)
        out.append(
            {
                "draft": label,
                "k": k,
                "summary": summary,
                "by_category": by_category,
                "past_end": past_end,
                "past_end_drafts": past_end_drafts,
            }
        )
    return out


# ------------------------------------------------------------------------------------------ replay


@dataclass
class Replayed:
    """A replay's rows per (method, k) and what the log held."""

    rows: dict[tuple[str, int], list[Row]]
    tally: LogTally
    # Model-free methods: [seconds spent proposing, proposals asked] — replay's own host time per row and
    # step, the lookup cost ``--costs`` uses where the cost file did not time the method (pricing.book).
    lookups: dict[tuple[str, int], list[float]] = field(default_factory=dict)


def _timed(proposer: ReplayProposer, cell: list[float]) -> None:
    """Count the seconds ``proposer.propose`` takes into ``cell`` ([seconds, calls])."""
    inner = proposer.propose

    def propose(context: Sequence[int], d: int) -> list[int]:
        t = perf_counter()
        out = inner(context, d)
        cell[0] += perf_counter() - t
        cell[1] += 1
        return out

    proposer.propose = propose  # type: ignore[method-assign]


def _runs(
    cfg: ReplayConfig, engine: Callable[[MethodSpec | DraftDir], ReplayProposer] | None
) -> dict[tuple[str, int], ReplayProposer]:
    runs: dict[tuple[str, int], ReplayProposer] = {}
    for parsed in cfg.parsed:
        for k in cfg.ks:
            if isinstance(parsed, DraftDir):
                if engine is None:
                    raise ReplayError(f"--method {parsed.path}: a draft model needs the engine (torch)")
                proposer = engine(parsed)
            else:
                proposer = replay_proposer(parsed, engine)  # type: ignore[arg-type]
            runs[(proposer.name, k)] = proposer
    return runs


def _beside_engine(
    ident: str, source: str, engine: Mapping[str, Any], rows: Mapping[tuple[str, int], Sequence[Row]]
) -> dict[str, Any]:
    """A request's own speculative figures as its engine logged them (SGLang's ``meta_info`` ``spec_*``),
    beside each (method, k)'s replayed counts of the same request (its last row: the one just walked)."""
    replayed = {}
    for (label, k), part in rows.items():
        steps = part[-1].steps
        drafting = sum(n for d, _, _, _, n in steps if d > 0)
        replayed[run_label(label, k)] = {
            "drafted": sum(d * n for d, _, _, _, n in steps),
            "accepted": sum(a * n for _, a, _, _, n in steps),
            "steps": drafting,
        }
    return {"id": ident, "source": source, "engine": dict(engine), "replayed": replayed}


def spread(counts: Mapping[str, int], n: int) -> dict[str, int]:
    """``n`` requests shared out across categories as evenly as their counts allow: the smallest categories
    give all they have, the rest split what is left equally (a category's share is never above its count)."""
    out: dict[str, int] = {}
    left = n
    ordered = sorted(counts.items(), key=lambda item: (item[1], item[0]))
    for i, (category, count) in enumerate(ordered):
        share = min(count, -(-left // (len(ordered) - i)))
        out[category] = share
        left -= share
    return out


def limit_quotas(cfg: ReplayConfig, rules: CategoryRules | None) -> dict[str, int]:
    """``--limit N`` as a count per category (:func:`spread`), from one read of the log's requests (not
    tokenized: a request set aside later leaves its category's share short)."""
    assert cfg.limit is not None
    counts: Counter[str] = Counter()
    try:
        for item in iter_log(cfg.sources, fmt=cfg.fmt, category_field=cfg.category_field, rules=rules):
            if isinstance(item, Problem) or item.warmup:
                continue
            if item.model is None or item.model == cfg.model_name:
                counts[item.category] += 1
    except NoResponses as e:
        raise ReplayError(str(e)) from None
    except OSError as e:
        raise ReplayError(f"--from: cannot read ({e})") from None
    return spread(counts, cfg.limit)


def replay_log(
    cfg: ReplayConfig,
    checks: TokenChecks,
    *,
    engine: Callable[[MethodSpec | DraftDir], ReplayProposer] | None = None,
    reporter: Reporter | None = None,
) -> Replayed:
    """Walk every usable request of the log with every (method, k) (see the module docstring)."""
    reporter = reporter or Silent()
    rules = None
    if cfg.rules is not None:
        try:
            rules = load_rules(cfg.rules)
        except RulesError as e:
            raise ReplayError(f"--rules: {e}") from None
    runs = _runs(cfg, engine)
    learners = [p for p in runs.values() if p.learns]
    rows: dict[tuple[str, int], list[Row]] = {key: [] for key in runs}
    lookups = {key: [0.0, 0.0] for key, p in runs.items() if is_model_free(key[0])}
    for key, cell in lookups.items():
        _timed(runs[key], cell)
    tally = LogTally()
    shard_i, shard_n = cfg.shard or (0, 1)
    total = sum(p.stat().st_size for p in log_files(cfg.sources))
    usable = 0
    # Suffix trees are millions of small objects without cycles: the cyclic collector's passes over them
    # would take half of a replay's time, and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    with contextlib.ExitStack() as stack:
        if collecting:
            stack.callback(gc.enable)
        task = stack.enter_context(reporter.task("replaying (kB of log)", max(1, total // 1024)))
        done = 0

        def advance(n: int) -> None:
            nonlocal done
            before = done // 1024
            done += n
            if done // 1024 > before:
                task.advance(done // 1024 - before)

        quotas = limit_quotas(cfg, rules) if cfg.limit is not None else None
        taken: Counter[str] = Counter()
        items = iter_log(
            cfg.sources, fmt=cfg.fmt, category_field=cfg.category_field, rules=rules, on_bytes=advance
        )
        try:
            for item in items:
                if isinstance(item, Problem):
                    tally.problem(item)
                    continue
                tally.records += 1
                if item.warmup:
                    tally.warmup_marked += 1
                    continue
                if cfg.category_field is not None and not item.category_found:
                    tally.category_missing += 1
                if item.model is not None:
                    tally.models[item.model] += 1
                if item.temperature is None:
                    tally.unknown_temperature += 1
                elif item.temperature == 0:
                    tally.greedy += 1
                else:
                    tally.sampled += 1
                prepared = prepare(item, checks)
                if not isinstance(prepared, Prepared):
                    tally.flag(item.source, item.id, *prepared)
                    continue
                tally.usable += 1
                tally.not_canonical += prepared.not_canonical
                tally.retokenized += item.output_ids is None
                position = usable
                usable += 1
                measured = position >= cfg.warm and (position - cfg.warm) % shard_n == shard_i
                if position < cfg.warm:
                    tally.warm += 1
                elif quotas is not None and taken[item.category] >= quotas.get(item.category, 0):
                    tally.beyond_limit += 1
                    if not learners and sum(taken.values()) >= sum(quotas.values()):
                        break
                    measured = False
                else:
                    taken[item.category] += 1  # within --limit's share of its category
                    if not measured:
                        tally.other_shards += 1
                if not measured:
                    for proposer in learners:
                        proposer.absorb(prepared.prompt, prepared.response)
                    continue
                tally.measured += 1
                for (label, k), proposer in runs.items():
                    w = walk(
                        proposer, prepared.prompt, prepared.response, k=k, max_tokens=prepared.max_tokens,
                        eos_ids=checks.eos_ids, request_id=item.id, category=item.category,
                        draft_rule=cfg.draft_rule,
                    )  # fmt: skip
                    row = _row(position, item.source, w.record, w.past_end, w.past_end_drafts)
                    rows[(label, k)].append(row)
                so_far = f"replaying: {tally.measured:,} requests × {len(runs)} candidates (kB of log)"
                task.update(description=so_far)
                if item.engine_spec:
                    tally.engine_figures += 1
                    if len(tally.engine_listed) < MAX_LISTED:
                        tally.engine_listed.append(
                            _beside_engine(item.id, item.source, item.engine_spec, rows)
                        )
        except NoResponses as e:
            raise ReplayError(str(e)) from None
        except OSError as e:
            raise ReplayError(f"--from: cannot read ({e})") from None
    return Replayed(rows, tally, lookups)


# ------------------------------------------------------------------------------------------ result


def _section(
    cfg: ReplayConfig, replayed: Replayed, candidates: Sequence[Mapping[str, Any]], costs: Any
) -> dict[str, Any]:
    t = replayed.tally
    section: dict[str, Any] = {
        "log": t.as_dict(),
        "exact": t.sampled == 0 and t.unknown_temperature == 0,
        "past_end": {f"{c['draft']}@k={c['k']}": c["past_end"] for c in candidates},
        "past_end_drafts": {f"{c['draft']}@k={c['k']}": c["past_end_drafts"] for c in candidates},
        "lookup_us_per_step": {
            f"{c['draft']}@k={c['k']}": c["lookup_s"] * 1e6
            for c in candidates
            if c.get("lookup_s") is not None
        },
        "costs": costs,
    }
    if cfg.shard is not None:
        section["shard"] = {"index": cfg.shard[0], "count": cfg.shard[1]}
        section["rows"] = {
            run_label(label, k): [r.as_dict() for r in rows] for (label, k), rows in replayed.rows.items()
        }
    return section


def build_result(
    cfg: ReplayConfig,
    replayed: Replayed,
    *,
    costs: Callable[[Sequence[Mapping[str, Any]]], Any] | None = None,
) -> ResultFile:
    """The result file (written to ``--json`` as it is built): bench's shape, kind ``replay``."""
    result = ResultFile(cfg.json_out, kind="replay", config=cfg.as_dict())
    result.set_models(_placeholder(cfg.model_name, str(cfg.target)))
    candidates = figures(replayed.rows, cfg.model_name)
    for c in candidates:
        result.add_candidate(c["draft"], c["k"], c["summary"], c["by_category"], method=c["draft"])
        seconds, calls = replayed.lookups.get((c["draft"], c["k"]), (0.0, 0.0))
        if calls:
            c["lookup_s"] = seconds / calls
    predicted = costs(candidates) if costs is not None else None
    result.set_section("replay", _section(cfg, replayed, candidates, predicted))
    return result


def write_csv(path: Path, rows: Mapping[tuple[str, int], Sequence[Row]]) -> None:
    """One line per request and (method, k), the columns of ``bench --csv`` (times empty: not measured)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", errors="backslashreplace", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for (label, k), part in rows.items():
            for r in sorted(part, key=lambda r: r.index):
                row = request_row(run_label(label, k), label, k, r.record())
                row.update(latency_ms=None, ttft_ms=None, tpot_ms=None)
                writer.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])


def store_rows(
    rows: Mapping[tuple[str, int], Sequence[Row]],
) -> list[tuple[str, str | None, int, RequestRecord]]:
    """(slot, draft, k, record) for the run store, every (method, k) in log order."""
    return [
        (run_label(label, k), label, k, r.record())
        for (label, k), part in rows.items()
        for r in sorted(part, key=lambda r: r.index)
    ]


def replay_from(cfg: ReplayConfig, *, reporter: Reporter | None = None) -> tuple[dict[str, Any], Replayed]:
    """Everything ``specmeter replay`` does with a config, one ``--shard`` included (a Ray worker runs
    exactly this): ``--costs`` read, ``--target``'s tokenizer (and weights, for the draft methods) opened,
    the log replayed, the result file and CSV written. Raises :class:`ReplayError` or ``CostsError``."""
    from specmeter.pricing import predictor
    from specmeter.replay.target import engine_proposers, open_checks

    predict = predictor(cfg.costs) if cfg.costs is not None else None
    checks = open_checks(cfg)
    engine = engine_proposers(cfg)
    return run_replay(cfg, checks, engine=engine, reporter=reporter, costs=predict)


def run_replay(
    cfg: ReplayConfig,
    checks: TokenChecks,
    *,
    engine: Callable[[MethodSpec | DraftDir], ReplayProposer] | None = None,
    reporter: Reporter | None = None,
    costs: Callable[[Sequence[Mapping[str, Any]]], Any] | None = None,
) -> tuple[dict[str, Any], Replayed]:
    """Replay, then write the result file, CSV and the store's run; the result as a dict."""
    replayed = replay_log(cfg, checks, engine=engine, reporter=reporter)
    if replayed.tally.measured == 0:
        raise _nothing(cfg, replayed.tally)
    result = build_result(cfg, replayed, costs=costs)
    result.finish()
    if cfg.csv_out is not None:
        write_csv(cfg.csv_out, replayed.rows)
    return result.to_dict(), replayed


def _nothing(cfg: ReplayConfig, t: LogTally) -> ReplayError:
    where = ", ".join(str(s) for s in cfg.sources)
    if t.flags.get("other_model") and t.models:
        names = ", ".join(sorted(t.models))
        return ReplayError(
            f"{where}: no request of model {cfg.model_name!r} to replay (the log names {names}); "
            "--model NAME picks the model whose requests to replay"
        )
    if t.usable and t.usable <= cfg.warm:
        return ReplayError(
            f"{where}: all {t.usable} usable requests are within --warm {cfg.warm}: nothing left to measure"
        )
    if t.usable:
        return (
            EmptyShard(f"{where}: no usable request falls in --shard {cfg.shard[0]}/{cfg.shard[1]}")
            if cfg.shard
            else ReplayError(f"{where}: nothing to replay")
        )
    return ReplayError(
        f"{where}: no usable request ({t.problem_count} bad lines, {sum(t.flags.values())} set aside)"
        + _first_reasons(t)
    )


def _first_reasons(t: LogTally, shown: int = 3) -> str:
    """The commonest reasons lines were bad or set aside, with their counts: '; 60× field …'."""
    counts = Counter(t.reasons)
    counts.update({f"set aside ({flag})": n for flag, n in t.flags.items()})
    if not counts:
        return ""
    return "; " + "; ".join(f"{n}× {reason}" for reason, n in counts.most_common(shown))
