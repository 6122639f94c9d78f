"""vLLM's offline engine as a backend: one request at a time, every engine step recorded raw.

specmeter does not imitate vLLM here, it drives it: ``LLMEngine`` (the engine under ``vllm.LLM``) is built
with the user's speculative config, tensor parallelism, dtype and memory settings, and each request is
stepped to completion on its own, so every engine step is one verification of this request:

* the tokens a step makes visible come from the request's DELTA output (an Emission, timed in this process,
  which is where a user of the engine would see them);
* what that step drafted and accepted comes from vLLM's own ``SpecDecodingStats`` of the same step, through
  a stat logger (``StatLoggerBase``) attached to the engine; those are the numbers vLLM adds to its
  ``vllm:spec_decode_*`` counters, so per-request records sum exactly to vLLM's totals;
* prefill time and vLLM's own TTFT/latency come from its ``FinishedRequestStats`` and ``IterationStats``.

vLLM is imported lazily: specmeter without it installed works, and asking for it says how to install it.
``SchedulerStats``/``IterationStats`` are not a stable vLLM interface; the fields read here are those of
vLLM 0.32 and are read with ``getattr`` so an older or newer vLLM degrades to missing numbers, not a crash.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from specmeter.engine.speculative import Generation
from specmeter.metrics.records import Emission, FinishReason, StepRecord

__all__ = [
    "INSTALL_HINT",
    "METHODS",
    "NEEDS_DRAFT_DIR",
    "EngineRequestStats",
    "SpecCounters",
    "StepLog",
    "VllmEngine",
    "VllmSettings",
    "VllmUnavailable",
    "import_vllm",
    "read_spec_counters",
    "speculative_config",
]

INSTALL_HINT = (
    "vLLM is not installed in this environment: on a GPU machine `pip install vllm` next to specmeter; "
    "on a CPU see README.md, section 'vLLM' (make vllm-env builds one)"
)
# Methods whose proposer is a model of its own (a draft, an EAGLE head, the target's MTP layers): each draft
# token costs one proposer forward. n-gram lookup costs none.
METHODS = ("draft_model", "ngram", "eagle", "eagle3", "mtp")
_MODEL_FREE = {"ngram"}
NEEDS_DRAFT_DIR = ("draft_model", "eagle", "eagle3")


class VllmUnavailable(RuntimeError):
    """vLLM cannot be imported; the message says how to install it."""


def import_vllm() -> Any:
    """The ``vllm`` module, or VllmUnavailable with the install hint.

    Importing vLLM takes seconds; a Ctrl-C in that time waits for the import to finish, because pydantic
    turns a KeyboardInterrupt raised while it builds vLLM's models into a SchemaError traceback.
    """
    with ctrl_c_deferred():
        try:
            import vllm
        except ImportError as e:
            raise VllmUnavailable(f"{INSTALL_HINT} ({e})") from None
    return vllm


@contextmanager
def ctrl_c_deferred() -> Iterator[None]:
    """Run the block to its end even if Ctrl-C is pressed, then raise KeyboardInterrupt (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt


@dataclass(frozen=True)
class VllmSettings:
    """The engine options specmeter passes through to vLLM (same meaning as vLLM's own flags)."""

    method: str = "draft_model"
    tensor_parallel_size: int = 1
    dtype: str = "auto"
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False
    seed: int = 0
    trust_remote_code: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "tensor_parallel_size": self.tensor_parallel_size,
            "dtype": self.dtype,
            "max_model_len": self.max_model_len,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "enforce_eager": self.enforce_eager,
        }


# vLLM 0.32's CPU rejection kernels assert against synthetic mode (vllm/utils/cpu_triton_utils.py); the engine
# starts, then dies on its first verification with a generic EngineDeadError. Named here so the refusal is
# one line before an engine is started.
_CPU_SYNTHETIC_REFUSAL = "Synthetic acceptance not supported with CPU sampling"


def synthetic_unsupported() -> str | None:
    """Why this vLLM cannot run ``rejection_sample_method: "synthetic"``, or None when it can (as far as can
    be told without starting an engine): the CPU platform with kernels that refuse it."""
    import inspect

    vllm = import_vllm()
    try:
        with ctrl_c_deferred():
            from vllm.platforms import current_platform

            if not current_platform.is_cpu():
                return None
            import vllm.utils.cpu_triton_utils as kernels

            source = inspect.getsource(kernels)
    except (ImportError, OSError, AttributeError):
        return None
    if _CPU_SYNTHETIC_REFUSAL in source:
        version = getattr(vllm, "__version__", "?")
        return (
            f"vLLM {version} on the CPU refuses synthetic acceptance (its CPU rejection kernels assert "
            f"{_CPU_SYNTHETIC_REFUSAL!r}, vllm/utils/cpu_triton_utils.py); run whatif natively (drop "
            "--backend vllm) or with vLLM on a GPU"
        )
    return None


def speculative_config(method: str, draft: str | None, k: int) -> dict[str, Any]:
    """vLLM's ``speculative_config`` for one (method, draft, k); n-gram and MTP take no draft directory."""
    if method not in METHODS:
        raise ValueError(f"unknown speculative method {method!r}; choose one of {', '.join(METHODS)}")
    if k < 1:
        raise ValueError("k must be >= 1")
    config: dict[str, Any] = {"method": method, "num_speculative_tokens": k}
    if method in NEEDS_DRAFT_DIR:
        if draft is None:
            raise ValueError(f"method {method!r} needs a draft model directory")
        config["model"] = draft
    elif method == "mtp" and draft is not None:
        config["model"] = draft
    if method == "ngram":
        config.update(prompt_lookup_min=1, prompt_lookup_max=4)
    return config


@dataclass(frozen=True)
class SpecCounters:
    """vLLM's spec-decode counters (summed over engines); ``accepted_per_pos[i]`` counts position i+1."""

    drafts: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0
    accepted_per_pos: tuple[int, ...] = ()
    generation_tokens: int = 0
    prompt_tokens: int = 0

    def minus(self, before: SpecCounters) -> SpecCounters:
        n = max(len(self.accepted_per_pos), len(before.accepted_per_pos))
        a = list(self.accepted_per_pos) + [0] * (n - len(self.accepted_per_pos))
        b = list(before.accepted_per_pos) + [0] * (n - len(before.accepted_per_pos))
        return SpecCounters(
            drafts=self.drafts - before.drafts,
            draft_tokens=self.draft_tokens - before.draft_tokens,
            accepted_tokens=self.accepted_tokens - before.accepted_tokens,
            accepted_per_pos=tuple(x - y for x, y in zip(a, b, strict=True)),
            generation_tokens=self.generation_tokens - before.generation_tokens,
            prompt_tokens=self.prompt_tokens - before.prompt_tokens,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "num_drafts": self.drafts,
            "num_draft_tokens": self.draft_tokens,
            "num_accepted_tokens": self.accepted_tokens,
            "num_accepted_tokens_per_pos": list(self.accepted_per_pos),
            "generation_tokens": self.generation_tokens,
            "prompt_tokens": self.prompt_tokens,
        }


_COUNTERS = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "accepted_tokens",
    "vllm:generation_tokens": "generation_tokens",
    "vllm:prompt_tokens": "prompt_tokens",
}


def read_spec_counters(metrics: Sequence[Any]) -> SpecCounters:
    """Totals from ``LLMEngine.get_metrics()`` (vllm.v1.metrics.reader objects), summed over engine labels."""
    totals = dict.fromkeys(_COUNTERS.values(), 0)
    per_pos: list[int] = []
    for m in metrics:
        name = getattr(m, "name", "")
        if name in _COUNTERS:
            totals[_COUNTERS[name]] += int(getattr(m, "value", 0))
        elif name == "vllm:spec_decode_num_accepted_tokens_per_pos":
            values = [int(v) for v in getattr(m, "values", [])]
            per_pos += [0] * (len(values) - len(per_pos))
            for i, v in enumerate(values):
                per_pos[i] += v
    return SpecCounters(accepted_per_pos=tuple(per_pos), **totals)


@dataclass(frozen=True)
class EngineRequestStats:
    """What vLLM itself measured for one request (its FinishedRequestStats and first-token latency)."""

    ttft_s: float | None
    e2e_s: float | None
    prefill_s: float | None
    decode_s: float | None
    queued_s: float | None
    generation_tokens: int | None


@dataclass
class StepLog:
    """Filled by the stat logger inside ``LLMEngine.step()``; drained after every step."""

    spec: list[tuple[int, int, int]] = field(default_factory=list)  # (drafts, draft tokens, accepted)
    finished: list[Any] = field(default_factory=list)
    ttfts: list[float] = field(default_factory=list)

    def clear(self) -> None:
        self.spec.clear()
        self.finished.clear()
        self.ttfts.clear()


def _logger_factory(log: StepLog) -> Any:
    from vllm.v1.metrics.loggers import StatLoggerBase

    class StepRecorder(StatLoggerBase):  # type: ignore[misc]
        def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
            pass

        def record(
            self,
            scheduler_stats: Any,
            iteration_stats: Any,
            mm_cache_stats: Any = None,
            engine_idx: int = 0,
        ) -> None:
            spec = getattr(scheduler_stats, "spec_decoding_stats", None)
            if spec is not None:
                log.spec.append((spec.num_drafts, spec.num_draft_tokens, spec.num_accepted_tokens))
            if iteration_stats is not None:
                log.finished.extend(getattr(iteration_stats, "finished_requests", []))
                log.ttfts.extend(getattr(iteration_stats, "time_to_first_tokens_iter", []))

        def log_engine_initialized(self) -> None:
            pass

    return StepRecorder


def _shutdown(engine: Any) -> None:
    shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
    if callable(shutdown):
        with suppress(Exception):  # an engine killed by Ctrl-C may fail to stop in order; it is gone
            shutdown()


def _stop_engine_processes() -> None:
    """Terminate every process this one started (vLLM's engine core and workers), then kill stragglers."""
    try:
        import psutil  # a dependency of vLLM
    except ImportError:
        return
    children = psutil.Process().children(recursive=True)
    for child in children:
        with suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=5)
    for child in alive:
        with suppress(psutil.Error):
            child.kill()


def _start_interruptibly(make: Callable[[], Any]) -> Any:
    """``make()`` in a helper thread, so that Ctrl-C interrupts the start at once.

    A terminal's Ctrl-C reaches vLLM's engine processes too, and one that dies during the start-up
    handshake leaves vLLM's front end polling for it for 10 minutes (VLLM_ENGINE_READY_TIMEOUT_S), deaf to
    KeyboardInterrupt. Here the main thread only waits, raises KeyboardInterrupt at once, and stops the
    engine processes; the abandoned helper thread is a daemon.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["engine"] = make()
        except BaseException as e:  # handed to the main thread as it is
            box["error"] = e

    thread = threading.Thread(target=run, name="vllm-engine-start", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.2)
    except KeyboardInterrupt:
        _stop_engine_processes()
        raise
    error = box.get("error")
    if isinstance(error, ValueError) and "main thread" in str(error):
        # Something in this configuration (Ray in-process, say) installs signal handlers: start it here.
        return make()
    if error is not None:
        raise error
    return box["engine"]


class VllmEngine:
    """One vLLM engine (target plus an optional speculative config), driven one request at a time."""

    def __init__(self, engine: Any, log: StepLog, *, draft_forwards_per_token: int) -> None:
        """Wrap an engine whose stat loggers fill ``log``; :meth:`start` builds one from settings."""
        self.engine = engine
        self._log = log
        self.draft_forwards_per_token = draft_forwards_per_token
        self._n = 0

    @classmethod
    def start(
        cls,
        target: Path,
        settings: VllmSettings,
        speculative: dict[str, Any] | None,
        *,
        max_model_len: int | None = None,
    ) -> VllmEngine:
        import_vllm()
        # The CPU build sizes its KV cache from this (GiB); 1 GiB is plenty for one request at a time.
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        # These imports build most of vLLM's pydantic models (seconds on a cold venv); a Ctrl-C among them
        # came out as a SchemaError traceback and exit 1 (a clean-clone CI run), so it waits for them.
        with ctrl_c_deferred():
            from vllm.engine.arg_utils import EngineArgs
            from vllm.v1.engine.llm_engine import LLMEngine

            args = EngineArgs(
                model=str(target),
                tensor_parallel_size=settings.tensor_parallel_size,
                dtype=settings.dtype,  # type: ignore[arg-type]
                max_model_len=settings.max_model_len or max_model_len,
                gpu_memory_utilization=settings.gpu_memory_utilization,
                enforce_eager=settings.enforce_eager,
                seed=settings.seed,
                trust_remote_code=settings.trust_remote_code,
                speculative_config=speculative,
                disable_log_stats=False,  # the stat loggers are where the per-step spec counts come from
            )
            log = StepLog()
            loggers = [_logger_factory(log)]
        engine = _start_interruptibly(lambda: LLMEngine.from_engine_args(args, stat_loggers=loggers))
        model_free = speculative is None or speculative["method"] in _MODEL_FREE
        return cls(engine, log, draft_forwards_per_token=0 if model_free else 1)

    def counters(self) -> SpecCounters:
        return read_spec_counters(self.engine.get_metrics())

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float,
        top_p: float,
        eos_ids: Collection[int],
        seed: int | None = None,
        ignore_eos: bool = False,
    ) -> tuple[Generation, EngineRequestStats]:
        """Decode one request alone in the engine; every engine step that shows tokens is one StepRecord.

        ``ignore_eos`` runs to ``max_tokens`` whatever is generated (vLLM's own ``ignore_eos``)."""
        params = self._sampling_params(max_tokens, temperature, top_p, eos_ids, seed, ignore_eos)
        self._n += 1
        rid = f"specmeter-{self._n}"
        out: list[int] = []
        steps: list[StepRecord] = []
        emissions: list[Emission] = []
        reason: FinishReason = "length"
        engine = self.engine
        self._log.clear()
        t0 = perf_counter()
        engine.add_request(rid, {"prompt_token_ids": list(prompt_ids)}, params)
        try:
            while engine.has_unfinished_requests():
                outputs = engine.step()
                now = perf_counter() - t0
                # One request in the engine: the stats of this step are this request's.
                drafts = sum(s[0] for s in self._log.spec)
                drafted = sum(s[1] for s in self._log.spec)
                accepted = sum(s[2] for s in self._log.spec)
                self._log.spec.clear()
                for o in outputs:
                    if o.request_id != rid:
                        continue
                    new = list(o.outputs[0].token_ids)
                    if new:
                        if emissions:  # the first emission is prefill's token, not a verification
                            gap = now - emissions[-1].t
                            steps.append(
                                StepRecord(
                                    drafted=drafted,
                                    accepted=accepted,
                                    emitted=len(new),
                                    draft_s=0.0,
                                    verify_s=gap,
                                    draft_forwards=drafted * self.draft_forwards_per_token,
                                )
                            )
                        elif drafts:
                            raise RuntimeError("vLLM reported a verification before the first token")
                        emissions.append(Emission(t=now, tokens=len(new)))
                        out.extend(new)
                    if o.finished:
                        reason = "eos" if o.outputs[0].finish_reason == "stop" else "length"
        except BaseException:
            with suppress(Exception):  # after Ctrl-C the engine processes may already be gone
                engine.abort_request([rid])
            raise
        if not emissions:
            raise RuntimeError("vLLM finished the request without emitting a token")
        stats = self._engine_stats()
        generation = Generation(
            output_ids=tuple(out),
            steps=tuple(steps),
            emissions=tuple(emissions),
            ttft_s=emissions[0].t,
            latency_s=emissions[-1].t,
            prefill_s=emissions[0].t if stats.prefill_s is None else stats.prefill_s,
            finish_reason=reason,
        )
        return generation, stats

    def _sampling_params(
        self,
        max_tokens: int,
        temperature: float,
        top_p: float,
        eos_ids: Collection[int],
        seed: int | None,
        ignore_eos: bool = False,
    ) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        return SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=None if temperature == 0 else seed,
            stop_token_ids=[] if ignore_eos else sorted(eos_ids),
            ignore_eos=ignore_eos,
            output_kind=RequestOutputKind.DELTA,  # each output carries only the step's new tokens
            detokenize=False,
        )

    def _engine_stats(self) -> EngineRequestStats:
        f = self._log.finished[-1] if self._log.finished else None

        def get(name: str) -> float | None:
            value = getattr(f, name, None)
            return None if value is None else float(value)

        tokens = getattr(f, "num_generation_tokens", None)
        return EngineRequestStats(
            ttft_s=self._log.ttfts[0] if self._log.ttfts else None,
            e2e_s=get("e2e_latency"),
            prefill_s=get("prefill_time"),
            decode_s=get("decode_time"),
            queued_s=get("queued_time"),
            generation_tokens=None if tokens is None else int(tokens),
        )

    def close(self) -> None:
        _shutdown(self.engine)

    def __enter__(self) -> VllmEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
