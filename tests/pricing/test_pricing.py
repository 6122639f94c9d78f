"""The cost side of a decision (issue 37): each candidate at its own price, each step at the length it
drafted, batched steps at their longest row; borrowed costs flagged; impossible predictions refused."""

from __future__ import annotations

import itertools
import json
import math
import os
import random
from pathlib import Path
from typing import Any

import pytest

from specmeter.metrics.records import ModelInfo, RequestRecord, RunRecord, StepRecord
from specmeter.metrics.summary import summarize
from specmeter.pricing import CostsError, StepShape, StepShapeError, predictor, price, price_summary
from specmeter.pricing.book import book_from, read_cost_file

INFO = ModelInfo("m", "m", "llama", 1, 1, 1, "float32", 1, 1, 1)


def summary_of(steps: list[tuple[int, int]], requests: int = 1) -> dict[str, Any]:
    """A real summary (metrics.summarize) of requests made of (drafted, accepted) steps."""
    recs = []
    for i in range(requests):
        st = tuple(StepRecord(d, a, a + 1, 0.0, 0.0, d) for d, a in steps)
        out = 1 + sum(s.emitted for s in st)
        recs.append(RequestRecord(f"r{i}", "c", 4, out, 1.0, 0.1, 0.1, st))
    k = max([d for d, _ in steps] + [1])
    return summarize(RunRecord(INFO, INFO, k, 0.0, 1.0, tuple(recs)), None)


def surface_points(verify: dict[int, float], draft: dict[int, float], batches: tuple[int, ...]) -> list[Any]:
    """Points with step = verify(k)·b^0.5 + draft(k)·b (ms): cheap to read, different at each B."""
    pts = []
    for b in batches:
        for k in sorted(verify):
            v, d = verify[k] * b**0.5, draft.get(k, 0.0) * b
            pts.append({"batch": b, "k": k, "step_ms": v + d, "draft_ms": d, "verify_ms": v})
    return pts


VERIFY = {0: 10.0, 1: 11.0, 2: 12.0, 3: 13.0, 4: 14.0}


def book_file(tmp_path: Path, surfaces: dict[str, dict[int, float]], lookups: dict[str, float] | None = None,
              batches: tuple[int, ...] = (1, 4), verdict: str = "quiet") -> Path:  # fmt: skip
    section: dict[str, Any] = {
        "surfaces": {n: {"points": surface_points(VERIFY, d, batches)} for n, d in surfaces.items()},
        "lookups": {n: {"per_row_ms": ms} for n, ms in (lookups or {}).items()},
    }
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"kind": "tune", "hygiene": {"verdict": verdict}, "tune": {"batch": section}}))
    return path


def test_step_shape_recovers_the_draft_lengths_from_a_summary() -> None:
    # counts [10, 8, 3] -> 2 steps of d = 1, 5 of d = 2, 3 of d = 3, and 4 plain forwards
    steps = [(1, 0)] * 2 + [(2, 1)] * 5 + [(3, 3)] * 3 + [(0, 0)] * 4
    shape = StepShape.from_summary(summary_of(steps))
    assert shape.by_length == (4, 2, 5, 3)
    assert shape.forwards == 14 and shape.drafting == 10
    assert shape.tokens == sum(a + 1 for _, a in steps)
    assert shape.drafting_share == pytest.approx(10 / 14)
    assert shape.mean_draft == pytest.approx((2 + 10 + 9) / 10)


def test_step_shape_refuses_counts_that_contradict_each_other() -> None:
    good = summary_of([(2, 1)] * 3)
    for field, value in (("steps", 10**6), ("accepted_tokens", 10**6), ("target_forwards", -1),
                         ("target_forwards", float("nan")), ("steps", "x")):  # fmt: skip
        with pytest.raises(StepShapeError, match=field):
            StepShape.from_summary({**good, field: value})
    grows = json.loads(json.dumps(good))
    grows["per_position"][1]["count"] = 99
    with pytest.raises(StepShapeError, match="grows"):
        StepShape.from_summary(grows)


def test_at_batch_one_every_step_is_priced_at_its_own_length(tmp_path: Path) -> None:
    draft = {1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0}
    book = book_from(json.loads(book_file(tmp_path, {"draft-a": draft}).read_text()), tmp_path)
    assert book is not None
    steps = [(4, 4), (4, 1), (2, 2), (0, 0), (3, 0)] * 7
    got = price(book, "draft-a", StepShape.from_summary(summary_of(steps)), 1)
    # Σ tokens · t(1, 0) / Σ_s (t_target(1, d_s) + t_draft(1, d_s)), written out step by step
    tokens = sum(a + 1 for _, a in steps)
    time = sum(VERIFY[d] + draft.get(d, 0.0) for d, _ in steps)
    assert got.e == pytest.approx(tokens * 10.0 / time) and got.basis == "measured"


@pytest.mark.parametrize("batch", [2, 3, 4])
def test_a_batched_step_costs_its_longest_row(tmp_path: Path, batch: int) -> None:
    """E(B) against a brute-force expectation over every B-tuple of steps the rows can be at."""
    draft = {1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0}
    path = book_file(tmp_path, {"d": draft}, batches=(1, 2, 3, 4))
    book = book_from(json.loads(path.read_text()), tmp_path)
    assert book is not None
    steps = [(4, 2), (0, 0), (0, 0), (2, 1), (1, 1)]
    got = price(book, "d", StepShape.from_summary(summary_of(steps)), batch)
    cost = 0.0
    for rows in itertools.product(steps, repeat=batch):
        depth = max(d for d, _ in rows)
        cost += (VERIFY[depth] * batch**0.5 + draft.get(depth, 0.0) * batch) / len(steps) ** batch
    tau = sum(a + 1 for _, a in steps) / len(steps)
    assert got.e == pytest.approx(tau * VERIFY[0] * batch**0.5 / cost)


def test_batched_prediction_matches_a_simulated_batch(tmp_path: Path) -> None:
    """Statistical: rows drawn at random steps of their own requests, 20,000 batch steps of B = 4."""
    draft = {1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0}
    book = book_from(json.loads(book_file(tmp_path, {"d": draft}).read_text()), tmp_path)
    assert book is not None
    rng = random.Random(7)
    steps = [(rng.choice([0, 0, 1, 2, 4]), 0) for _ in range(60)]
    steps = [(d, rng.randint(0, d)) for d, _ in steps]
    got = price(book, "d", StepShape.from_summary(summary_of(steps)), 4).e
    tokens = time = 0.0
    for _ in range(20_000):
        rows = [rng.choice(steps) for _ in range(4)]
        depth = max(d for d, _ in rows)
        time += VERIFY[depth] * 2 + draft.get(depth, 0.0) * 4
        tokens += sum(a + 1 for _, a in rows)
    simulated = (tokens / 4) * VERIFY[0] * 2 / time
    assert got == pytest.approx(simulated, rel=0.01)


def test_a_cheaper_proposer_is_predicted_faster_by_its_own_timing(tmp_path: Path) -> None:
    big = {k: 2.0 * k for k in range(1, 5)}
    small = {k: 0.5 * k for k in range(1, 5)}
    path = book_file(tmp_path, {"draft-big": big, "draft-small": small})
    predict = predictor(path)
    s = summary_of([(4, 2)] * 10)
    rows = predict([{"draft": "/models/draft-big", "k": 4, "summary": s},
                    {"draft": "draft-small/", "k": 4, "summary": s}])["rows"]  # fmt: skip
    e_big, e_small = rows[0]["e"]["1"], rows[1]["e"]["1"]
    # same acceptance, same verification: the ratio is the ratio of the two steps' own times
    assert e_small / e_big == pytest.approx((14.0 + 8.0) / (14.0 + 2.0))
    assert rows[0]["cost_basis"] == rows[1]["cost_basis"] == "measured"
    assert rows[0]["borrowed_from"] is None and rows[1]["borrowed_from"] is None


def test_a_borrowed_cost_is_flagged(tmp_path: Path) -> None:
    path = book_file(tmp_path, {"draft-legal": {k: 2.0 * k for k in range(1, 5)}})
    s = summary_of([(4, 2)] * 10)
    out = predictor(path)([{"draft": "draft-tiny", "k": 4, "summary": s}])
    (row,) = out["rows"]
    assert row["cost_basis"] == "borrowed" and row["borrowed_from"] == "draft-legal"
    assert any("borrowed proposing costs" in n and "draft-tiny (from draft-legal)" in n for n in out["notes"])


def test_model_free_lookups_are_paid_per_row_at_every_step(tmp_path: Path) -> None:
    path = book_file(tmp_path, {"draft-legal": {k: 2.0 * k for k in range(1, 5)}}, {"suffix": 0.5})
    steps = [(3, 3), (0, 0), (0, 0), (2, 0)]
    s = summary_of(steps)
    rows = predictor(path)([{"draft": "suffix", "k": 4, "summary": s},
                            {"draft": "ngram", "k": 4, "summary": s, "lookup_s": 0.001}])["rows"]  # fmt: skip
    tokens = sum(a + 1 for _, a in steps)
    # every forward pays the lookup, those that found nothing too
    assert rows[0]["e"]["1"] == pytest.approx(tokens * 10.0 / sum(VERIFY[d] + 0.5 for d, _ in steps))
    assert rows[0]["cost_basis"] == "lookup" and "timed by tune" in rows[0]["cost"]
    # not in the cost file: replay's own lookup time per row and step
    assert rows[1]["e"]["1"] == pytest.approx(tokens * 10.0 / sum(VERIFY[d] + 1.0 for d, _ in steps))
    assert "measured by replay" in rows[1]["cost"]


def test_a_prediction_above_the_tokens_per_step_is_refused(tmp_path: Path) -> None:
    points = [{"batch": 1, "k": 0, "step_ms": 10.0, "draft_ms": 0.0, "verify_ms": 10.0},
              {"batch": 1, "k": 2, "step_ms": 5.0, "draft_ms": 1.0, "verify_ms": 4.0}]  # fmt: skip
    path = tmp_path / "loaded.json"
    path.write_text(json.dumps({"kind": "tune", "hygiene": {"verdict": "unusable"},
                                "tune": {"batch": {"surfaces": {"d": {"points": points}}}}}))  # fmt: skip
    out = predictor(path)([{"draft": "d", "k": 2, "summary": summary_of([(2, 1)] * 5)}])
    (row,) = out["rows"]
    assert row["e"]["1"] is None and "exceed the 2.00 tokens per step" in row["refused"]["1"]
    assert any("unusable" in n for n in out["notes"])


def test_every_prediction_stays_within_the_tokens_per_step(tmp_path: Path) -> None:
    """Property: when drafting costs at least a plain step, 0 < E ≤ τ̄ at every B, over random shapes."""
    rng = random.Random(11)
    for trial in range(60):
        draft = {k: rng.uniform(0.0, 5.0) * k for k in range(1, 5)}
        book = book_from(json.loads(book_file(tmp_path, {"d": draft}).read_text()), tmp_path)
        assert book is not None
        steps = [(d, rng.randint(0, d)) for d in (rng.randint(0, 4) for _ in range(rng.randint(1, 30)))]
        shape = StepShape.from_summary(summary_of(steps))
        for b in (1, 4):
            got = price(book, "d", shape, b)
            assert got.e is not None and got.tokens_per_forward is not None, trial
            assert 0 < got.e <= got.tokens_per_forward + 1e-9


@pytest.mark.parametrize(
    ("cell", "field"),
    [({"batch": "x"}, "batch"), ({"batch": 0}, "batch"), ({"k": -1}, "k"),
     ({"step_ms": float("inf")}, "step_ms"), ({"step_ms": 1e300}, "step_ms"),
     ({"draft_ms": 99.0}, "draft_ms"), ({"batch": True}, "batch")],
)  # fmt: skip
def test_cost_cells_are_validated(tmp_path: Path, cell: dict[str, Any], field: str) -> None:
    points = surface_points(VERIFY, {1: 1.0}, (1,))
    points[1].update(cell)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"kind": "tune", "tune": {"batch": {"surfaces": {"d": {"points": points}}}}}))
    with pytest.raises(CostsError, match=rf"surfaces\.d\.points\[1\]\.{field}"):
        predictor(path)


def test_special_files_are_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(CostsError, match=r"--costs: .*fifo: cannot read .*FIFO.*not a regular file"):
        read_cost_file(fifo)  # would block forever if opened
    with pytest.raises(CostsError, match="not a regular file"):
        read_cost_file(Path("/dev/zero"))


def test_replay_lookup_is_replays_own_and_price_summary_flags_bad_counts(tmp_path: Path) -> None:
    book = book_from(json.loads(book_file(tmp_path, {"d": {1: 1.0}}).read_text()), tmp_path)
    assert book is not None
    bad = {**summary_of([(1, 1)] * 3), "accepted_tokens": 10**6}
    got = price_summary(book, "d", bad, [1])[1][1]
    assert got.e is None and got.refused is not None and "accepted_tokens" in got.refused
    assert math.isfinite(price_summary(book, "d", summary_of([(1, 1)] * 3), [1])[1][1].e or math.nan)


@pytest.mark.parametrize("kind", ["book", "whatif", "sweep"])
def test_every_cost_source_from_a_busy_machine_is_named(tmp_path: Path, kind: str) -> None:
    """A cost surface, what-if cells or a sweep timed on a machine judged busy: the prediction's notes say so
    (issue 37: named wherever it is used); a quiet one says nothing of the machine."""
    s = summary_of([(2, 1)] * 5)
    for verdict in ("busy", "quiet"):
        if kind == "book":
            path = book_file(tmp_path, {"d": {1: 1.0, 2: 2.0}}, verdict=verdict)
        else:
            path = tmp_path / f"{kind}.json"
            if kind == "whatif":
                cells = [{"alpha": a, "k": 2, "batch": 1, "e": 1 + a} for a in (0.2, 0.8)]
                data: dict[str, Any] = {"kind": "whatif", "whatif": {"cells": cells}}
            else:
                cells = [{"concurrency": 1, "k": 2, "e_decode": 1.3, "tau": 2.0}]
                data = {"kind": "sweep", "sweep": {"cells": cells}}
            data["hygiene"] = {"verdict": verdict}
            path.write_text(json.dumps(data))
        out = predictor(path)([{"draft": "d", "k": 2, "summary": s}])
        named = [n for n in out["notes"] if "judged busy" in n]
        assert len(named) == (1 if verdict == "busy" else 0), out["notes"]
