"""Multi-turn conversations: `bench` and `load` replay every turn with the model's own earlier answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.engine.loader import load_tokenizer
from specmeter.load.config import LoadConfig, Phase
from specmeter.load.run import execute_load
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine
from specmeter.workloads import load_workload, render_turn, turn_messages

CONVERSATION = {
    "id": "c1",
    "category": "chat",
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Tell me a story."}],
    "followups": ["And then?", "How does it end?"],
    "max_tokens": 6,
}
SINGLE = {"id": "p1", "category": "legal", "prompt": "The Supplier shall indemnify the Customer against"}


def golden(path: Path) -> Path:
    path.write_text(json.dumps(CONVERSATION) + "\n" + json.dumps(SINGLE) + "\n", encoding="utf-8")
    return path


def test_turn_messages_hold_the_models_own_answers(tmp_path: Path, tiny: Any) -> None:
    (prompt, _) = load_workload(golden(tmp_path / "g.jsonl")).prompts
    messages = turn_messages(prompt, ["Once upon a time.", "A dragon came."])
    assert [(m.role, m.content) for m in messages] == [
        ("system", "Be brief."),
        ("user", "Tell me a story."),
        ("assistant", "Once upon a time."),
        ("user", "And then?"),
        ("assistant", "A dragon came."),
        ("user", "How does it end?"),
    ]
    tokenizer = load_tokenizer(Path(tiny.target))
    first, second = render_turn(prompt, [], tokenizer), render_turn(prompt, ["Once upon a time."], tokenizer)
    assert len(second) > len(first)
    assert "Once upon a time." in tokenizer.decode(second)


def test_bench_replays_every_turn_greedy_outputs_match(tmp_path: Path, tiny: Any) -> None:
    log = tmp_path / "log.jsonl"
    args = [
        "bench",
        "--target",
        tiny.target,
        "--draft",
        tiny.draft,
        "--prompts",
        golden(tmp_path / "g.jsonl"),
    ]
    result = CliRunner().invoke(
        app,
        [str(a) for a in args]
        + ["--max-tokens", "6", "--cost-repeats", "2", "--log", str(log), "--no-store"],
    )
    assert result.exit_code in (0, 4), result.output  # 4: a busy machine's verdict, not a failure
    rows = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    ids = [(r["run"], r["id"]) for r in rows]
    for run in ("baseline", "draft@k=4"):
        assert [i for r, i in ids if r == run] == ["c1", "c1#2", "c1#3", "p1"]
    # Greedy: each turn's speculative output equals the baseline's, so the conversations stay identical.
    assert all(r["matches_baseline"] is True for r in rows if r["run"] != "baseline")


def test_load_sends_turns_with_the_servers_answers(tmp_path: Path, tiny: Any) -> None:
    prompts = load_workload(golden(tmp_path / "g.jsonl")).prompts
    serve_log = tmp_path / "serve.jsonl"
    spec = LocalEngine.load(tiny.target, tiny.draft, 3, device="cpu")
    base = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with (
        ServerThread(create_app(spec, ServeConfig(log_path=serve_log, log_prompts=True))) as s,
        ServerThread(create_app(base)) as b,
    ):
        cfg = LoadConfig(
            endpoint=s.url,
            prompts=prompts,
            baseline=b.url,
            phases=(Phase(concurrency=1),),
            warmup=0,
            warmup_per_level=0,
        )
        result = asyncio.run(
            execute_load(cfg, config={}, json_out=None, csv_out=None, log_out=tmp_path / "l.jsonl")
        )
        served = [json.loads(line) for line in serve_log.read_text("utf-8").splitlines()]
        chats = [r for r in served if "messages" in r]
        # What the server answers to turn 1 (greedy, so deterministic) is what turn 2 carried.
        body = {"messages": chats[0]["messages"], "max_tokens": 6, "temperature": 0}
        answer = httpx.post(s.url + "/v1/chat/completions", json=body, timeout=60).json()
    assert result is not None
    rows = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text("utf-8").splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(["c1", "c1#2", "c1#3", "p1"] * 2)
    assert [len(r["messages"]) for r in chats] == [2, 4, 6]
    # Turn 2 carries, as the assistant's message, exactly what the server answered to turn 1.
    assert chats[1]["messages"][2] == {
        "role": "assistant",
        "content": answer["choices"][0]["message"]["content"],
    }
    assert chats[1]["messages"][3] == {"role": "user", "content": "And then?"}
    assert chats[2]["messages"][:4] == chats[1]["messages"]
