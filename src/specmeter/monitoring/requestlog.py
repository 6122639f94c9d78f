"""Per-request logs → one :class:`RequestObs` per request: the field report's three numbers, and a domain.

"Log three numbers per request — generated tokens, latency, accepted tokens" (with drafted tokens, so that
α = A/D can be formed). Counters on /metrics carry no domain; a per-request log does. Each line of a JSONL
log is read by the first adapter that recognises it (``--fields`` overrides any field); as
accepted A, drafted D, steps S, tokens, latency:

- specmeter (``serve --log``, ``bench --log``): ``accepted_tokens``, ``drafted_tokens``, ``steps``,
  ``output_tokens``, ``latency_ms``;
- vLLM's ``metrics.speculative_decoding`` (PR #48915) in a logged response: ``num_accepted_draft_tokens``,
  ``num_draft_tokens``, ``num_spec_steps``, ``usage.completion_tokens``, no latency of its own;
- SGLang's ``meta_info``: ``spec_accept_token_num``, ``spec_draft_token_num``, ``spec_verify_ct``,
  ``completion_tokens``, ``e2e_latency`` (seconds); the later spellings of A and D
  (``spec_accepted_drafts`` / ``spec_proposed_drafts``, ``spec_num_correct_drafts`` /
  ``spec_num_proposed_drafts``) read the same (``adapters.sglang_meta``, shared with ``load``);
- llama.cpp's ``timings``: ``draft_n_accepted``, ``draft_n``, no steps, ``predicted_n``,
  ``prompt_ms + predicted_ms``.

The vLLM, SGLang and llama.cpp objects are found at the top of the line or under ``response`` (``body``,
``choices[0]`` for SGLang), as a gateway logs a response body. The time of a request is the first of
``time``, ``timestamp``, ``ts``, ``created``, ``end_time`` (Unix seconds, milliseconds, or ISO 8601); its
domain the first of ``domain``, ``route``, ``metadata.domain``, ``request.metadata.domain``, ``category``;
its tenant ``tenant``, ``metadata.tenant``, ``request.metadata.tenant``, ``user``, ``request.user``.
specmeter's ``bench`` logs hold several runs; their run label (``draft@k=4``, ``baseline``) stands in for
the tenant so runs are never pooled. `load`'s warm-up requests (``metrics.warmup``) are left out and
counted (``LogTail.warmup``).

:class:`LogTail` follows a file or a directory that grows: each poll returns the complete lines appended
since the last one (a half-written last line waits for its newline), picks up new files, and starts a file
again from the top when it shrank (rotated or truncated).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specmeter import jsonsafe
from specmeter.metrics.warmup import is_warmup
from specmeter.monitoring.adapters import sglang_meta
from specmeter.safetext import valid_text

__all__ = [
    "CANONICAL_FIELDS",
    "FieldMapError",
    "LogTail",
    "RequestObs",
    "parse_fields",
    "parse_line",
    "parse_time",
    "problem_kind",
]

# What --fields may map, and the unit it is read in.
CANONICAL_FIELDS = (
    "accepted",
    "drafted",
    "steps",
    "tokens",
    "latency",
    "latency_ms",
    "domain",
    "tenant",
    "time",
)
NO_DOMAIN = "all"
# Input limits (docs/results.md, "Input limits"): a time past these or a count past MAX_COUNT is a bad line,
# not a window in the year 31690708 (a traceback from datetime) or an integer SQLite cannot store.
TIME_MIN = 0.0  # 1970-01-01T00:00:00Z
TIME_MAX = 32503680000.0  # 3000-01-01T00:00:00Z
MAX_COUNT = 10**12  # tokens or steps of one request


class FieldMapError(ValueError):
    """A bad ``--fields`` value (one line naming the problem)."""


@dataclass(frozen=True)
class RequestObs:
    """One request: counts (None where the log does not say), timing, and who sent it."""

    source: str  # file:line
    time: float | None  # Unix seconds (end of the request when the log says so)
    domain: str
    tenant: str | None
    accepted: int | None
    drafted: int | None
    steps: int | None
    tokens: int | None
    latency_s: float | None
    shape: str  # which adapter read it: specmeter, vllm, sglang, llamacpp or fields

    @property
    def group(self) -> tuple[str, str | None]:
        return (self.domain, self.tenant)


def parse_fields(text: str | None) -> dict[str, str]:
    """``accepted=a.b,drafted=c,latency=dur_ms`` → ``{canonical: dotted path}``."""
    if not text:
        return {}
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, path = (s.strip() for s in part.partition("="))
        if not sep or not key or not path:
            raise FieldMapError(f"--fields: {part.strip()!r} is not NAME=FIELD (e.g. accepted=spec.accepted)")
        if key not in CANONICAL_FIELDS:
            raise FieldMapError(f"--fields: unknown name {key!r} (one of {', '.join(CANONICAL_FIELDS)})")
        if key in out:
            raise FieldMapError(f"--fields: {key!r} is given twice")
        out[key] = path
    if "latency" in out and "latency_ms" in out:
        raise FieldMapError("--fields: give latency (seconds) or latency_ms, not both")
    return out


def _get(obj: object, path: str) -> object:
    """The value at a dotted path (``choices.0.meta_info``: list indices allowed); None when absent."""
    value = obj
    for key in path.split("."):
        if isinstance(value, Mapping):
            if key not in value:
                return None
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def _first(obj: object, paths: Sequence[str]) -> object:
    for path in paths:
        value = _get(obj, path)
        if value is not None:
            return value
    return None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}… ({len(text)} characters)"


def _count(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"field '{name}': {_shown(value)} is not a count")
    if isinstance(value, float) and not math.isfinite(value):  # an int is compared as it is: 10**400 is one
        raise ValueError(f"field '{name}': {_shown(value)} is not a count")
    if value < 0 or value != int(value):
        raise ValueError(f"field '{name}': {_shown(value)} is not a non-negative integer")
    if value > MAX_COUNT:
        raise ValueError(f"field '{name}': {_shown(value)} is more than 10^12, not a count of one request")
    return int(value)


def _seconds(value: object, name: str, scale: float = 1.0) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"field '{name}': {value!r} is not a duration")
    return float(value) * scale


_ISO_Z = re.compile(r"Z$")


def parse_time(value: object) -> float | None:
    """Unix seconds from seconds, milliseconds (values past year 33658 in seconds), or ISO 8601 text;
    ValueError for a time before 1970 or from the year 3000 on (:data:`TIME_MIN`, :data:`TIME_MAX`)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"time {value!r} is neither Unix seconds nor ISO 8601")
        if not TIME_MIN <= value <= TIME_MAX * 1000.0:  # compared before float(): 10**400 is an int
            raise ValueError(f"time {_shown(value)} is out of range (Unix seconds or ms, 1970 to 3000)")
        seconds = float(value) / 1000.0 if value > 1e12 else float(value)
    elif isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(_ISO_Z.sub("+00:00", value.strip()))
        except ValueError:
            raise ValueError(f"time {_shown(value)} is neither Unix seconds nor ISO 8601") from None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)  # a log without a zone: read as UTC, like Prometheus
        seconds = stamp.timestamp()
    else:
        raise ValueError(f"time {_shown(value)} is neither Unix seconds nor ISO 8601")
    if not TIME_MIN <= seconds <= TIME_MAX:
        raise ValueError(f"time {_shown(value)} is out of range (Unix seconds or ms, 1970 to 3000)")
    return seconds


def _label(value: object) -> str | None:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)) and str(value).strip():
        return valid_text(str(value).strip())  # a lone surrogate would break the JSON and SQLite outputs
    return None


_TIME = ("time", "timestamp", "ts", "created", "end_time", "response.created")
_DOMAIN = ("domain", "route", "metadata.domain", "request.metadata.domain", "category")
_TENANT = ("tenant", "metadata.tenant", "request.metadata.tenant", "user", "request.user")
_WRAPPERS = ("", "response.", "response.body.", "body.")


def _adapter(obj: Mapping[str, Any]) -> tuple[str, dict[str, object]] | None:
    """(shape, raw values by canonical name) from the first adapter that recognises the line."""
    if "accepted_tokens" in obj and "drafted_tokens" in obj:
        latency = obj.get("latency_ms")
        run = obj.get("run")
        return "specmeter", {
            "accepted": obj.get("accepted_tokens"),
            "drafted": obj.get("drafted_tokens"),
            "steps": obj.get("steps"),
            "tokens": obj.get("output_tokens"),
            "latency_ms": latency,
            "domain": _first(obj, ("domain", "category")),
            "tenant": _first(obj, _TENANT) or (run if isinstance(run, str) and run != "serve" else None),
        }
    for prefix in _WRAPPERS:
        spec = _get(obj, prefix + "metrics.speculative_decoding")
        if isinstance(spec, Mapping):
            return "vllm", {
                "accepted": spec.get("num_accepted_draft_tokens"),
                "drafted": spec.get("num_draft_tokens"),
                "steps": spec.get("num_spec_steps"),
                "tokens": _get(obj, prefix + "usage.completion_tokens"),
            }
    for path in ("meta_info", "response.meta_info", "choices.0.meta_info", "response.choices.0.meta_info"):
        meta = sglang_meta(_get(obj, path))  # every spelling SGLang has used (adapters owns them)
        if meta is not None:
            return "sglang", {
                "accepted": meta.accepted,
                "drafted": meta.drafted,
                "steps": meta.steps,
                "tokens": meta.tokens,
                "latency": meta.latency_s,
            }
    for path in ("timings", "response.timings"):
        timings = _get(obj, path)
        if isinstance(timings, Mapping) and "draft_n" in timings:
            prompt_ms, predicted_ms = timings.get("prompt_ms"), timings.get("predicted_ms")
            both = isinstance(prompt_ms, (int, float)) and isinstance(predicted_ms, (int, float))
            return "llamacpp", {
                "accepted": timings.get("draft_n_accepted"),
                "drafted": timings.get("draft_n"),
                "tokens": timings.get("predicted_n"),
                "latency_ms": prompt_ms + predicted_ms if both else None,  # type: ignore[operator]
            }
    return None


def _latency(obj: Mapping[str, Any], raw: dict[str, object], fields: Mapping[str, str]) -> float | None:
    if "latency" in fields and fields["latency"].endswith("_ms"):  # a field named *_ms holds milliseconds
        raw["latency_ms"] = raw.pop("latency")
    if raw.get("latency") is not None:
        return _seconds(raw["latency"], fields.get("latency", "latency"))
    if raw.get("latency_ms") is not None:
        return _seconds(raw["latency_ms"], fields.get("latency_ms", "latency_ms"), 0.001)
    if fields.keys() & {"latency", "latency_ms"}:
        return None  # mapped, and absent on this line
    for path, scale in _LATENCY:
        value = _get(obj, path)
        if value is not None:
            return _seconds(value, path, scale)
    return None


_LATENCY = (("latency_ms", 0.001), ("duration_ms", 0.001), ("latency_s", 1.0), ("latency", 1.0))


def parse_line(obj: object, source: str, fields: Mapping[str, str] | None = None) -> RequestObs:
    """One log record → RequestObs; ValueError (the reason, without file:line) when it cannot be used."""
    if not isinstance(obj, Mapping):
        raise ValueError("expected a JSON object")
    fields = fields or {}
    found = _adapter(obj)
    shape, raw = found if found is not None else ("fields", {})
    for name, path in fields.items():
        if name != "time":
            raw[name] = _get(obj, path)
    if found is None and not ({"accepted", "drafted"} <= fields.keys()):
        raise ValueError(
            "no speculative-decoding counts found (specmeter, vLLM, SGLang or llama.cpp fields); "
            "map them with --fields accepted=…,drafted=…"
        )
    accepted = _count(raw.get("accepted"), fields.get("accepted", "accepted"))
    drafted = _count(raw.get("drafted"), fields.get("drafted", "drafted"))
    if accepted is None or drafted is None:
        missing = "accepted" if accepted is None else "drafted"
        raise ValueError(f"field '{fields.get(missing, missing)}': missing ({missing} tokens)")
    if accepted > drafted:
        raise ValueError(f"accepted tokens ({accepted}) exceed drafted tokens ({drafted})")
    time_value = _get(obj, fields["time"]) if "time" in fields else _first(obj, _TIME)
    domain = _label(raw["domain"] if "domain" in raw else _first(obj, _DOMAIN))
    tenant = _label(raw["tenant"] if "tenant" in raw else _first(obj, _TENANT))
    return RequestObs(
        source=source,
        time=parse_time(time_value),
        domain=domain or NO_DOMAIN,
        tenant=tenant,
        accepted=accepted,
        drafted=drafted,
        steps=_count(raw.get("steps"), fields.get("steps", "steps")),
        tokens=_count(raw.get("tokens"), fields.get("tokens", "tokens")),
        latency_s=_latency(obj, raw, fields),
        shape=shape,
    )


def problem_kind(reason: str) -> str:
    """A skipped line's reason without its specifics (the value, the column, the hint): what is counted
    when every line of a log was skipped. ``field 'accepted': 1e+308 is more than 10^12, …`` →
    ``field 'accepted': more than 10^12, …``; ``invalid JSON (Expecting value at column 1)`` →
    ``invalid JSON``."""
    text = re.sub(r"\s*\([^()]*\)", "", reason)
    text = re.sub(r"^(field '[^']*':|time) .*? is ", r"\1 ", text)
    return text.split(";")[0].strip()


@dataclass
class _FileState:
    offset: int = 0
    line: int = 0
    pending: bytes = b""


@dataclass
class LogTail:
    """Follows a JSONL file, or every regular file under a directory, as they grow."""

    path: Path
    fields: Mapping[str, str] = field(default_factory=dict)
    files: dict[str, _FileState] = field(default_factory=dict)
    bad: int = 0
    reasons: Counter[str] = field(default_factory=Counter)  # skipped lines per problem_kind
    warmup: int = 0  # `load`'s warm-up requests, left out (``metrics.warmup``): not traffic

    def _skip(self, problems: list[str], where: str, reason: str) -> None:
        problems.append(f"{where}: {reason}")
        self.reasons[problem_kind(reason)] += 1

    def reasons_text(self) -> str:
        """``3 × invalid JSON, 1 × time out of range …``: why lines were skipped, most frequent first."""
        return ", ".join(f"{n} × {kind}" for kind, n in self.reasons.most_common())

    def _paths(self) -> list[Path]:
        if self.path.is_dir():
            return sorted(p for p in self.path.rglob("*") if p.is_file() and not p.name.startswith("."))
        return [self.path] if self.path.exists() else []

    def poll(self) -> tuple[list[RequestObs], list[str]]:
        """(requests, problems as ``file:line: reason``) from everything appended since the last poll."""
        observations: list[RequestObs] = []
        problems: list[str] = []
        for path in self._paths():
            name = os.fspath(path)
            state = self.files.setdefault(name, _FileState())
            try:
                size = path.stat().st_size
                if size < state.offset:  # rotated or truncated: read it again from the top
                    self.files[name] = state = _FileState()
                if size == state.offset:
                    continue
                with open(path, "rb") as fh:
                    fh.seek(state.offset)
                    data = state.pending + fh.read(size - state.offset)
                    state.offset = size
            except OSError as e:
                self._skip(problems, name, f"cannot read ({e.strerror or e})")
                continue
            *complete, state.pending = data.split(b"\n")
            for raw in complete:
                state.line += 1
                if not raw.strip():
                    continue
                where = f"{name}:{state.line}"
                try:
                    obj = jsonsafe.loads(raw.decode("utf-8"), surrogates=True)
                except UnicodeDecodeError:
                    self._skip(problems, where, "not valid UTF-8")
                    continue
                except json.JSONDecodeError as e:
                    self._skip(problems, where, f"invalid JSON ({e.msg} at column {e.colno})")
                    continue
                if isinstance(obj, Mapping) and is_warmup(obj):
                    self.warmup += 1
                    continue
                try:
                    observations.append(parse_line(obj, where, self.fields))
                except ValueError as e:
                    self._skip(problems, where, str(e))
        self.bad += len(problems)
        return observations, problems

    def flush(self) -> tuple[list[RequestObs], list[str]]:
        """At the end of a run: a last line without its newline is still a line."""
        observations: list[RequestObs] = []
        problems: list[str] = []
        for name, state in self.files.items():
            if state.pending.strip():
                state.line += 1
                state.pending, raw = b"", state.pending
                try:
                    obj = jsonsafe.loads(raw.decode("utf-8"), surrogates=True)
                    if isinstance(obj, Mapping) and is_warmup(obj):
                        self.warmup += 1
                        continue
                    observations.append(parse_line(obj, f"{name}:{state.line}", self.fields))
                except json.JSONDecodeError as e:
                    self._skip(
                        problems, f"{name}:{state.line}", f"invalid JSON ({e.msg} at column {e.colno})"
                    )
                except (ValueError, UnicodeDecodeError) as e:
                    self._skip(problems, f"{name}:{state.line}", str(e))
        return observations, problems
