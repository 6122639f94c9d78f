"""Options shared between commands, declared once, with their configs' defaults: the one way to share one.

A group is a tuple of :func:`option` entries (parameter name, typer annotation, default). :func:`shared`
gives a command groups of them: typer sees one signature (the ``head`` groups first, then the command's
own options, then the ``tail``), and the command receives the shared values as one ``options`` dict.
:func:`measuring_command` gives bench, tune, select and whatif the measuring options, which
:func:`measure_config` turns into a validated :class:`~specmeter.measuring.config.MeasureConfig`;
``cli.load_options`` declares load's and sweep's the same way (``LoadConfig``'s defaults), and
:data:`STORE` is the run store a command reads (runs, compare, report, roi). Defaults are read from the
configs (``MeasureConfig``, ``VllmOptions``, ``LoadConfig``), never restated here or in a command.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from specmeter.cli.common import fail, measure_errors, resolve_store
from specmeter.measuring.config import MeasureConfig, VllmOptions
from specmeter.report.outfile import OutputRefused, replacing_allowed

__all__ = [
    "FORCE",
    "RECORD",
    "STORE",
    "OnceCommand",
    "Shared",
    "measure_config",
    "measuring_command",
    "option",
    "refuse_repeated_options",
    "repeated_option",
    "shared",
    "writes_files",
]

_C, _V = MeasureConfig, VllmOptions

# (parameter name, typer annotation, default); the name is the MeasureConfig/VllmOptions field where one is.
Shared = tuple[str, Any, Any]
_REQUIRED = inspect.Parameter.empty


def option(name: str, kind: Any, *decls: str, help: str, default: Any = _REQUIRED, **more: Any) -> Shared:
    """One shared option: the parameter ``name`` (the config field's where there is one), its type, its
    flags and help (and any other ``typer.Option`` argument), and its default (none: required)."""
    return name, Annotated[kind, typer.Option(*decls, help=help, **more)], default  # type: ignore[valid-type]


_STORE_HELP = "Run store (SQLite). Default: $SPECMETER_STORE, else runs.sqlite in the user data dir."
STORE: Sequence[Shared] = (option("store", Path | None, "--store", help=_STORE_HELP, default=None),)
# A command that records its run: where, or not at all (cli.common.resolve_store).
RECORD: Sequence[Shared] = (
    option("store", Path | None, "--store",
           help="Run store to record this run in (default: $SPECMETER_STORE or the user data dir).",
           default=None),
    option("no_store", bool, "--no-store", help="Do not record this run in the run store.", default=False),
)  # fmt: skip

# Every command that writes files takes it (writes_files; cli/app.py gives it to all of them).
FORCE: Sequence[Shared] = (
    option("force", bool, "--force",
           help="Replace (or append to) an existing output file that is not a specmeter output of the same "
                "kind. A link, a device or a FIFO is never written.",
           default=False),
)  # fmt: skip


_SEED_HELP = (
    "Seed for sampling at temperature > 0. Bootstrap intervals always use seed 0, so the same records give "
    "the same interval."
)
_HEAD = (
    option("target", Path, "--target", help="Target model directory (Hugging Face format)."),
    option("prompts", list[Path], "--prompts",
           help="Golden set: specmeter JSONL or Spec-Bench question.jsonl; repeat to combine several (their "
           "categories together; an id may appear in one file only)."),
)  # fmt: skip
_TAIL = (
    option("temperature", float, "--temperature", help="0 = greedy (exact-match verification).",
           default=_C.temperature),
    option("top_p", float, "--top-p", help="Nucleus filtering applied to target and draft alike.",
           default=_C.top_p),
    option("max_tokens", int, "--max-tokens", help="Output tokens per request (unless the prompt says).",
           default=_C.max_tokens),
    option("limit", int | None, "--limit", help="Only the first N prompts (of each --prompts file).",
           default=_C.limit),
    option("seed", int, "--seed", help=_SEED_HELP, default=_C.seed),
    option("json_out", Path | None, "--json", help="Write the whole result as JSON.", default=_C.json_out),
    option("csv_out", Path | None, "--csv", help="Write one CSV row per request.", default=_C.csv_out),
    option("log_out", Path | None, "--log", help="Per-request JSONL log (tokens, latency, accepted).",
           default=_C.log_out),
    option("dtype", str, "--dtype", help="auto, float32, bfloat16 or float16.", default=_C.dtype),
    option("device", str, "--device", help="auto, cpu, cuda or cuda:N.", default=_C.device),
    option("implementation", str, "--implementation", help="auto, native (Llama family) or transformers.",
           default=_C.implementation),
    option("trust_remote_code", bool, "--trust-remote-code", help="Allow custom model code.",
           default=_C.trust_remote_code),
    option("cost_repeats", int, "--cost-repeats", help="Repeats per point of the cost curve.",
           default=_C.cost_repeats),
    option("threads", int | None, "--threads",
           help="CPU threads for torch (default: torch's choice; 1 is steadier on shared hosts).",
           default=_C.threads),
    option("quiet", bool, "--quiet", "-q", help="No progress bar and no tables.", default=False),
    *RECORD,
    option("strict", bool, "--strict",
           help="Exit 4 when other processes made the machine busy during the run (results still written).",
           default=_C.strict),
)  # fmt: skip
_VLLM = (
    option("backend", str, "--backend", help="native (specmeter's engine) or vllm (vLLM's offline engine).",
           default=_C.backend),
    option("method", str, "--method",
           help="vLLM speculative method: draft_model, ngram, eagle, eagle3 or mtp (--backend vllm).",
           default=_V.method),
    option("tensor_parallel_size", int, "--tensor-parallel-size", "--tp",
           help="vLLM tensor parallel size (--backend vllm).", default=_V.tensor_parallel_size),
    option("max_model_len", int | None, "--max-model-len",
           help="vLLM context length (default: what the workload needs).", default=_V.max_model_len),
    option("gpu_memory_utilization", float, "--gpu-memory-utilization",
           help="Share of accelerator memory vLLM may take (0-1].", default=_V.gpu_memory_utilization),
    option("enforce_eager", bool, "--enforce-eager",
           help="vLLM without torch.compile and CUDA graphs (fast start).", default=_V.enforce_eager),
)  # fmt: skip

_CONFIG_FIELDS = (
    "target", "prompts", "temperature", "top_p", "max_tokens", "limit", "seed", "json_out", "csv_out",
    "log_out", "dtype", "device", "implementation", "trust_remote_code", "cost_repeats", "threads", "strict",
)  # fmt: skip
_VLLM_FIELDS = ("method", "tensor_parallel_size", "max_model_len", "gpu_memory_utilization", "enforce_eager")


def _parameter(shared: Shared) -> inspect.Parameter:
    name, annotation, default = shared
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def shared(
    *, head: Sequence[Shared] = (), tail: Sequence[Shared] = ()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command shared options, ``head`` before its own and ``tail`` after; it receives them as
    ``options``. The command declares only its own options plus a keyword-only ``options: dict[str, Any]``.
    """

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        own = inspect.signature(command, eval_str=True).parameters.values()
        names = {s[0] for s in (*head, *tail)}

        @functools.wraps(command)
        def run(**kwargs: Any) -> None:
            options = {name: kwargs.pop(name) for name in names}
            command(**kwargs, options=options)

        params = [
            *map(_parameter, head),
            *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p.name != "options"),
            *map(_parameter, tail),
        ]
        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap


def measuring_command(
    *, vllm: bool = True, optional_head: bool = False
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The measuring options (and the vLLM ones with ``vllm``), shared as :func:`shared` does.

    ``optional_head``: ``--target`` and ``--prompts`` default to None, for a command that can also work
    without a measurement (``select --from``) and says itself what it needs."""
    head = tuple((name, kind, None) for name, kind, _ in _HEAD) if optional_head else _HEAD
    return shared(head=head, tail=(*_TAIL, *(_VLLM if vllm else ())))


def measure_config(options: dict[str, Any], **fields: Any) -> MeasureConfig:
    """A validated MeasureConfig from the shared options plus a command's own ``fields``; errors exit 2."""
    with measure_errors():
        vllm = VllmOptions(**{name: options[name] for name in _VLLM_FIELDS if name in options})
        return MeasureConfig(
            **{name: options[name] for name in _CONFIG_FIELDS},
            store=resolve_store(options["store"], options["no_store"]),
            backend=options.get("backend", MeasureConfig.backend),
            vllm=vllm,
            **fields,
        )
    raise AssertionError("unreachable")  # measure_errors() exits on every error


# -------------------------------------------------------------------------------- one value, given once


def repeated_option(command: Any, args: Sequence[str]) -> str | None:
    """The error for the first single-value option of ``command`` that ``args`` give twice, or None.

    click keeps the last value of an option given twice (``--limit 5 --limit 7`` runs 7 prompts) and typer
    follows it, so a pasted or scripted command line silently loses a value. Options that take several
    values (``multiple``, such as ``--draft``) and counters are left alone; a flag's two spellings
    (``--quiet``/``-q``, ``--x``/``--no-x``) are one option. Arguments after ``--`` are not options.
    """
    spelled: dict[str, Any] = {}
    for param in command.params:
        if param.param_type_name == "option":  # typer's own click classes as well as click's
            spelled.update(dict.fromkeys((*param.opts, *param.secondary_opts), param))
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            break
        flag, inline, _ = token.partition("=") if token.startswith("--") else (token, "", "")
        param = spelled.get(flag)
        if param is None:
            continue
        given = token
        if not param.is_flag and not param.count and not inline:
            given = " ".join([token, *args[i : i + param.nargs]])
            i += param.nargs
        if param.multiple or param.count:
            continue
        key = param.name or flag
        if key in seen:
            return f"{flag} given twice ({seen[key]}, then {given}); it takes one value: give it once"
        seen[key] = given
    return None


class OnceCommand(TyperCommand):
    """A command that refuses a single-value option given twice (:func:`repeated_option`), before parsing:
    one ``error:`` line and exit 2, like every other bad option."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        problem = repeated_option(self, args)
        if problem is not None:
            fail(problem)
        return super().parse_args(ctx, args)


def refuse_repeated_options(app: typer.Typer) -> None:
    """Make every command of ``app`` and of its sub-apps (``runs``) an :class:`OnceCommand` (commands
    registered with a class of their own keep it). Call once every command is registered."""
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer's default
            info.cls = OnceCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            refuse_repeated_options(group.typer_instance)


def writes_files(command: Callable[..., None]) -> Callable[..., None]:
    """Give a command that writes files :data:`FORCE`: it runs within ``report.outfile.replacing_allowed``
    (its output checks let someone else's file be replaced with ``--force``), and an output refused while
    it writes (a link or a file that appeared during the run) ends it with one ``error:`` line, exit 2.

    A command with a ``--force`` of its own (``compare``) keeps it, and it covers the outputs too.
    """
    signature = inspect.signature(command, eval_str=True)
    own = "force" in signature.parameters

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        force = bool(kwargs["force"] if own else kwargs.pop("force"))
        with replacing_allowed(force):
            try:
                command(**kwargs)
            except OutputRefused as e:
                fail(str(e))

    if not own:
        params = [*signature.parameters.values(), *map(_parameter, FORCE)]
        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
    return run
