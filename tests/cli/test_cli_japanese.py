"""Japanese (and any other) text round-trips unchanged: golden set, CSV, JSONL, result JSON, HTML (issue 12).

A request log with Japanese prompts, ids and categories (one prompt in NFD, one with an emoji and a U+2028
line separator, which ``str.splitlines`` would break on) goes through ``golden``, ``bench``, the run store,
``runs export`` and ``report``; every file holds the same code points it was given, byte for byte in
UTF-8, no normalisation, no escaping that changes what a reader sees.
"""

from __future__ import annotations

import csv
import html
import json
import unicodedata
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.workloads import load_workload

runner = CliRunner()

PROMPTS = {
    "要求-0": ("法務", "契約の解除は、書面による通知をもって行う。"),
    "要求-1": ("法務", unicodedata.normalize("NFD", "損害賠償が発生した場合の責任範囲を説明せよ。")),
    "要求-2": ("一般", "🙂 今日の天気は?\u2028二行目"),
    "要求-3": ("一般", "おすすめの本を教えてください。"),
}


def test_japanese_round_trips_through_every_file(tiny: Any, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    log.write_text(
        "".join(
            json.dumps({"id": i, "category": c, "prompt": p}, ensure_ascii=False) + "\n"
            for i, (c, p) in PROMPTS.items()
        ),
        encoding="utf-8",
    )
    golden = tmp_path / "golden.jsonl"
    res = runner.invoke(app, ["golden", "--from", str(log), "--out", str(golden)])
    assert res.exit_code == 0, res.output
    workload = load_workload(golden)
    assert {p.id: (p.category, p.text) for p in workload.prompts} == PROMPTS  # NFD stays NFD
    assert "要求-0" in golden.read_text(encoding="utf-8")  # written as UTF-8, not \\u escapes

    out = {n: tmp_path / f"r.{n}" for n in ("json", "csv", "jsonl")}
    store = tmp_path / "runs.sqlite"
    res = runner.invoke(app, [
        "bench", "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts", str(golden),
        "--k", "2", "--max-tokens", "6", "--cost-repeats", "1", "-q", "--store", str(store),
        "--json", str(out["json"]), "--csv", str(out["csv"]), "--log", str(out["jsonl"]),
    ])  # fmt: skip
    assert res.exit_code in (0, 4), res.output
    with out["csv"].open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["id"], r["category"]) for r in rows} == {(i, c) for i, (c, _) in PROMPTS.items()}
    logged = [json.loads(line) for line in out["jsonl"].read_text(encoding="utf-8").splitlines()]
    assert {(r["id"], r["category"]) for r in logged} == {(i, c) for i, (c, _) in PROMPTS.items()}
    result = json.loads(out["json"].read_text(encoding="utf-8"))
    assert set(result["candidates"][0]["by_category"]) == {"法務", "一般"}
    assert "法務" in out["json"].read_text(encoding="utf-8")

    for fmt in ("csv", "jsonl"):
        exported = tmp_path / f"export.{fmt}"
        res = runner.invoke(app, ["runs", "export", "latest", "--out", str(exported), "--store", str(store)])
        assert res.exit_code == 0, res.output
        text = exported.read_text(encoding="utf-8")
        assert all(i in text for i in PROMPTS) and "法務" in text and "一般" in text

    report = tmp_path / "report.html"
    res = runner.invoke(app, ["report", "latest", "--out", str(report), "--store", str(store)])
    assert res.exit_code == 0, res.output
    page = report.read_text(encoding="utf-8")
    assert "<meta charset='utf-8'>" in page
    shown = html.unescape(page)
    assert "法務" in shown and "一般" in shown and any(i in shown for i in PROMPTS)
