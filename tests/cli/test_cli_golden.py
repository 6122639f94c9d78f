"""`specmeter golden` end to end: a mixed log in, a golden set `bench`/`load` can read out, and a report."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.workloads import load_workload

FIXTURES = Path(__file__).parents[1] / "goldenset" / "fixtures"
runner = CliRunner()


def mixed_log(path: Path, n: int = 300, seed: int = 0) -> Path:
    """A gateway log of chat requests on two routes, with repeats, typo variants, PII and a broken line."""
    rng = random.Random(seed)
    legal = [
        f"Summarise clause {i}: the Supplier shall {w} the Customer within {i} days."
        for i, w in enumerate(["indemnify", "notify", "reimburse", "inform", "compensate", "pay"] * 8)
    ]
    general = [
        f"Write a short story about a {a} who finds a {b}."
        for a in ("lighthouse keeper", "baker", "pilot", "cat", "robot", "farmer")
        for b in ("map", "key", "letter", "coin", "violin", "door", "boat")
    ]
    lines = []
    for i in range(n):
        route = "legal" if rng.random() < 0.6 else "general"
        text = rng.choice(legal if route == "legal" else general)
        if rng.random() < 0.1:
            text += f" Reply to user{i}@example.com."
        body = {"model": "prod", "messages": [{"role": "user", "content": text}]}
        lines.append(json.dumps({"route": route, "request": body}))
    lines.insert(10, '{"route": "legal", "request": ')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_typical_use_writes_a_loadable_golden_set_with_provenance(tmp_path: Path) -> None:
    log = mixed_log(tmp_path / "requests.jsonl")
    out = tmp_path / "golden.jsonl"
    report = tmp_path / "report.json"
    args = ["golden", "--from", str(log), "--category-field", "route", "--n", "20", "--out", str(out)]
    result = runner.invoke(app, [*args, "--seed", "1", "--scrub", "--json", str(report)])
    assert result.exit_code == 0, result.output
    assert f"{log}:11: invalid JSON (Expecting value at column 31): skipped" in result.stderr
    assert "301 records: 300 usable, 1 bad line skipped" in result.stdout
    assert "wrote 40 prompts to" in result.stdout
    assert "input length (characters), source vs golden set" in result.stdout
    workload = load_workload(out)
    assert {c: len(p) for c, p in workload.by_category().items()} == {"legal": 20, "general": 20}
    raw = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    source_lines = log.read_text("utf-8").splitlines()
    for line in raw:
        file, _, number = line["source"].rpartition(":")
        assert file == str(log)
        original = json.loads(source_lines[int(number) - 1])
        assert original["route"] == line["category"]
        assert "@" not in line["messages"][0]["content"]  # scrubbed
    data = json.loads(report.read_text("utf-8"))
    assert data["bad_lines"] == 1 and data["written"] == 40
    assert data["exact_duplicates"] > 100  # the log repeats a few hundred prompts drawn from 90
    assert data["config"]["seed"] == 1 and data["scrubbed"]["email"] >= 0
    # Same seed, same golden set; another seed, another one.
    again = tmp_path / "again.jsonl"
    runner.invoke(app, [*args[:-1], str(again), "--seed", "1", "--scrub"])
    assert again.read_text("utf-8") == out.read_text("utf-8")
    other = tmp_path / "other.jsonl"
    runner.invoke(app, [*args[:-1], str(other), "--seed", "2", "--scrub"])
    assert other.read_text("utf-8") != out.read_text("utf-8")


def test_every_format_in_one_run_keeps_conversations(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES, logs)
    out = tmp_path / "golden.jsonl"
    result = runner.invoke(
        app, ["golden", "--from", str(logs), "--out", str(out), "--json", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert set(report["formats"].values()) == {"openai", "sharegpt", "csv", "specbench", "specmeter"}
    assert report["bad_lines"] == 13  # 5 + 2 + 2 + 1 + 1 + 2 in the six fixtures
    assert len(result.stderr.strip().splitlines()) == 13
    workload = load_workload(out)
    by_id = {p.id: p for p in workload.prompts}
    assert by_id["sg-1"].followups == ("Is it enforceable in California?", "Give me an example sentence.")
    assert by_id["81"].category == "writing"  # Spec-Bench's own category field
    assert by_id["81"].source == f"{logs / 'question.jsonl'}:1"
    assert "multi-turn conversation" in result.stdout


def test_rules_and_mix(tmp_path: Path) -> None:
    log = mixed_log(tmp_path / "requests.jsonl", n=400)
    rules = tmp_path / "rules.yml"
    rules.write_text(
        "rules:\n  - category: legal/clauses\n    regex: 'clause \\d+'\ndefault: chat\n", "utf-8"
    )
    out = tmp_path / "golden.jsonl"
    result = runner.invoke(
        app,
        [
            "golden",
            "--from",
            str(log),
            "--rules",
            str(rules),
            "--n",
            "30",
            "--mix",
            "legal=0.8,chat=0.2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    counts = {c: len(p) for c, p in load_workload(out).by_category().items()}
    assert counts == {"legal/clauses": 24, "chat": 6}  # `legal` covers legal/clauses, as in select --mix


def test_refusals(tmp_path: Path) -> None:
    log = mixed_log(tmp_path / "requests.jsonl", n=20)
    before = log.read_bytes()
    assert_usage_error(
        runner.invoke(app, ["golden", "--from", str(log), "--out", str(log)]),
        "an output never overwrites an input",
    )
    assert log.read_bytes() == before
    assert_usage_error(
        runner.invoke(app, ["golden", "--from", str(log), "--out", "x", "--mix", "a=1"]), "--mix needs --n"
    )
    assert_usage_error(
        runner.invoke(app, ["golden", "--from", str(log), "--out", "x", "--format", "xml"]), "--format"
    )
    assert_usage_error(
        runner.invoke(app, ["golden", "--from", str(log), "--out", "x", "--near-threshold", "1.5"]),
        "--near-threshold",
    )
    assert_usage_error(
        runner.invoke(
            app, ["golden", "--from", str(log), "--out", str(tmp_path / "o"), "--n", "5", "--mix", "code=1"]
        ),
        "'code' match(es) no category",
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": ""}\n{"prompt": 5}\n', encoding="utf-8")
    result = runner.invoke(app, ["golden", "--from", str(bad), "--out", str(tmp_path / "g.jsonl")])
    assert result.exit_code == 1
    assert f"{bad}:1: field 'prompt': empty: skipped" in result.stderr
    assert "no usable prompt" in result.stderr
    assert not (tmp_path / "g.jsonl").exists()


def test_a_category_field_the_log_lacks_is_a_warning_with_the_count(tmp_path: Path) -> None:
    """`--category-field route` on a log where some lines have no `route` says how many (issue 32)."""
    log = mixed_log(tmp_path / "requests.jsonl", n=60)
    lines = log.read_text("utf-8").splitlines()
    stripped = [json.dumps({"request": json.loads(x)["request"]}) if i % 3 == 0 and i != 10 else x
                for i, x in enumerate(lines)]  # fmt: skip
    log.write_text("\n".join(stripped) + "\n", encoding="utf-8")
    missing = sum(1 for i in range(len(lines)) if i % 3 == 0 and i != 10)
    report = tmp_path / "r.json"
    args = ["golden", "--from", str(log), "--category-field", "route", "--out", str(tmp_path / "g.jsonl")]
    result = runner.invoke(app, [*args, "--json", str(report)])
    assert result.exit_code == 0, result.output
    assert f"warning: --category-field route: {missing} of 60 usable prompts have no such field; they " \
           "were categorised by 'uncategorised'" in " ".join(result.stdout.split())  # fmt: skip
    assert json.loads(report.read_text("utf-8"))["category_field_missing"] == missing
    complete = mixed_log(tmp_path / "complete.jsonl", n=20)
    quiet = runner.invoke(app, ["golden", "--from", str(complete), "--category-field", "route", "--out",
                                str(tmp_path / "h.jsonl")])  # fmt: skip
    assert quiet.exit_code == 0 and "no such field" not in quiet.stdout
