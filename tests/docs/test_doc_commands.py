"""Every command block of README.md and docs/*.md is run or checked, so a doc cannot drift from the code.

The marker grammar is in ``doc_blocks`` (this directory). Fast (default suite): every command block carries a
valid marker (an unmarked one fails naming ``file:line``), every ``specmeter`` command of every block names a
real subcommand and only options it has, and a ``script`` block's commands are those of its script. Slow
(``make test-slow``): every ``run`` block runs, as written after its smoke replacements, and
``scripts/from_your_logs.sh`` runs end to end.

A ``run`` block runs in its document's working directory (one per document, blocks in order), which holds:

* ``specmeter`` on PATH (this interpreter's), ``tools/`` (the repository's build tools) and
  ``.venv/bin/python`` (this interpreter), so ``PYTHONPATH=tools .venv/bin/python -m corpus`` runs as written;
* README.md: nothing else (its commands use ``bundled:`` names; ``before`` makes
  ``specmeter-demo/legal.json``);
* golden.md: ``requests.jsonl`` (a gateway's OpenAI chat log with a ``route`` field), ``logs/`` (that log and
  a ShareGPT export), ``rules.yml``, ``export.csv`` (support tickets with a ``question`` column) — written by
  ``benchmarks/from_your_logs.py``'s writers from the bundled golden sets;
* monitoring.md: request logs with the three numbers and a domain (serve's layout) over 2026-11-29 12:00 →
  2026-12-01 12:00 UTC — ``gateway/``, ``requests.jsonl``, ``logs/``, ``today.jsonl``, ``yesterday.jsonl`` —,
  ``app.jsonl`` in a gateway's own field names, and ``draft``, the bundled draft-legal;
* serving.md: ``T`` and ``D`` (the bundled target and draft-legal) and ``legal16.jsonl`` (16 bundled legal
  prompts).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import typer.main
from doc_blocks import ROOT, Block, Command, MarkerError, all_blocks, blocks, commands, option_names
from typer.core import TyperGroup

BLOCKS = all_blocks()
COMMAND_TIMEOUT_S = 600


def _root_command() -> Any:
    from specmeter.cli.app import app

    return typer.main.get_command(app)


def _subcommand(group: Any, name: str) -> Any:
    return group.commands.get(name) if isinstance(group, TyperGroup) else None


def _options(command: Any) -> set[str]:
    names = {"--help"}
    for p in command.params:
        names.update(o for o in (*p.opts, *p.secondary_opts) if o.startswith("--"))
    return names


def check_command(root: Any, text: str) -> list[str]:
    """Problems of one documented specmeter command line: an unknown subcommand, an option it lacks."""
    head, opts = option_names(text)
    if not head:
        return [] if set(opts) <= _options(root) else [f"options {sorted(set(opts) - _options(root))}"]
    command = _subcommand(root, head[0])
    if command is None:
        return [f"no command {head[0]!r}"]
    if isinstance(command, TyperGroup):  # `runs list | show RUN | export RUN --out r.json`
        problems = []
        for alternative in " ".join(text.split()[2:]).split(" | "):
            sub_head, sub_opts = option_names("x " + alternative)
            sub = _subcommand(command, sub_head[0]) if sub_head else None
            if sub is None:
                problems.append(f"no command {head[0]} {sub_head[:1]}")
            elif missing := sorted(set(sub_opts) - _options(sub)):
                problems.append(f"{head[0]} {sub_head[0]}: no option {', '.join(missing)}")
        return problems
    missing = sorted(set(opts) - _options(command))
    return [f"{head[0]}: no option {', '.join(missing)}"] if missing else []


# ---------------------------------------------------------------------------------------------- fast ---


def test_every_command_block_is_run_or_marked() -> None:
    problems = [
        b.marker_error
        or f"{b.where}: a command block without a doc-test marker (put <!-- doc-test: run --> or "
        "<!-- doc-test: check: WHY -->, script PATH or needs NAME before it; grammar: "
        "tests/docs/doc_blocks.py)"
        for b in BLOCKS
        if b.marker is None
    ]
    assert not problems, "\n".join(p for p in problems if p)
    assert len(BLOCKS) >= 20  # the parser still finds the documents' blocks


def test_every_documented_option_exists() -> None:
    root = _root_command()
    problems = [
        f"{b.where} (line {c.line}): {problem}"
        for b in BLOCKS
        for c in b.commands
        if c.is_specmeter
        for problem in check_command(root, c.text)
    ]
    assert not problems, "\n".join(problems)


def test_run_blocks_smoke_replacements_apply() -> None:
    for b in BLOCKS:
        if b.marker is not None and b.marker.kind == "run":
            assert b.smoked(), b.where  # raises MarkerError naming file:line when an OLD text is gone


def _signature(c: Command) -> tuple[str, frozenset[str]]:
    head, opts = option_names(c.text)
    return (head[0] if head else "", frozenset(opts))


def test_script_blocks_are_their_scripts() -> None:
    checked = 0
    for b in BLOCKS:
        if b.marker is None or b.marker.kind != "script":
            continue
        script = ROOT / b.marker.arg
        in_script = {
            _signature(c)
            for c in commands(script.read_text(encoding="utf-8"), 1, indented_continues=False)
            if c.is_specmeter
        }
        for c in b.commands:
            if c.is_specmeter:
                assert _signature(c) in in_script, (
                    f"{b.where} (line {c.line}): not in {b.marker.arg}: {c.text}"
                )
                checked += 1
    assert checked >= 6


def test_the_checker_catches_what_it_should(tmp_path: Path) -> None:
    """An unmarked block, a bad marker, a stale smoke text and an unknown option are each reported."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n```sh\nspecmeter bench --target T\n```\n\n"
        "<!-- doc-test: runn -->\n```sh\nspecmeter tune --target T\n```\n\n"
        "<!-- doc-test: run; smoke `--limit 40` => `--limit 4` -->\n```\nspecmeter bench --prompts x \\\n"
        '    --limit 5   # a comment\n```\n\n```json\n{"specmeter ": 1}\n```\n',
        encoding="utf-8",
    )
    found = blocks(doc)
    assert [b.line for b in found] == [3, 8, 13]
    assert found[0].marker is None and found[0].marker_error is None
    assert found[1].marker_error is not None and "'runn'" in found[1].marker_error
    assert [c.text for c in found[2].commands] == ["specmeter bench --prompts x --limit 5"]
    with pytest.raises(MarkerError, match=r"doc\.md:13: smoke `--limit 40` does not occur"):
        found[2].smoked()
    root = _root_command()
    assert check_command(root, "specmeter bench --target T --no-such-option 3") == [
        "bench: no option --no-such-option"
    ]
    assert check_command(root, "specmeter benchh --target T") == ["no command 'benchh'"]
    assert check_command(root, "specmeter runs list | show RUN | export RUN --out r.json") == []


# ---------------------------------------------------------------------------------------------- slow ---


def _write_monitoring_logs(d: Path) -> None:
    """Serve-layout request logs over two days: general steady at α ≈ 0.36, legal 0.61 → 0.34 at
    2026-11-30 12:00 (the drift docs' example), 4 drafted tokens per step."""
    rng = random.Random(0)
    start = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
    change = start + timedelta(days=1)
    lines, app = [], []
    for i in range(480):
        t = start + timedelta(minutes=6 * i)
        domain = "legal" if i % 2 else "general"
        alpha = 0.36 if domain == "general" else (0.61 if t < change else 0.34)
        steps = rng.randint(8, 16)
        drafted = 4 * steps
        accepted = sum(rng.random() < alpha for _ in range(drafted))
        tokens, latency = accepted + steps, round(rng.uniform(400, 1600), 1)
        stamp = t.strftime("%Y-%m-%dT%H:%M:%SZ")
        lines.append({"time": stamp, "domain": domain, "accepted_tokens": accepted, "drafted_tokens": drafted,
                      "steps": steps, "output_tokens": tokens, "latency_ms": latency})  # fmt: skip
        app.append({"ts": stamp, "route": domain, "spec": {"acc": accepted, "drafted": drafted},
                    "out_tokens": tokens, "dur_ms": latency})  # fmt: skip

    def write(path: Path, rows: list[dict[str, object]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    half = len(lines) // 2
    write(d / "requests.jsonl", lines)
    write(d / "gateway" / "serve-1.jsonl", lines[:half])
    write(d / "gateway" / "serve-2.jsonl", lines[half:])
    write(d / "logs" / "requests.jsonl", lines)
    write(d / "yesterday.jsonl", lines[:half])
    write(d / "today.jsonl", lines[half:])
    write(d / "app.jsonl", app)


def _write_golden_logs(d: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import from_your_logs as fyl
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    prompts = {name: fyl.bundled(name) for name in ("legal", "general")}
    rng = random.Random(7)
    fyl.write_gateway(d / "requests.jsonl", 400, rng, prompts)
    (d / "logs").mkdir()
    shutil.copy(d / "requests.jsonl", d / "logs" / "gateway.jsonl")
    fyl.write_chats(d / "logs" / "chats.json", 30, rng, prompts)
    fyl.write_tickets(d / "export.csv", 40, rng, prompts)
    (d / "rules.yml").write_text(fyl.RULES, encoding="utf-8")


def _write_serving_inputs(d: Path) -> None:
    models = ROOT / "src" / "specmeter" / "assets" / "models"
    (d / "T").symlink_to(models / "target")
    (d / "D").symlink_to(models / "draft-legal")
    legal = (ROOT / "src" / "specmeter" / "assets" / "golden" / "legal.jsonl").read_text(encoding="utf-8")
    (d / "legal16.jsonl").write_text("".join(legal.splitlines(keepends=True)[:16]), encoding="utf-8")


def _write_monitoring_inputs(d: Path) -> None:
    _write_monitoring_logs(d)
    (d / "draft").symlink_to(ROOT / "src" / "specmeter" / "assets" / "models" / "draft-legal")


INPUTS = {
    "golden.md": _write_golden_logs,
    "monitoring.md": _write_monitoring_inputs,
    "serving.md": _write_serving_inputs,
}


def _workdir(tmp: Path, doc: str) -> tuple[Path, dict[str, str]]:
    d = tmp / "work"
    d.mkdir()
    (d / "tools").symlink_to(ROOT / "tools")
    (d / ".venv" / "bin").mkdir(parents=True)
    (d / ".venv" / "bin" / "python").symlink_to(sys.executable)
    if doc in INPUTS:
        INPUTS[doc](d)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SPECMETER_STORE"] = str(tmp / "runs.sqlite")
    env["COLUMNS"] = "160"
    return d, env


def _run(cmd: str, cwd: Path, env: dict[str, str], where: str, codes: frozenset[int]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        ["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
    )
    elapsed = time.perf_counter() - start
    print(f"\n{where}: {elapsed:.1f} s: {cmd[:100]}")
    assert done.returncode in codes, (
        f"{where}: exit {done.returncode} (expected {sorted(codes)}): {cmd}\n"
        f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )
    return elapsed


RUN_DOCS = sorted({b.path.name for b in BLOCKS if b.marker is not None and b.marker.kind == "run"})


@pytest.mark.slow
@pytest.mark.parametrize("doc", RUN_DOCS)
def test_run_blocks(doc: str, tmp_path: Path) -> None:
    """Every ``run`` block of the document, in order, in one working directory; prints what it ran."""
    cwd, env = _workdir(tmp_path, doc)
    ran, seconds = 0, 0.0
    for b in BLOCKS:
        if b.path.name != doc or b.marker is None or b.marker.kind != "run":
            continue
        for cmd in b.marker.before:
            seconds += _run(" ".join(cmd.split()), cwd, env, f"{b.where} (before)", frozenset({0}))
        for c in b.smoked():
            seconds += _run(c.text, cwd, env, f"{b.where} (line {c.line})", b.marker.exit_codes)
            ran += 1
    print(f"\n{doc}: {ran} documented commands in {seconds:.1f} s")
    assert ran >= 1


NEEDS = [b for b in BLOCKS if b.marker is not None and b.marker.kind == "needs"]


@pytest.mark.slow
@pytest.mark.parametrize("block", NEEDS, ids=[b.where for b in NEEDS])
def test_needs_blocks_are_left_to_their_make_targets(block: Block) -> None:
    """Not run here: the block needs what its marker names (options were checked by the fast test)."""
    assert block.marker is not None
    name = block.marker.arg
    where = "CI's own targets" if name == "make" else f"make test-{name} tests the same paths"
    pytest.skip(f"{block.where}: needs {name} ({where}; not run by this test)")


@pytest.mark.slow
def test_from_your_logs_script(tmp_path: Path) -> None:
    """serve → load with domains → golden → bench → monitor --requests --once → drift, per domain."""
    from specmeter.sweep.launch import free_port

    _, env = _workdir(tmp_path, "README.md")
    env.update(OUT=str(tmp_path / "out"), LIMIT="6", MAX_TOKENS="12", N="2", MIN_REQUESTS="2",
               PORT=str(free_port()))  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "from_your_logs.sh")], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=COMMAND_TIMEOUT_S,
    )  # fmt: skip
    print(f"\nscripts/from_your_logs.sh: {time.perf_counter() - start:.1f} s")
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    out = tmp_path / "out"
    # The served requests carry the golden sets' categories as their domain; the endpoint has its own field.
    logged = [json.loads(line) for line in (out / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(logged) >= 12  # 6 + 6 measured, and load's warm-up requests
    assert all(r["category"] == r["domain"] and r["endpoint"] in ("completion", "chat") for r in logged)
    domains = {r["domain"].split("/")[0] for r in logged}
    assert domains == {"legal", "general"}
    golden = [json.loads(line) for line in (out / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {g["category"] for g in golden} <= {r["domain"] for r in logged}
    assert {g["category"].split("/")[0] for g in golden} == {"legal", "general"}
    windows = json.loads((out / "windows.json").read_text(encoding="utf-8"))
    assert "legal" in json.dumps(windows) and "general" in json.dumps(windows)
    drift = json.loads((out / "drift.json").read_text(encoding="utf-8"))
    compared = {row["domain"].split("/")[0] for row in drift["comparisons"]}
    assert compared == {"legal", "general"}
    for row in drift["comparisons"]:  # per-domain figures on both sides
        assert row["before"] is not None and row["after"] is not None
    # The same log replayed: every logged request the target produced but load's warm-up ones (marked), per
    # domain, per method.
    replayed = json.loads((out / "replay.json").read_text(encoding="utf-8"))
    assert [c["draft"] for c in replayed["candidates"]] == ["draft-legal", "ngram:min=5,max=5", "suffix"]
    warmup = [r for r in logged if r.get("warmup")]
    logged = [r for r in logged if not r.get("warmup")]
    assert warmup and replayed["replay"]["log"]["warmup_marked"] == len(warmup)
    assert replayed["replay"]["log"]["measured"] == len(logged) == 12
    for c in replayed["candidates"]:
        assert 0 <= c["summary"]["accepted_tokens"] <= c["summary"]["drafted_tokens"]
        assert {cat.split("/")[0] for cat in c["by_category"]} == {"legal", "general"}
    # The served draft replayed gives what serve logged (docs/replay.md: drafted and steps exactly; accepted
    # too, short by at most k - 1 in each step whose draft matched through the response's EOS and went on).
    served, s = replayed["candidates"][0], replayed["candidates"][0]["summary"]
    past_end = replayed["replay"]["past_end"]["draft-legal@k=4"]
    live = [sum(int(r[key]) for r in logged) for key in ("accepted_tokens", "drafted_tokens", "steps")]
    assert [s["drafted_tokens"], s["steps"]] == live[1:] and live[1] > 0, (served, live)
    assert 0 <= live[0] - s["accepted_tokens"] <= 3 * past_end, (live, s["accepted_tokens"], past_end)
