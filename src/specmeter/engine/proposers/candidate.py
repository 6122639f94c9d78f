"""From a candidate's name to the proposer that runs it: ``make_proposer("ngram:min=2,max=4", target)``.

A name is a draft model directory (loaded like the target, wrapped in a ``DraftModelProposer``) or a method
spec parsed by ``specmeter.methods`` (docs/methods.md): ``ngram``, ``ngram-simple``, ``ngram-map-k``,
``suffix``, ``layers:n`` and ``eagle:head=DIR`` (an EAGLE-3 head on the native target,
``engine.proposers.eagle``) run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specmeter.engine.loader import LoadedModel, load_model
from specmeter.engine.proposers.eagle import HeadMismatch, load_head
from specmeter.engine.proposers.ngram import NgramMapKeyProposer, NgramProposer, NgramSimpleProposer
from specmeter.engine.proposers.proposer import DraftModelProposer, Proposer
from specmeter.engine.proposers.suffix import SuffixProposer
from specmeter.engine.standin import layer_draft
from specmeter.methods import DraftDir, MethodSpec, MethodSpecError, parse_candidate
from specmeter.modeldir import ModelDirError

__all__ = ["MethodNotRunnable", "make_proposer", "proposer_for_spec"]


class MethodNotRunnable(MethodSpecError):
    """A method that parses but that this engine cannot run (yet, or with this target)."""


def make_proposer(candidate: str | MethodSpec, target: LoadedModel, **load: Any) -> Proposer:
    """The proposer for ``candidate``: a method spec (text or parsed) or a draft model directory.

    ``load`` goes to ``load_model`` for a directory (dtype, device, implementation, …). Stateful methods
    (suffix decoding) learn across the requests they see: make one per run and reuse it for every request.
    """
    parsed = candidate if isinstance(candidate, MethodSpec) else parse_candidate(candidate)
    if isinstance(parsed, DraftDir):
        draft = load_model(parsed.path, **load)
        return DraftModelProposer(draft.model, draft.info.name)
    return proposer_for_spec(parsed, target)


def proposer_for_spec(spec: MethodSpec, target: LoadedModel) -> Proposer:
    """The proposer of a parsed method spec; its ``name`` is the spec's label (the run key)."""
    if spec.method == "ngram":
        return NgramProposer(spec.int_value("min"), spec.int_value("max"), name=spec.label)
    if spec.method == "ngram-simple":
        return NgramSimpleProposer(spec.int_value("n"), spec.int_value("m"), name=spec.label)
    if spec.method == "ngram-map-k":
        return NgramMapKeyProposer(spec.int_value("n"), spec.int_value("m"), name=spec.label)
    if spec.method == "suffix":
        return SuffixProposer(
            max_tree_depth=spec.int_value("depth"),
            max_cached_requests=spec.int_value("requests"),
            max_spec_factor=spec.float_value("factor"),
            max_spec_offset=spec.float_value("offset"),
            min_token_prob=spec.float_value("min_prob"),
            name=spec.label,
        )
    if spec.method == "layers":
        try:
            draft = layer_draft(target, spec.int_value("n"))
        except ValueError as e:
            raise MethodNotRunnable(str(e)) from None
        return DraftModelProposer(draft.model, spec.label)
    if spec.method == "eagle":
        try:
            return load_head(Path(spec.str_value("head")), target.model, name=spec.label)
        except (ModelDirError, HeadMismatch) as e:
            raise MethodNotRunnable(f"eagle: key 'head': {e}") from None
    raise MethodNotRunnable(f"{spec.method}: parsed, but no engine runs it yet ({spec.label})")
