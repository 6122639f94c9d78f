"""A real vLLM server's own log, replayed, against the server's counters (issue 38, ``--draft-rule vllm``).

Each server (bundled target, one of vLLM's n-gram proposers) serves nothing but this test's ``specmeter load
--api chat``, so its counter deltas are the load's exact totals. It logs with ``--enable-log-requests
--enable-log-outputs`` at DEBUG (vLLM 0.32 writes the prompt's and the streamed deltas' token ids on DEBUG
lines only). ``specmeter replay`` of that log with the same method and k:

* reads every request (none bad, none set aside) from vLLM's own text log, exactly (ids, greedy);
* with ``--draft-rule vllm`` drafts what vLLM's counters say it drafted, exactly (vLLM drafts k at every
  step, near ``max_tokens`` too), and accepts what they say up to the drafts past ``max_tokens``, which
  are in no log: vLLM counts what the target accepted of them before cutting the output, replay counts a
  draft that copied the response to its limit as accepted (replay/walk.py), so vLLM's count lies between
  replay's with those tokens rejected and replay's (docs/replay.md gives the measured differences);
* with specmeter's own rule (d = min(k, tokens left − 1)) drafts fewer tokens than vLLM near the limit:
  the difference the rule exists for.

The figures are printed (``-s``) for docs/replay.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from vllm_helpers import TARGET, read_json, scrape, specmeter, vllm_server

from engine_helpers import GENERAL, LEGAL, prompt_slice

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

PER_DOMAIN = 16
MAX_TOKENS = 48
# (specmeter's method, vLLM's speculative config): vLLM's n-gram with the lookup window [min, max].
CASES = {
    "ngram 2-4, k=3": ("ngram:min=2,max=4", 3, {"prompt_lookup_min": 2, "prompt_lookup_max": 4}),
    "ngram 5-5, k=5": ("ngram:min=5,max=5", 5, {"prompt_lookup_min": 5, "prompt_lookup_max": 5}),
}
PLAIN_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}assistant:"
)
DRAFTS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"


def _replay(log: Path, out: Path, method: str, k: int, rule: str) -> dict[str, Any]:
    path = out / f"replay-{rule}.json"
    specmeter(
        "replay", "--from", log, "--target", TARGET, "--method", method, "--k", k, "--draft-rule", rule,
        "--json", path, "--no-store",
    )  # fmt: skip
    return read_json(path)


@pytest.fixture(scope="module", params=list(CASES))
def replayed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    method, k, window = CASES[request.param]
    spec = {"method": "ngram", "num_speculative_tokens": k, **window}
    out = tmp_path_factory.mktemp("vllm-replay")
    template = out / "plain.jinja"
    template.write_text(PLAIN_TEMPLATE, encoding="utf-8")
    log = out / "server.log"
    extra = ("--chat-template", str(template), "--enable-log-requests", "--enable-log-outputs")
    with vllm_server(log, extra=extra, speculative=spec, environ={"VLLM_LOGGING_LEVEL": "DEBUG"}) as url:
        before = scrape(url)
        specmeter(
            "load", "--endpoint", url, "--api", "chat",
            "--prompts", prompt_slice(LEGAL, out / "legal.jsonl", PER_DOMAIN),
            "--prompts", prompt_slice(GENERAL, out / "general.jsonl", PER_DOMAIN),
            "--concurrency", 2, "--warmup", 0, "--warmup-per-level", 0, "--max-tokens", MAX_TOKENS,
            "--temperature", 0, "--json", out / "load.json",
        )  # fmt: skip
        after = scrape(url)
    yield {
        "drafted": after[DRAFTS] - before.get(DRAFTS, 0.0),
        "accepted": after[ACCEPTED] - before.get(ACCEPTED, 0.0),
        "case": request.param,
        "vllm": _replay(log, out, method, k, "vllm"),
        "specmeter": _replay(log, out, method, k, "specmeter"),
    }


def _totals(data: dict[str, Any]) -> tuple[int, int, int]:
    """Drafted and accepted tokens, and the drafted tokens past the log's end (whose fate is unknown)."""
    summary = data["candidates"][0]["summary"]
    unknown = sum(data["replay"]["past_end_drafts"].values())
    return summary["drafted_tokens"], summary["accepted_tokens"], unknown


def test_every_request_of_vllms_log_is_replayed(replayed: dict[str, Any]) -> None:
    log = replayed["vllm"]["replay"]["log"]
    assert (log["measured"], log["bad_lines"], log["set_aside"]) == (2 * PER_DOMAIN, 0, {}), log
    assert replayed["vllm"]["replay"]["exact"] is True


def test_vllm_rule_gives_vllms_counters(replayed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    drafted, accepted = replayed["drafted"], replayed["accepted"]
    alpha = accepted / drafted
    with capsys.disabled():
        print(
            f"\n{replayed['case']}: vLLM's counters drafted {drafted:.0f}, accepted {accepted:.0f}, "
            f"α {alpha:.4f}"
        )
        for rule in ("vllm", "specmeter"):
            d, a, unknown = _totals(replayed[rule])
            print(
                f"  replay --draft-rule {rule}: drafted {d}, accepted {a} "
                f"(α {(a / d - alpha) * 100:+.2f} points), {unknown} drafted past the log's end"
            )
    d, a, unknown = _totals(replayed["vllm"])
    assert d == drafted, "vLLM drafts k at every step; --draft-rule vllm must draft what it drafted"
    # Exact up to the tokens past max_tokens, which no log holds: vLLM's count lies between replay's count
    # with them rejected and replay's count (them accepted), so α is within their share of the drafts.
    assert a - unknown <= accepted <= a, "vLLM's count lies between the lower bound and replay's count"
    assert abs(a / d - alpha) <= unknown / d + 1e-12
    assert _totals(replayed["specmeter"])[0] < drafted, "specmeter's own rule drafts fewer near max_tokens"
