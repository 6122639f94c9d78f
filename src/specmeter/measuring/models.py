"""Loading the target and the candidates of a native run, and the names that key their results.

A candidate is a draft model directory (loaded like the target) or a method spec (docs/methods.md), which
becomes a :class:`MethodModel`: the proposer ``engine.proposers.candidate.make_proposer`` builds, with the
target's tokenizer and a ``ModelInfo`` named by the spec's label whose memory is ``MethodSpec.extra_memory``.

A candidate's name labels its results (``draft@k=4``, ``ngram:min=2,max=4@k=4``) and keys its cost curve,
so names must be unique: a draft whose directory name repeats another's, the target's or a method's label
is named by its full path instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specmeter.measuring.errors import MeasureError
from specmeter.methods import MethodSpec, MethodSpecError
from specmeter.metrics.records import ModelInfo

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.engine.proposers.proposer import Proposer
    from specmeter.measuring.config import MeasureConfig

__all__ = ["MethodModel", "draft_names", "load_method", "load_models", "method_info", "tokenizer_refusal"]


def draft_names(target: Path, drafts: Sequence[Path], taken: Sequence[str] = ()) -> list[str]:
    """One unique label per draft: its directory name, else its full path (``taken``: method labels)."""
    names = [d.name for d in drafts]
    unique = [names.count(n) == 1 and n != target.name and n not in taken for n in names]
    return [n if ok else str(p) for p, n, ok in zip(drafts, names, unique, strict=True)]


@dataclass(frozen=True)
class MethodModel:
    """A method spec as a run's candidate: its proposer, and what the run bookkeeping needs of a model.

    One proposer is one run's state: suffix decoding learns from every request it serves, in order. Each
    (method, k) candidate gets its own (:meth:`fresh`), so candidates never see each other's responses.
    """

    spec: MethodSpec
    model: Proposer
    target: LoadedModel
    info: ModelInfo

    @property
    def tokenizer(self) -> Any:
        return self.target.tokenizer

    @property
    def eos_ids(self) -> frozenset[int]:
        return self.target.eos_ids

    @property
    def max_positions(self) -> int | None:
        return self.target.max_positions

    def fresh(self) -> MethodModel:
        """The same method with a proposer of its own (nothing learnt yet)."""
        return load_method(self.spec, self.target)


def method_info(spec: MethodSpec, target: ModelInfo, proposer: Proposer) -> ModelInfo:
    """A method's ModelInfo: named by its label, its memory the honest ``MethodSpec.extra_memory``.

    A proposer that runs a model (``layers:n``, an EAGLE head) keeps that model's facts (what one of its
    forwards reads); a model-free one has no weights, no layers and no KV cache.
    """
    # The facts of the model it runs: ``info`` on the proposer (an EAGLE head may put it there), else on
    # the model a DraftModelProposer wraps.
    model_info = getattr(proposer, "info", None) or getattr(getattr(proposer, "model", None), "info", None)
    head = model_info if isinstance(model_info, ModelInfo) else None
    try:
        extra = spec.extra_memory(target, head)
    except MethodSpecError:
        extra = None
    if head is not None:
        return replace(
            head, name=spec.label, method=spec.label,
            extra_weight_bytes=head.weight_bytes if extra is None else extra.weight_bytes,
            kv_bytes_per_token=head.kv_bytes_per_token if extra is None else extra.kv_bytes_per_token,
        )  # fmt: skip
    return ModelInfo(
        name=spec.label, path="", architecture=spec.method, params=0,
        weight_bytes=0 if extra is None else extra.weight_bytes,
        kv_bytes_per_token=0 if extra is None else extra.kv_bytes_per_token,
        dtype=target.dtype, num_layers=0, num_kv_heads=0, head_dim=0,
        implementation=target.implementation, method=spec.label,
    )  # fmt: skip


def load_method(spec: MethodSpec, target: LoadedModel) -> MethodModel:
    """A method spec as a candidate next to ``target``; one this engine cannot run is a MeasureError."""
    from specmeter.engine.proposers.candidate import make_proposer

    try:
        proposer = make_proposer(spec, target)
    except (MethodSpecError, ValueError) as e:
        raise MeasureError(f"--draft {spec.label}: {e}") from None
    return MethodModel(spec, proposer, target, method_info(spec, target.info, proposer))


def tokenizer_refusal(path: Path, reason: str) -> MeasureError:
    return MeasureError(
        f"draft {path}: its tokenizer differs from the target's: {reason}; "
        "speculative decoding needs one tokenizer"
    )


def load_models(cfg: MeasureConfig) -> tuple[LoadedModel, list[LoadedModel | MethodModel]]:
    """Target and candidates on the configured device, in the order given; every problem is a MeasureError
    naming the directory or the method."""
    from specmeter.engine.loader import load_model, tokenizer_mismatch
    from specmeter.modeldir import ModelDirError

    def load(path: Path, name: str) -> LoadedModel:
        try:
            return load_model(
                path, name=name, dtype=cfg.dtype, device=cfg.device,
                implementation=cfg.implementation,  # type: ignore[arg-type]
                trust_remote_code=cfg.trust_remote_code,
            )  # fmt: skip
        except ModelDirError as e:
            raise MeasureError(str(e)) from None

    target = load(cfg.target, cfg.target.name)
    if cfg.standin is not None:
        from specmeter.engine.standin import StandInUnsupported, standin_draft

        try:
            return target, [standin_draft(target, cfg.standin)]
        except StandInUnsupported as e:
            raise MeasureError(f"--standin: {e}") from None
    labels = [m.label for m in cfg.methods]
    names = dict(zip(cfg.draft_dirs, draft_names(cfg.target, cfg.draft_dirs, labels), strict=True))
    drafts: list[LoadedModel | MethodModel] = []
    for candidate in cfg.drafts:
        if isinstance(candidate, MethodSpec):
            drafts.append(load_method(candidate, target))  # the target's own tokenizer
            continue
        path = Path(candidate)  # the config made every other candidate a Path
        d = load(path, names[path])
        reason = tokenizer_mismatch(target.tokenizer, d.tokenizer)
        if reason:
            raise tokenizer_refusal(path, reason)
        drafts.append(d)
    return target, drafts
