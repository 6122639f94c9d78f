"""Every log shape replay reads, each written from its documented fields, replays as the plain gateway line.

The same four greedy requests are written in each shape; each shape's replay must give the figures of the
plain ``{"request", "response"}`` log request by request (the same drafted and accepted tokens), with every
request usable and the result exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.goldenset.formats import detect_format
from specmeter.goldenset.shapes import detect_shape, vllm_log_line
from specmeter.replay.run import spread

runner = CliRunner()

CLAUSE = "The Supplier shall indemnify the Customer against all losses. The Supplier shall indemnify"
REQUESTS = [
    ("r0", "legal", "Clause?", CLAUSE),
    ("r1", "general", "Say it twice.", "Say it twice. Say it twice. Say it twice, then stop."),
    ("r2", "legal", "Again?", CLAUSE + " the Customer against all losses."),
    ("r3", "general", "Count.", "one two three one two three one two three"),
]
# Token ids for the formats that log ids (vLLM, SGLang): responses that repeat themselves.
IDS = [
    ("v0", [1, 2, 3, 4], [5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 10]),
    ("v1", [1, 2, 3, 5], [5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6, 7, 11, 12]),
]


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _replay(
    tiny: Any, tmp_path: Path, *sources: Path, extra: tuple[str, ...] = ()
) -> tuple[dict[str, Any], str]:
    out = tmp_path / f"r-{sources[0].stem}.json"
    args = ["replay", "--target", str(tiny.target), "--method", "ngram:min=1,max=3", "--k", "3"]
    for source in sources:
        args += ["--from", str(source)]
    result = runner.invoke(app, [*args, "--json", str(out), "--no-store", "--force", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text("utf-8")), result.output


def _counts(data: dict[str, Any]) -> tuple[Any, ...]:
    summary = data["candidates"][0]["summary"]
    return (
        summary["drafted_tokens"],
        summary["accepted_tokens"],
        summary["steps"],
        sorted(data["candidates"][0]["by_category"]),
    )


def _gateway(i: int, metadata: bool = True, finish: str | None = "stop") -> dict[str, Any]:
    ident, domain, prompt, answer = REQUESTS[i]
    request: dict[str, Any] = {
        "model": "target",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": 64,
    }
    if metadata:
        request["metadata"] = {"domain": domain}
    return {
        "id": ident,
        "request": request,
        "response": {
            "id": "chatcmpl-" + ident,
            "object": "chat.completion",
            "model": "target",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": finish}
            ],
        },
    }


@pytest.fixture
def reference(tiny: Any, tmp_path: Path) -> tuple[Any, ...]:
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "gateway.jsonl", [_gateway(i) for i in range(4)]))
    assert data["replay"]["log"]["measured"] == 4 and data["replay"]["exact"]
    return _counts(data)


def _same(data: dict[str, Any], reference: tuple[Any, ...], n: int = 4) -> None:
    log = data["replay"]["log"]
    assert (log["measured"], log["bad_lines"], log["set_aside"]) == (n, 0, {}), log
    assert data["replay"]["exact"] is True
    assert _counts(data) == reference


def test_gateway_line_with_extra_fields_splits_by_metadata_domain(
    tiny: Any, tmp_path: Path, reference: tuple[Any, ...]
) -> None:
    lines = [
        {**_gateway(i), "latency_ms": 812.5, "status": 200, "timestamp": "2026-01-01T00:00:00Z"}
        for i in range(4)
    ]
    data, output = _replay(tiny, tmp_path, _write(tmp_path / "extra.jsonl", lines))
    _same(data, reference)
    assert data["replay"]["log"]["retokenized"] == 4
    assert "4 responses were logged as text only: re-tokenized with the target's tokenizer" in output
    assert sorted(data["candidates"][0]["by_category"]) == ["general", "legal"]  # no --category-field


def test_openai_batch_output_joined_to_its_input_on_custom_id(
    tiny: Any, tmp_path: Path, reference: tuple[Any, ...]
) -> None:
    inputs, outputs = [], []
    for i in range(4):
        g = _gateway(i)
        inputs.append(
            {"custom_id": f"task-{i}", "method": "POST", "url": "/v1/chat/completions", "body": g["request"]}
        )
        outputs.append(
            {
                "id": f"batch_req_{i}",
                "custom_id": f"task-{i}",
                "response": {"status_code": 200, "request_id": f"req_{i}", "body": g["response"]},
                "error": None,
            }
        )
    outputs.reverse()  # a batch's output is in no particular order
    out_file = _write(tmp_path / "batch_output.jsonl", outputs)
    in_file = _write(tmp_path / "batch_input.jsonl", inputs)
    data, _ = _replay(tiny, tmp_path, out_file, in_file)  # the output file first: joined either way
    _same(data, reference)


def test_batch_input_that_generates_nothing_is_refused(tiny: Any, tmp_path: Path) -> None:
    g = _gateway(0)
    lines = [
        {"custom_id": "e", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "x"}},
        {"custom_id": "c", "method": "POST", "url": "/v1/chat/completions", "body": g["request"]},
        {"id": "b", "custom_id": "c", "response": {"status_code": 200, "body": g["response"]}, "error": None},
    ]
    data, output = _replay(tiny, tmp_path, _write(tmp_path / "batch.jsonl", lines))
    assert data["replay"]["log"]["measured"] == 1 and data["replay"]["log"]["bad_lines"] == 1
    assert "/v1/embeddings generates no tokens" in output


def test_batch_output_without_its_input_says_so(tiny: Any, tmp_path: Path) -> None:
    outputs = [
        {"id": "b", "custom_id": f"t{i}", "response": {"status_code": 200, "body": _gateway(i)["response"]}}
        for i in range(3)
    ]
    log = _write(tmp_path / "out.jsonl", outputs)
    result = runner.invoke(
        app, ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram", "--no-store"]
    )
    assert result.exit_code != 0
    assert "no usable request (3 bad lines" in result.output
    assert "3× an OpenAI Batch output line whose input line is not in --from" in result.output


def test_litellm_standard_logging_payload_reads_model_parameters(
    tiny: Any, tmp_path: Path, reference: tuple[Any, ...]
) -> None:
    lines = []
    for i in range(4):
        g = _gateway(i)
        lines.append(
            {
                "id": f"litellm-{i}",
                "trace_id": "t",
                "call_type": "acompletion",
                "response_cost": 0.0001,
                "status": "success",
                "total_tokens": 30,
                "prompt_tokens": 10,
                "completion_tokens": 20,
                "startTime": 1.0,
                "endTime": 2.0,
                "model": "target",
                "model_group": "target",
                "api_base": "http://localhost:8000/v1",
                "metadata": {"user_api_key_hash": "x", "requester_metadata": {"domain": REQUESTS[i][1]}},
                "cache_hit": False,
                "request_tags": [],
                "messages": g["request"]["messages"],
                "response": g["response"],
                "model_parameters": {"temperature": 0, "max_tokens": 64},
                "hidden_params": {},
            }
        )
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "litellm.jsonl", lines))
    _same(data, reference)


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"key": key, "value": {"stringValue": value}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"intValue": str(value)}}  # OTLP JSON writes int64 as a string


def _span(i: int, old: bool) -> dict[str, Any]:
    ident, domain, prompt, answer = REQUESTS[i]
    attrs = [
        _attr("gen_ai.operation.name", "chat"),
        _attr("gen_ai.provider.name", "openai"),
        _attr("gen_ai.request.model", "target"),
        _attr("gen_ai.request.temperature", 0.0),
        _attr("gen_ai.request.max_tokens", 64),
        _attr("gen_ai.response.model", "target"),
        _attr("gen_ai.response.id", ident),
        _attr("domain", domain),
    ]
    if old:  # the conventions before v1.37: gen_ai.prompt / gen_ai.completion
        attrs += [
            {
                "key": "gen_ai.response.finish_reasons",
                "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}},
            },
            _attr("gen_ai.prompt", json.dumps([{"role": "user", "content": prompt}])),
            _attr("gen_ai.completion", json.dumps([{"role": "assistant", "content": answer}])),
        ]
    else:
        attrs += [
            _attr(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}]),
            ),
            _attr(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": answer}],
                            "finish_reason": "stop",
                        }
                    ]
                ),
            ),
        ]
    return {
        "traceId": "ab" * 16,
        "spanId": f"{i:016x}",
        "name": "chat target",
        "kind": 3,
        "attributes": attrs,
    }


def test_otel_genai_spans_in_otlp_json(tiny: Any, tmp_path: Path, reference: tuple[Any, ...]) -> None:
    http = {
        "traceId": "ab" * 16,
        "spanId": "f" * 16,
        "name": "POST",
        "attributes": [_attr("http.method", "POST")],
    }
    export = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "app")]},
                "scopeSpans": [
                    {"scope": {"name": "openai"}, "spans": [_span(0, False), http, _span(1, True)]}
                ],
            }
        ]
    }
    second = {"resourceSpans": [{"scopeSpans": [{"spans": [_span(2, False), _span(3, True)]}]}]}
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "spans.jsonl", [export, second]))
    _same(data, reference)


def _older_span(i: int, how: str) -> dict[str, Any]:
    """The content as semconv ≤ 1.27 and OpenLLMetry wrote it: on span events, as the spec's Python repr,
    or flattened with OpenAI's parts as JSON text."""
    ident, domain, prompt, answer = REQUESTS[i]
    attrs = [
        _attr("gen_ai.request.model", "target"),
        _attr("gen_ai.request.temperature", 0.0),
        _attr("gen_ai.request.max_tokens", 64),
        _attr("gen_ai.response.id", ident),
        _attr("domain", domain),
    ]
    span: dict[str, Any] = {"traceId": "cd" * 16, "spanId": f"{i:016x}", "name": "chat", "attributes": attrs}
    user, assistant = [{"role": "user", "content": prompt}], [{"role": "assistant", "content": answer}]
    if how == "events":
        span["events"] = [
            {"name": "gen_ai.content.prompt", "attributes": [_attr("gen_ai.prompt", json.dumps(user))]},
            {
                "name": "gen_ai.content.completion",
                "attributes": [_attr("gen_ai.completion", json.dumps(assistant))],
            },
        ]
    elif how == "repr":
        attrs += [_attr("gen_ai.prompt", repr(user)), _attr("gen_ai.completion", repr(assistant))]
    else:
        attrs += [
            _attr("gen_ai.prompt.0.role", "user"),
            _attr("gen_ai.prompt.0.content", json.dumps([{"type": "text", "text": prompt}])),
            _attr("gen_ai.completion.0.role", "assistant"),
            _attr("gen_ai.completion.0.content", answer),
            _attr("gen_ai.completion.0.finish_reason", "stop"),
        ]
    return span


@pytest.mark.parametrize("how", ["events", "repr", "flattened-parts"])
def test_otel_spans_of_older_conventions(
    tiny: Any, tmp_path: Path, reference: tuple[Any, ...], how: str
) -> None:
    spans = [_older_span(i, how) for i in range(4)]
    if how != "flattened-parts":  # these carry the reason as gen_ai.response.finish_reasons
        for span in spans:
            span["attributes"].append(
                {
                    "key": "gen_ai.response.finish_reasons",
                    "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}},
                }
            )
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / f"spans-{how}.jsonl", [export]))
    _same(data, reference)


def test_a_reasoning_part_is_refused_by_name(tiny: Any, tmp_path: Path) -> None:
    span = _span(0, False)
    out = [{"role": "assistant", "finish_reason": "stop", "parts": [{"type": "reasoning", "content": "hm"}]}]
    span["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.output.messages"]
    span["attributes"].append(_attr("gen_ai.output.messages", json.dumps(out)))
    log = _write(tmp_path / "reasoning.jsonl", [{"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}])
    result = runner.invoke(
        app, ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram", "--no-store"]
    )
    assert result.exit_code != 0
    assert "a reasoning part (only text can be replayed)" in result.output, result.output


def test_langfuse_v2_rows_and_ai_sdk_parameters(
    tiny: Any, tmp_path: Path, reference: tuple[Any, ...]
) -> None:
    """v2 rows (``providedModelName``, parameters as text, the AI SDK's ``maxTokens`` and ``finishReason``)
    and OTel-ingested rows (semconv parts): replayed as the gateway lines, the finish reason included."""
    rows = []
    for i in range(4):
        _, domain, prompt, answer = REQUESTS[i]
        row: dict[str, Any] = {
            "id": f"obs-{i}", "traceId": f"t-{i}", "type": "GENERATION", "providedModelName": "target",
            "tags": [f"domain:{domain}"],
        }  # fmt: skip
        if i % 2:
            row["modelParameters"] = {"temperature": "0", "maxTokens": "64", "finishReason": "stop"}
            row["input"] = [{"role": "user", "content": prompt}]
            row["output"] = {"role": "assistant", "content": answer}
        else:
            row["modelParameters"] = {"temperature": 0, "max_tokens": 64}
            row["metadata"] = {"finish_reason": "stop"}
            row["input"] = [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
            row["output"] = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
        rows.append(row)
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "langfuse-v2.jsonl", rows))
    _same(data, reference)


def test_langfuse_generations_portkey_and_helicone_logs(
    tiny: Any, tmp_path: Path, reference: tuple[Any, ...]
) -> None:
    langfuse: list[dict[str, Any]] = [
        {"id": "trace-span", "type": "SPAN", "traceId": "t", "input": "x", "output": "y"}
    ]
    portkey = []
    for i in range(4):
        g = _gateway(i, metadata=False)
        langfuse.append(
            {
                "id": f"obs-{i}",
                "traceId": f"trace-{i}",
                "type": "GENERATION",
                "name": "chat",
                "model": "target",
                "modelParameters": {"temperature": 0, "max_tokens": 64},
                "input": g["request"]["messages"],
                "output": {"role": "assistant", "content": REQUESTS[i][3]},
                "metadata": {},
                "tags": [f"domain:{REQUESTS[i][1]}"],
            }
        )
        portkey.append(
            {
                "request": {
                    "url": "https://api.openai.com/v1/chat/completions",
                    "method": "POST",
                    "body": g["request"],
                },
                "response": {"status": 200, "body": g["response"], "response_time": 120},
                "metadata": {"domain": REQUESTS[i][1]},
            }
        )
    # An observation logs the message, not why it ended: compared with gateway lines that say nothing either.
    unknown, _ = _replay(
        tiny, tmp_path, _write(tmp_path / "ends.jsonl", [_gateway(i, finish=None) for i in range(4)])
    )
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "langfuse.jsonl", langfuse))
    _same(data, _counts(unknown))
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "portkey.jsonl", portkey))
    _same(data, reference)
    helicone = [
        {
            "request_id": f"h-{i}",
            "request_created_at": "2026-01-01T00:00:00Z",
            "request_path": "/v1/chat/completions",
            "request_body": _gateway(i, metadata=False)["request"],
            "request_properties": {"Domain": REQUESTS[i][1]},
            "request_model": "target",
            "response_status": 200,
            "response_body": _gateway(i)["response"],
            "delay_ms": 120,
        }
        for i in range(4)
    ]
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "helicone.jsonl", helicone))
    _same(data, reference)


# ------------------------------------------------------------------------------------ engines' own logs


def _text(tiny: Any, ids: list[int]) -> str:
    """What the target's tokenizer makes of ``ids``: the text an engine logs beside them."""
    from transformers import AutoTokenizer

    return str(AutoTokenizer.from_pretrained(tiny.target).decode(ids, skip_special_tokens=True))


@pytest.fixture
def ids_reference(tiny: Any, tmp_path: Path) -> tuple[Any, ...]:
    lines = [
        {
            "id": ident,
            "temperature": 0.0,
            "prompt_ids": prompt,
            "output_ids": output,
            "finish_reason": "length",
            "max_tokens": len(output),
            "accepted_tokens": 0,
            "domain": "uncategorised",
        }
        for ident, prompt, output in IDS
    ]
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "serve.jsonl", lines))
    return _counts(data)


def test_vllm_server_log_lines(tiny: Any, tmp_path: Path, ids_reference: tuple[Any, ...]) -> None:
    lines = [
        "INFO 01-01 12:00:00 [api_server.py:1] vLLM API server version 0.11.0",
        "INFO: Started server process",
    ]
    for ident, prompt, output in IDS:
        rid = f"cmpl-{ident}"
        params = (
            "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
            f"temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, seed=None, stop=[], max_tokens={len(output)}, "
            "min_tokens=0, logprobs=None)"
        )
        lines.append(
            f"DEBUG 01-01 12:00:01 [logger.py:40] Request {rid} details: prompt: 'x', "
            f"prompt_token_ids: {prompt}, prompt_embeds shape: None."
        )
        lines.append(
            f"INFO 01-01 12:00:01 [logger.py:49] Received request {rid}: params: {params}, "
            "lora_request: None."
        )
        lines.append(
            f"INFO 01-01 12:00:01 [logger.py:80] Generated response {rid} (streaming delta): output: 'x', "
            f"output_token_ids: [{output[0]}], finish_reason: None"
        )
        lines.append(
            f"INFO 01-01 12:00:02 [logger.py:80] Generated response {rid} (streaming complete): "
            f"output: {_text(tiny, output)!r}, "
            f"output_token_ids: {output}, finish_reason: length"
        )
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data, _ = _replay(tiny, tmp_path, log)
    _same(data, ids_reference, n=len(IDS))


def _vllm_032_lines(tiny: Any, stream: bool) -> list[str]:
    """vLLM 0.32's request logger at DEBUG (serve/utils/request_logger.py): prompt and ids on DEBUG lines,
    the response's ids on a "details" line before its text; a stream logs deltas, then its whole text."""
    lines = []
    for ident, prompt, output in IDS:
        rid = f"chatcmpl-{ident}"
        params = f"SamplingParams(n=1, temperature=0.0, top_p=1.0, max_tokens={len(output)}, min_tokens=0)"
        lines.append(
            f"(APIServer pid=1) DEBUG 12-05 08:00:00 [request_logger.py:54] Request {rid} details: "
            f"prompt: 'x', prompt_token_ids: {prompt}, prompt_embeds shape: None."
        )
        lines.append(
            f"(APIServer pid=1) INFO 12-05 08:00:00 [request_logger.py:65] Received request {rid}: "
            f"params: {params}, lora_request: None."
        )
        tag = " (streaming delta)" if stream else ""
        pieces = [output[:3], output[3:]] if stream else [output]
        for i, piece in enumerate(pieces):
            finish = "length" if i == len(pieces) - 1 else "None"
            lines.append(
                f"(APIServer pid=1) DEBUG 12-05 08:00:01 [request_logger.py:96] Generated response"
                f" {rid}{tag} "
                f"details: output_token_ids: {piece}"
            )
            lines.append(
                f"(APIServer pid=1) INFO 12-05 08:00:01 [request_logger.py:103] Generated response"
                f" {rid}{tag}: "
                f"output: {_text(tiny, piece)!r}, finish_reason: {finish}"
            )
        if stream:
            lines.append(
                f"(APIServer pid=1) INFO 12-05 08:00:02 [request_logger.py:103] Generated response {rid} "
                f"(streaming complete): output: {_text(tiny, output)!r}, finish_reason: streaming_complete"
            )
    return lines


@pytest.mark.parametrize("stream", [False, True], ids=["non-streaming", "streamed-deltas"])
def test_vllm_032_server_log(tiny: Any, tmp_path: Path, ids_reference: tuple[Any, ...], stream: bool) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(_vllm_032_lines(tiny, stream)) + "\n", encoding="utf-8")
    data, _ = _replay(tiny, tmp_path, log)
    _same(data, ids_reference, n=len(IDS))


def test_vllm_log_without_prompts_or_outputs_says_which_flag(tiny: Any, tmp_path: Path) -> None:
    """INFO only: no prompt is logged; a completions request: no response line. One line each, not a crash."""
    info = [line for line in _vllm_032_lines(tiny, False) if " DEBUG " not in line]
    completions = (
        "(APIServer pid=1) DEBUG 12-05 08:00:00 [request_logger.py:54] Request cmpl-7 details: "
        "prompt: 'x', prompt_token_ids: [1, 2], prompt_embeds shape: None."
    )
    log = tmp_path / "vllm.log"
    log.write_text("\n".join([*info, completions]) + "\n", encoding="utf-8")
    result = runner.invoke(
        app, ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram", "--no-store"]
    )
    assert result.exit_code != 0
    assert "VLLM_LOGGING_LEVEL=DEBUG" in result.output, result.output
    assert "logs the outputs of chat completions only" in result.output, result.output


def test_sglang_json_request_log(tiny: Any, tmp_path: Path, ids_reference: tuple[Any, ...]) -> None:
    lines = []
    for ident, prompt, output in IDS:
        obj = {
            "rid": ident,
            "input_ids": prompt,
            "sampling_params": {"temperature": 0.0, "max_new_tokens": len(output)},
            "stream": False,
        }
        lines.append(
            {"timestamp": "2026-01-01T00:00:00", "event": "request.received", "rid": ident, "obj": obj}
        )
        meta = {
            "id": ident,
            "finish_reason": {"type": "length", "length": len(output)},
            "prompt_tokens": len(prompt),
            "completion_tokens": len(output),
            "spec_verify_ct": 5,
            "spec_accept_length": 2.5,
        }
        lines.append(
            {"timestamp": "2026-01-01T00:00:01", "event": "request.finished", "rid": ident, "obj": obj,
             "out": {"text": _text(tiny, output), "output_ids": output, "meta_info": meta}}
        )  # fmt: skip
    data, shown = _replay(tiny, tmp_path, _write(tmp_path / "sglang.jsonl", lines))
    _same(data, ids_reference, n=len(IDS))
    # The engine's own figures, request by request, beside replay's.
    log = data["replay"]["log"]
    assert log["engine_figures"] == len(IDS) and log["retokenized"] == 0
    first = log["engine_listed"][0]
    assert first["engine"] == {"spec_verify_ct": 5, "spec_accept_length": 2.5}
    assert list(first["replayed"]) == ["ngram:min=1,max=3@k=3"]
    assert first["replayed"]["ngram:min=1,max=3@k=3"]["drafted"] > 0
    assert "The engine's own figures beside replay's, per request (2 of 2)" in shown


def test_vllm_return_token_ids_are_used_as_ids(
    tiny: Any, tmp_path: Path, ids_reference: tuple[Any, ...]
) -> None:
    lines = [
        {
            "request": {
                "model": "target",
                "prompt": "x",
                "temperature": 0,
                "max_tokens": len(output),
                "return_token_ids": True,
            },
            "response": {
                "model": "target",
                "prompt_token_ids": prompt,
                "choices": [
                    {"index": 0, "text": _text(tiny, output), "token_ids": output, "finish_reason": "length"}
                ],
            },
        }
        for _, prompt, output in IDS
    ]
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "vllm-gw.jsonl", lines))
    _same(data, ids_reference, n=len(IDS))


# ------------------------------------------------------------------------------------ detection, reasons


def test_one_extra_field_never_flips_the_format() -> None:
    gateway = _gateway(0)
    for extra in ("latency_ms", "output_tokens", "status", "user", "timestamp", "model"):
        assert detect_format({**gateway, extra: 1}) == "openai", extra
        assert detect_shape({**gateway, extra: 1}) is None, extra
    serve = {"id": "r", "prompt_ids": [1], "output_ids": [2], "accepted_tokens": 0, "latency_ms": 3.0}
    assert detect_format({**serve, "request": 1}) == "specmeter"
    assert detect_shape({"custom_id": "a", "response": {"body": {}}, "latency_ms": 1}) == "batch"
    assert detect_shape({"model_parameters": {}, "messages": [], "response": {}}) == "litellm"


def test_vllm_line_parser_reads_the_documented_messages() -> None:
    line = vllm_log_line(
        "INFO 01-01 [logger.py:1] Generated response chatcmpl-9: output: 'it\\'s', output_token_ids: [4, 5], "
        "finish_reason: stop"
    )
    assert line is not None and (line.kind, line.request_id, line.text, line.ids, line.finish) == (
        "output", "chatcmpl-9", "it's", [4, 5], "stop"
    )  # fmt: skip
    assert vllm_log_line("INFO 01-01 [metrics.py:1] Avg prompt throughput: 1.0 tokens/s") is None


def test_every_line_bad_prints_the_first_reasons_with_counts(tiny: Any, tmp_path: Path) -> None:
    lines = [{"request": {"model": "target", "prompt": "x"}, "response": {"choices": []}} for _ in range(5)]
    lines += [{"hello": 1}, {"hello": 2}]
    log = _write(tmp_path / "bad.jsonl", lines)
    result = runner.invoke(
        app, ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram", "--no-store"]
    )
    assert result.exit_code != 0
    assert "no usable request (7 bad lines, 0 set aside); 5× field 'response.choices': empty" in result.output
    assert "2× no 'messages', 'prompt' or 'input'" in result.output


def test_category_field_that_matches_nothing_is_a_warning(tiny: Any, tmp_path: Path) -> None:
    log = _write(tmp_path / "g.jsonl", [_gateway(i) for i in range(4)])
    data, output = _replay(tiny, tmp_path, log, extra=("--category-field", "route"))
    assert data["replay"]["log"]["category_missing"] == 4
    assert "warning: --category-field route matched no value in 4 of 4 requests" in output


def test_warmup_requests_are_left_out(tiny: Any, tmp_path: Path, reference: tuple[Any, ...]) -> None:
    warm = {**_gateway(1), "warmup": True}
    marked = _gateway(3)
    marked["request"]["metadata"]["specmeter_warmup"] = "true"
    lines = [warm, *(_gateway(i) for i in range(4)), marked]
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "w.jsonl", lines))
    assert data["replay"]["log"]["warmup_marked"] == 2
    _same(data, reference)


def test_limit_samples_across_categories(tiny: Any, tmp_path: Path) -> None:
    lines = [{**_gateway(0), "id": f"legal-{i}"} for i in range(6)] + [_gateway(1), _gateway(3)]
    data, _ = _replay(tiny, tmp_path, _write(tmp_path / "many.jsonl", lines), extra=("--limit", "4"))
    by_category = data["candidates"][0]["by_category"]
    assert {c: s["requests"] for c, s in by_category.items()} == {"legal": 2, "general": 2}
    assert data["replay"]["log"]["beyond_limit"] == 4


def test_spread_shares_n_evenly_within_each_categorys_count() -> None:
    assert spread({"a": 10, "b": 10}, 5) == {"a": 3, "b": 2}
    assert spread({"a": 1, "b": 10, "c": 10}, 9) == {"a": 1, "b": 4, "c": 4}
    assert spread({"a": 2}, 5) == {"a": 2}
