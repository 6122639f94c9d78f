"""Result files: the whole-result JSON, the per-request CSV and the per-request JSONL log.

The layouts are the binding schema of docs/results.md. This module consumes summary dicts (plain
JSON-able dicts produced by ``specmeter.metrics``) and raw ``RequestRecord``s; the only figure it derives
per request is TPOT, with ``metrics.latency.tpot`` (the definition in docs/metrics.md), plus unit
conversions.

Everything here is written so that an interrupted run (Ctrl-C) leaves usable files behind: the JSON is
rewritten atomically after every change with ``complete: false`` until ``finish()``, and the CSV/JSONL
sinks flush every row as it is written.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from specmeter import __version__
from specmeter.metrics.latency import tpot
from specmeter.metrics.records import ModelInfo, RequestRecord
from specmeter.report.outfile import FORMATS, open_for_writing, write_text_atomic

SCHEMA_VERSION = 1
# The keys every result file has; a command's own sections (set_section) go beside them.
_SHARED_KEYS = ("schema_version", "kind", "complete", "run", "baseline", "candidates")

CSV_COLUMNS: tuple[str, ...] = (
    "run",
    "draft",
    "k",
    "id",
    "category",
    "prompt_tokens",
    "output_tokens",
    "latency_ms",
    "ttft_ms",
    "tpot_ms",
    "accepted_tokens",
    "drafted_tokens",
    "steps",
    "finish_reason",
    "matches_baseline",
    "error",
)

LOG_FIELDS: tuple[str, ...] = (
    "run",
    "draft",
    "k",
    "id",
    "category",
    "output_tokens",
    "latency_ms",
    "accepted_tokens",
    "drafted_tokens",
    "steps",
    "ttft_ms",
    "matches_baseline",
    "error",
)

PathLike = str | os.PathLike[str]


# --------------------------------------------------------------------------------------------- JSON


def _jsonable(value: Any) -> Any:
    """A copy of ``value`` that ``json.dumps(allow_nan=False)`` accepts.

    NaN/inf become null: the standard JSON parsers of dashboards reject the ``NaN`` token Python would
    write, and a metric that came out non-finite does not apply, which results.md spells as null.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def write_json_atomic(
    path: PathLike, data: Mapping[str, Any], *, marker: str | None = None, schedule: bool = False
) -> None:
    """Write ``data`` as JSON to ``path`` so that readers only ever see a complete file.

    ``marker`` (a command's name) puts ``schema_version`` and ``kind`` first, as every result file has
    them, so that a later run recognizes the file as specmeter's and may replace it; ``schedule`` writes a
    vLLM speculative config (``sweep --schedule-out``), which has no such keys. The path is checked by
    ``report.outfile`` (never a link, a device or someone else's file: :class:`~specmeter.report.outfile.
    OutputRefused`).
    """
    data = dict(data)
    if marker is not None:
        data = {"schema_version": SCHEMA_VERSION, "kind": marker, **data}
    elif "schema_version" in data and "kind" in data:  # first, where the next run looks for them
        data = {"schema_version": data.pop("schema_version"), "kind": data.pop("kind"), **data}
    text = json.dumps(_jsonable(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomic(path, text, FORMATS["schedule" if schedule else "json"])


def environment_info() -> dict[str, Any]:
    """Where the run happened. Callers add engine facts (``device``, ``threads``) themselves.

    torch is reported only when something already imported it: importing it here would cost seconds and
    break the rule that report/ never imports torch.
    """
    info: dict[str, Any] = {
        "specmeter": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch"] = str(getattr(torch, "__version__", "unknown"))
    return info


def model_info_dict(info: ModelInfo) -> dict[str, Any]:
    """``ModelInfo`` as the JSON object stored under ``run.models``."""
    return dataclasses.asdict(info)


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ResultFile:
    """The whole-result JSON of docs/results.md, rewritten atomically as results arrive.

    Every setter saves immediately (when a path is given), so the file on disk is always valid JSON
    holding everything measured so far, with ``complete: false`` until :meth:`finish`. Used as a context
    manager it finishes on a clean exit and leaves ``complete: false`` when an exception (Ctrl-C included)
    escapes.
    """

    def __init__(
        self,
        path: PathLike | None,
        *,
        kind: str,
        config: Mapping[str, Any],
        environment: Mapping[str, Any] | None = None,
        started_at: str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.kind = kind
        self.config: dict[str, Any] = dict(config)
        self.environment: dict[str, Any] = (
            dict(environment) if environment is not None else environment_info()
        )
        self.started_at = started_at if started_at is not None else _utc_now()
        self._models: dict[str, Any] = {"target": None, "drafts": {}}
        self._baseline: dict[str, Any] = {"summary": None, "by_category": {}}
        self._candidates: list[dict[str, Any]] = []
        self._sections: dict[str, Any] = {}
        self._complete = False

    @property
    def complete(self) -> bool:
        return self._complete

    def set_models(
        self,
        target: ModelInfo | Mapping[str, Any] | None,
        drafts: Mapping[str, ModelInfo | Mapping[str, Any]] | None = None,
    ) -> None:
        """Record the static model facts (``run.models``)."""

        def as_dict(m: ModelInfo | Mapping[str, Any]) -> dict[str, Any]:
            return model_info_dict(m) if isinstance(m, ModelInfo) else dict(m)

        self._models = {
            "target": as_dict(target) if target is not None else None,
            "drafts": {name: as_dict(m) for name, m in (drafts or {}).items()},
        }
        self.save()

    def set_baseline(
        self,
        summary: Mapping[str, Any] | None,
        by_category: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._baseline = {"summary": summary, "by_category": dict(by_category or {})}
        self.save()

    def add_candidate(
        self,
        draft: str,
        k: int,
        summary: Mapping[str, Any] | None,
        by_category: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        key: Sequence[str] = ("draft", "k"),
        **extra: Any,
    ) -> None:
        """Add a candidate entry, or replace the one that has the same values in the ``key`` fields.

        The entry is ``{"draft", "k", "summary", "by_category"}`` plus the ``extra`` fields. ``bench`` keys
        candidates by (draft, k), so a later summary of the same run replaces a partial one; ``load`` keys
        its levels by ``("concurrency", "rate")`` and adds each level's own fields as ``extra``.
        """
        entry = {"draft": draft, "k": k, "summary": summary, "by_category": dict(by_category or {}), **extra}
        missing = [f for f in key if f not in entry]
        if missing:
            raise ValueError(f"candidate key fields {missing} are not in the entry")
        ident = tuple(entry[f] for f in key)
        for i, existing in enumerate(self._candidates):
            if tuple(existing.get(f) for f in key) == ident:
                self._candidates[i] = entry
                break
        else:
            self._candidates.append(entry)
        self.save()

    def set_section(self, name: str, section: Mapping[str, Any] | None) -> None:
        """A top-level section beside the shared ones (``tune``, ``select``, ``vllm``); None removes it."""
        if name in _SHARED_KEYS:
            raise ValueError(f"{name!r} is a shared key of the result file, not a section")
        if section is None:
            self._sections.pop(name, None)
        else:
            self._sections[name] = section
        self.save()

    def to_dict(self) -> dict[str, Any]:
        """The JSON structure, sanitised (non-finite floats are null)."""
        data: dict[str, Any] = _jsonable(
            {
                "schema_version": SCHEMA_VERSION,
                "kind": self.kind,
                "complete": self._complete,
                "run": {
                    "config": self.config,
                    "environment": self.environment,
                    "started_at": self.started_at,
                    "models": self._models,
                },
                "baseline": self._baseline,
                "candidates": self._candidates,
                **self._sections,
            }
        )
        return data

    def save(self) -> None:
        """Rewrite the file with the current state; a no-op without a path."""
        if self.path is not None:
            write_json_atomic(self.path, self.to_dict())

    def finish(self) -> None:
        """Mark the run complete and save."""
        self._complete = True
        self.save()

    def __enter__(self) -> ResultFile:
        self.save()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.save()


# -------------------------------------------------------------------------------------- per request


def _ms(seconds: float | None) -> float | None:
    # Rounded to the microsecond: perf_counter noise below that only bloats the files.
    return None if seconds is None else round(seconds * 1000.0, 3)


def request_row(run_label: str, draft: str | None, k: int, record: RequestRecord) -> dict[str, Any]:
    """One request as a dict with every CSV column (JSON types; None where a value does not apply).

    ``steps`` is S as in the summaries (verification steps, d_s ≥ 1), so τ = 1 + A/S can be recomputed
    from the rows; a baseline request therefore has 0 steps.
    """
    return {
        "run": run_label,
        "draft": draft,
        "k": k,
        "id": record.id,
        "category": record.category or None,  # serve's log: null when the request named no domain
        "prompt_tokens": record.prompt_tokens,
        "output_tokens": record.output_tokens,
        "latency_ms": _ms(record.latency_s),
        "ttft_ms": _ms(record.ttft_s),
        "tpot_ms": _ms(tpot(record)),
        "accepted_tokens": sum(s.accepted for s in record.steps),
        "drafted_tokens": sum(s.drafted for s in record.steps),
        "steps": sum(1 for s in record.steps if s.drafted >= 1),
        "finish_reason": record.finish_reason,
        "matches_baseline": record.matches_baseline,
        "error": record.error,
    }


def _csv_cell(value: Any) -> Any:
    # Empty for "does not apply"; JSON spelling for booleans so CSV and JSONL read the same.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


class RequestSink:
    """Appends one CSV row and one JSONL line per finished request; either path may be None.

    Each write is flushed, so an interrupted run keeps every row written before the interruption. Files are
    truncated on open and the CSV header is written once, at open.
    """

    def __init__(
        self, csv_path: PathLike | None = None, log_path: PathLike | None = None, *, fsync: bool = False
    ) -> None:
        self._fsync = fsync
        self._csv_file: IO[str] | None = None
        self._csv: Any = None  # csv.writer's type is private to typeshed
        self._log_file: IO[str] | None = None
        self.rows_written = 0
        self._closed = False
        # ExitStack so that a failure opening the second file closes the first.
        with ExitStack() as stack:
            if csv_path is not None:
                self._csv_file = stack.enter_context(_open_for_rows(csv_path, "csv"))
                self._csv = csv.writer(self._csv_file, lineterminator="\n")
                self._csv.writerow(CSV_COLUMNS)
                self._flush(self._csv_file)
            if log_path is not None:
                self._log_file = stack.enter_context(_open_for_rows(log_path, "log"))
            stack.pop_all()

    def write(
        self,
        run_label: str,
        draft: str | None,
        k: int,
        record: RequestRecord,
        *,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """One row; ``extra`` fields (``serve``'s time, domain, tenant, prompt) follow the log's own fields
        in the JSONL line and never replace them."""
        if self._closed:
            raise ValueError("RequestSink is closed")
        row = request_row(run_label, draft, k, record)
        if self._csv_file is not None:
            self._csv.writerow([_csv_cell(row[c]) for c in CSV_COLUMNS])
            self._flush(self._csv_file)
        if self._log_file is not None:
            line = {f: row[f] for f in LOG_FIELDS}
            line.update({key: value for key, value in (extra or {}).items() if key not in line})
            self._log_file.write(json.dumps(_jsonable(line), ensure_ascii=False, allow_nan=False) + "\n")
            self._flush(self._log_file)
        self.rows_written += 1

    def _flush(self, fh: IO[str]) -> None:
        fh.flush()
        if self._fsync:
            os.fsync(fh.fileno())

    def close(self) -> None:
        for fh in (self._csv_file, self._log_file):
            if fh is not None:
                fh.close()
        self._csv_file = self._log_file = None
        self._closed = True

    def __enter__(self) -> RequestSink:
        return self

    def __exit__(self, *exc_info: object) -> None:  # closed however the block ends
        self.close()


def _open_for_rows(path: PathLike, fmt: str) -> IO[str]:
    # newline="" is what the csv module requires; line buffering is a second line of defence behind flush.
    # A lone surrogate becomes its escape (\ud800; in the JSONL the same string) instead of a
    # UnicodeEncodeError halfway through a run. The path is checked first (report.outfile).
    return open_for_writing(path, FORMATS[fmt], newline="", buffering=1)
