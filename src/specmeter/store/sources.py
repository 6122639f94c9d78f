"""Load "a run" for compare, report and roi: a store run id (``12``, ``latest``, ``latest~1``) or a result
JSON file (docs/results.md).

A stored run also brings its per-request records, which is what exact bootstrap intervals, gap
distributions and timelines need; a JSON file brings only summaries. A run that was killed before it
could write any summary (SIGKILL, power cut) still has its committed requests: its summaries are
rebuilt from them here, so nothing measured is lost (figures that need the cost curve stay empty).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specmeter import jsonsafe
from specmeter.metrics.records import BASELINE, ModelInfo, RequestRecord, RunRecord
from specmeter.report.validate import validate_result
from specmeter.store.db import RunStore, StoredRequest, StoreError

__all__ = ["RunSource", "is_run_ref", "load_result_file", "load_source", "rebuild_result"]

_RUN_REF = re.compile(r"^(\d+|latest(~\d+)?)$")


@dataclass
class RunSource:
    """One run as compare/report/roi see it."""

    name: str  # "run 12" or the file path
    result: dict[str, Any]
    requests: list[StoredRequest] | None = None  # None for a JSON file
    run_id: int | None = None
    status: str | None = None
    notes: list[str] = field(default_factory=list)

    def slot_records(self, slot: str) -> list[RequestRecord]:
        return [r.record for r in self.requests or [] if r.slot == slot]


def is_run_ref(text: str) -> bool:
    """A store reference (number, latest, latest~N) rather than a file path."""
    return bool(_RUN_REF.match(text.strip()))


def load_result_file(path: Path) -> dict[str, Any]:
    """A docs/results.md JSON file; StoreError with file (and line, or field) on any problem."""
    if not path.is_file():
        raise StoreError(f"{path}: no such result file (and not a run id such as 12 or latest)")
    try:
        data = jsonsafe.loads(path.read_text(encoding="utf-8"), surrogates=True)
    except json.JSONDecodeError as e:
        raise StoreError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise StoreError(f"{path}: unreadable ({e})") from e
    problems = validate_result(data)
    if problems:
        # One line per problem, each naming the field (docs/results.md) so the file can be fixed.
        raise StoreError("\n".join(f"{path}: {p}" for p in problems))
    assert isinstance(data, dict)
    return data


def load_source(ref: str, store_path: Path) -> RunSource:
    """Resolve ``ref`` to a run: a store reference, else a result JSON file."""
    if not is_run_ref(ref):
        path = Path(ref)
        return RunSource(name=str(path), result=load_result_file(path))
    with RunStore(store_path, create=False) as store:
        run_id = store.resolve(ref)
        info = store.run_info(run_id)
        result = store.result(run_id)
        problems = validate_result(result)
        if problems:  # a row edited by hand or another tool: what a result file would be told, per field
            raise StoreError("\n".join(f"{store_path}: run {run_id}: {p}" for p in problems))
        requests = store.requests(run_id)
    source = RunSource(
        name=f"run {run_id}", result=result, requests=requests, run_id=run_id, status=info.status
    )
    if info.status == "partial":
        source.notes.append(f"run {run_id} is partial: it was interrupted; figures cover what finished")
    if _lacks_summaries(result) and requests:
        source.result = rebuild_result(result, requests)
        source.notes.append(
            f"run {run_id}: summaries rebuilt from {len(requests)} stored request records "
            "(the run stopped before writing them; cost-curve figures are unavailable)"
        )
    return source


def _lacks_summaries(result: Mapping[str, Any]) -> bool:
    baseline = result.get("baseline")
    has_base = isinstance(baseline, Mapping) and baseline.get("summary") is not None
    return not has_base and not result.get("candidates")


def _model(info: Any) -> ModelInfo | None:
    if not isinstance(info, Mapping):
        return None
    try:
        return ModelInfo(**{k: info[k] for k in ModelInfo.__dataclass_fields__ if k in info})
    except TypeError:
        return None


def rebuild_result(result: Mapping[str, Any], requests: Sequence[StoredRequest]) -> dict[str, Any]:
    """``result`` with baseline and candidate summaries computed from the stored request records."""
    from specmeter.metrics.summary import summarize, summarize_by_category

    out: dict[str, Any] = json.loads(json.dumps(result))  # a deep copy; the caller's dict stays as stored
    run = out.get("run") or {}
    models = run.get("models") or {}
    config = run.get("config") or {}
    target = _model(models.get("target"))
    if target is None:
        return out  # without the target's facts no summary can be computed
    drafts = {name: m for name, info in (models.get("drafts") or {}).items() if (m := _model(info))}
    temperature = float(config.get("temperature", 0.0) or 0.0)
    top_p = float(config.get("top_p", 1.0) or 1.0)

    def run_record(draft: ModelInfo | None, k: int, slot: str) -> RunRecord:
        records = tuple(r.record for r in requests if r.slot == slot)
        return RunRecord(target, draft, k, temperature, top_p, requests=records)

    base = run_record(None, 0, BASELINE)
    out["baseline"] = {"summary": summarize(base, None), "by_category": summarize_by_category(base, None)}
    seen: list[tuple[str, str, int]] = []
    for r in requests:
        if r.draft is not None and (r.slot, r.draft, r.k) not in seen:
            seen.append((r.slot, r.draft, r.k))
    candidates = []
    for slot, draft_name, k in seen:
        draft = drafts.get(draft_name)
        if draft is None:
            continue
        cand = run_record(draft, k, slot)
        candidates.append(
            {
                "draft": draft_name,
                "k": k,
                "summary": summarize(cand, base),
                "by_category": summarize_by_category(cand, base),
            }
        )
    out["candidates"] = candidates
    return out
