"""Can this draft serve this target? Every check ``specmeter compat`` makes, and the verdict.

Speculative decoding feeds the draft the target's token ids and the target verifies the draft's ids, so
the one hard requirement is that an id means the same token to both. Everything else degrades acceptance
or caps the gain without breaking correctness, and is a caveat: a different normalizer or pre-tokenizer
(the draft was trained on other segmentations of the same text), different special tokens, chat
template or context length, a draft that is not smaller than its target. Facts that only inform (sizes,
dtypes, KV bytes per token, architecture family) are reported as such.

Each check yields a :class:`Finding`; the verdict is the worst level found: ``compatible`` (exit 0),
``usable_with_caveats`` (1) or ``incompatible`` (2). Works on :class:`~specmeter.modeldir.ModelFacts`,
so nothing here loads weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from specmeter.exitcodes import EXIT_CANNOT_CHECK, EXIT_CAVEATS, EXIT_INCOMPATIBLE, EXIT_OK
from specmeter.methods import MethodSpec
from specmeter.modeldir import SPECIAL_ROLES, ModelDirError, ModelFacts, TokenizerFacts, read_model_config
from specmeter.modeldir.head import head_mismatch, read_head, stored_shape_problem
from specmeter.report.fmt import fmt_bytes
from specmeter.selection.tokens import (
    TokenizationCheck,
    VocabDiff,
    compare_vocab,
    describe_part,
    part_difference,
)

__all__ = ["EXIT_CODES", "LEVELS", "CompatReport", "Finding", "Level", "check_compat"]

Level = Literal["ok", "info", "caveat", "incompatible"]
LEVELS: tuple[Level, ...] = ("ok", "info", "caveat", "incompatible")
VERDICT_OF: dict[Level, str] = {
    "ok": "compatible",
    "info": "compatible",
    "caveat": "usable_with_caveats",
    "incompatible": "incompatible",
}
EXIT_CODES = {"compatible": EXIT_OK, "usable_with_caveats": EXIT_CAVEATS, "incompatible": EXIT_INCOMPATIBLE}
_LISTED = 5  # differing ids / tokens quoted in a message


@dataclass(frozen=True)
class Finding:
    level: Level
    topic: str
    message: str


@dataclass
class CompatReport:
    target: ModelFacts
    draft: ModelFacts
    findings: list[Finding]
    vocab: VocabDiff
    tokenization: TokenizationCheck | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        worst = max((LEVELS.index(f.level) for f in self.findings), default=0)
        return VERDICT_OF[LEVELS[worst]]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "kind": "compat",
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "target": model_dict(self.target),
            "draft": model_dict(self.draft),
            "findings": [{"level": f.level, "topic": f.topic, "message": f.message} for f in self.findings],
            "vocabulary": self.vocab.to_dict(),
            "prompts": None if self.tokenization is None else self.tokenization.to_dict(),
        }


def model_dict(m: ModelFacts) -> dict[str, Any]:
    w = m.weights
    return {
        "path": str(m.path),
        "architecture": m.architecture,
        "model_type": m.model_type,
        "params": w.params if w else None,
        "weight_bytes": w.bytes if w else None,
        "dtype": m.dtype,
        "dtype_bytes": dict(w.dtype_bytes) if w else None,
        "kv_bytes_per_token": m.kv_bytes_per_token,
        "num_layers": m.num_layers,
        "num_kv_heads": m.num_kv_heads,
        "head_dim": m.head_dim,
        "max_positions": m.max_positions,
        "embedding_rows": m.embedding_rows,
        "vocab_size": len(m.tokenizer.vocab),
        "tokenizer": m.tokenizer.source,
        "special_tokens": {r: {"token": t, "id": i} for r, (t, i) in m.tokenizer.special.items()},
        "chat_template": m.tokenizer.chat_template is not None,
    }


def _quote(tokens: Sequence[str]) -> str:
    return ", ".join(repr(t) for t in tokens[:_LISTED]) + (" …" if len(tokens) > _LISTED else "")


def _vocab_findings(t: ModelFacts, d: ModelFacts, diff: VocabDiff) -> list[Finding]:
    out: list[Finding] = []
    if diff.identical:
        out.append(Finding("ok", "vocabulary", f"identical id→token maps ({diff.target_size:,} entries)"))
    if diff.conflict_count:
        first = "; ".join(f"{i}: {a!r} vs {b!r}" for i, a, b in diff.conflicts[:_LISTED])
        kind = " (the same tokens under other ids)" if diff.same_token_set else ""
        out.append(
            Finding(
                "incompatible",
                "vocabulary",
                f"vocabularies differ{kind}: {diff.same:,} of {diff.target_size:,} target ids "
                f"({diff.share:.1%}) map to the same token; first differing ids {first}",
            )
        )
    if diff.target_only:
        ids = diff.target_only
        rows = d.embedding_rows
        if rows is not None and max(ids) < rows:
            out.append(
                Finding(
                    "caveat",
                    "vocabulary",
                    f"{len(ids):,} target tokens are unknown to the draft's tokenizer "
                    f"(ids {ids[0]}…{ids[-1]}); "
                    "its embedding has rows for them but it never learned them",
                )
            )
        else:
            out.append(
                Finding(
                    "incompatible",
                    "vocabulary",
                    f"{len(ids):,} target tokens are unknown to the draft (ids {ids[0]}…{ids[-1]}), beyond "
                    f"the draft's {rows if rows is not None else 'unknown'} embedding rows: "
                    "feeding them to the draft is out of range",
                )
            )
    if diff.draft_only:
        ids = diff.draft_only
        out.append(
            Finding(
                "caveat",
                "vocabulary",
                f"the draft has {len(ids):,} tokens the target lacks (ids {ids[0]}…{ids[-1]}: "
                f"{_quote([d.tokenizer.vocab[i] for i in ids])}); the target never emits them, so proposing "
                "one is a sure rejection. specmeter bench/tune/select require identical vocabularies and "
                "refuse this pair",
            )
        )
    tr, dr = t.embedding_rows, d.embedding_rows
    if tr is not None and dr is not None and tr != dr:
        out.append(
            Finding(
                "info",
                "embedding",
                f"embedding rows differ (target {tr:,}, draft {dr:,}): proposals are limited to the "
                f"first {min(tr, dr):,} ids",
            )
        )
    return out


def _special_findings(t: ModelFacts, d: ModelFacts) -> list[Finding]:
    out: list[Finding] = []
    same: list[str] = []
    for role in SPECIAL_ROLES:
        a, b = t.tokenizer.special[role], d.tokenizer.special[role]
        if a == b:
            if a[0] is not None:
                same.append(f"{role.upper()} {a[0]}={a[1]}")
            continue
        out.append(
            Finding(
                "caveat",
                "special_tokens",
                f"{role.upper()} differs: target {a[0]!r} (id {a[1]}), draft {b[0]!r} (id {b[1]})",
            )
        )
    te, de = _eos_ids(t.config), _eos_ids(d.config)
    if te != de:
        out.append(
            Finding(
                "caveat",
                "special_tokens",
                f"config.json eos_token_id differs (target {sorted(te)}, draft {sorted(de)}): "
                "the draft may end its proposals where the target goes on, or the other way round",
            )
        )
    if not out:
        out.append(Finding("ok", "special_tokens", ", ".join(same) + " identical" if same else "none set"))
    added_t, added_d = t.tokenizer.added, d.tokenizer.added
    extra = sorted(set(added_d) - set(added_t))
    missing = sorted(set(added_t) - set(added_d))
    flags = sorted(i for i in set(added_t) & set(added_d) if added_t[i] != added_d[i])
    differences = (
        (f"the draft adds {len(extra)} token(s) the target lacks", [f"{added_d[i][0]} ({i})" for i in extra]),
        (
            f"the target adds {len(missing)} token(s) the draft lacks",
            [f"{added_t[i][0]} ({i})" for i in missing],
        ),
        (
            "added tokens differ in content or special flag",
            [f"{i}: {added_t[i]} vs {added_d[i]}" for i in flags],
        ),
    )
    out += [
        Finding("caveat", "added_tokens", f"{what}: {_quote(items)}") for what, items in differences if items
    ]
    if not (extra or missing or flags):
        out.append(Finding("ok", "added_tokens", f"{len(added_t)} added token(s), identical"))
    return out


def _eos_ids(config: dict[str, Any]) -> set[int]:
    value = config.get("eos_token_id")
    values = value if isinstance(value, list) else [value]
    return {v for v in values if isinstance(v, int) and not isinstance(v, bool)}


_PART_CONSEQUENCE = {
    "normalizer": ("caveat", "the same text can map to other ids for the draft than it was trained on"),
    "pre_tokenizer": ("caveat", "text is split differently before the vocabulary is applied"),
    "model": ("caveat", "the same text segments into other tokens (merges or model options differ)"),
    "post_processor": ("caveat", "special tokens added around a text (BOS, EOS) differ"),
    "decoder": ("info", "only turning ids back into text differs; the ids the models exchange do not"),
}


def _pipeline_findings(t: TokenizerFacts, d: TokenizerFacts) -> list[Finding]:
    out: list[Finding] = []
    for part, (level, consequence) in _PART_CONSEQUENCE.items():
        a, b = t.parts.get(part), d.parts.get(part)
        difference = part_difference(a, b)
        if difference is None:
            out.append(Finding("ok", part, f"identical ({describe_part(a)})"))
        else:
            out.append(
                Finding(
                    level,  # type: ignore[arg-type]  # the table holds Level values
                    part,
                    f"differs ({difference}): {consequence}",
                )
            )
    a, b = t.chat_template, d.chat_template
    if a == b:
        out.append(Finding("ok", "chat_template", "identical" if a is not None else "neither has one"))
    else:
        which = (
            "only the target has one" if b is None else "only the draft has one" if a is None else "differ"
        )
        out.append(
            Finding(
                "caveat",
                "chat_template",
                f"chat templates {which}: chat prompts are framed differently from what the draft "
                "was tuned on",
            )
        )
    return out


def _model_findings(t: ModelFacts, d: ModelFacts) -> list[Finding]:
    out: list[Finding] = []
    if t.model_type == d.model_type and t.architecture == d.architecture:
        out.append(Finding("ok", "architecture", f"both {t.architecture} ({t.model_type})"))
    else:
        out.append(
            Finding(
                "info",
                "architecture",
                f"target {t.architecture} ({t.model_type}), draft {d.architecture} ({d.model_type}): "
                "families may differ as long as the vocabulary is shared",
            )
        )
    tp, dp = t.max_positions, d.max_positions
    if tp is None or dp is None:
        out.append(Finding("info", "max_positions", f"unknown (target {tp}, draft {dp})"))
    elif dp < tp:
        out.append(
            Finding(
                "caveat",
                "max_positions",
                f"the draft handles {dp:,} positions, the target {tp:,}: past {dp:,} tokens of context "
                "the draft cannot propose",
            )
        )
    else:
        out.append(Finding("ok", "max_positions", f"target {tp:,}, draft {dp:,}"))
    tw, dw = t.weights, d.weights
    if tw is None or dw is None:
        missing = " and ".join(n for n, w in (("target", tw), ("draft", dw)) if w is None)
        out.append(Finding("info", "size", f"no *.safetensors for the {missing}: parameter count unknown"))
    else:
        ratio = dw.params / tw.params if tw.params else float("inf")
        text = f"draft {_count(dw.params)} vs target {_count(tw.params)} parameters ({ratio:.1%})"
        if dw.params >= tw.params:
            out.append(Finding("caveat", "size", f"{text}: a draft this large cannot make decoding faster"))
        else:
            out.append(Finding("ok", "size", text))
        out.append(
            Finding(
                "info",
                "weights",
                f"target {t.dtype}, {fmt_bytes(tw.bytes)}; draft {d.dtype}, "
                f"{fmt_bytes(dw.bytes)} extra to hold",
            )
        )
    tk, dk = t.kv_bytes_per_token, d.kv_bytes_per_token
    out.append(
        Finding(
            "info",
            "kv_cache",
            f"KV bytes/token at the stored dtype: target {fmt_bytes(tk)}, "
            f"draft {fmt_bytes(dk)} extra per token of context",
        )
    )
    return out


def _count(n: int) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def check_compat(
    target: ModelFacts, draft: ModelFacts, tokenization: TokenizationCheck | None = None
) -> CompatReport:
    """Run every check; ``tokenization`` (from ``tokens.check_tokenization``) adds the workload check."""
    diff = compare_vocab(target.tokenizer.vocab, draft.tokenizer.vocab)
    findings = _vocab_findings(target, draft, diff)
    findings += _special_findings(target, draft)
    findings += _pipeline_findings(target.tokenizer, draft.tokenizer)
    findings += _model_findings(target, draft)
    if tokenization is not None:
        level: Level = "ok" if tokenization.identical == tokenization.texts else "caveat"
        findings.append(Finding(level, "prompts", tokenization.summary()))
    return CompatReport(target, draft, findings, diff, tokenization)


# ------------------------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class MethodVerdict:
    """What the commands would do with a method spec on this target: ``exit_code`` 0 (it runs), 2 (no
    command can run it here) or 3 (a file it needs cannot be read), and one line saying why."""

    exit_code: int
    line: str


def check_method(target: Path, spec: MethodSpec) -> MethodVerdict:
    """A method spec against the target directory, as the commands would load it, from config.json and
    safetensors headers only: ``layers:n`` needs n below the target's layers; ``eagle:head=DIR`` a head that
    reads (config and weights' headers), whose tensors have its config's shapes and whose hidden size,
    vocabulary and layers read are the target's. A model-free method proposes the target's own tokens."""
    label = spec.label
    if spec.method not in ("layers", "eagle"):
        return MethodVerdict(
            EXIT_OK,
            f"{label}: a method, not a draft model: it proposes the target's own tokens (its tokenizer), so "
            "there is no tokenizer to compare; compatible.",
        )
    try:
        config = read_model_config(target)
    except ModelDirError as e:
        return MethodVerdict(EXIT_CANNOT_CHECK, str(e))
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    layers, hidden, vocab = (text.get(k) for k in ("num_hidden_layers", "hidden_size", "vocab_size"))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (layers, hidden, vocab)):
        return MethodVerdict(
            EXIT_CANNOT_CHECK,
            f"{target / 'config.json'}: num_hidden_layers, hidden_size or vocab_size missing or not a "
            "positive integer",
        )
    assert isinstance(layers, int) and isinstance(hidden, int) and isinstance(vocab, int)
    if spec.method == "layers":
        n = spec.int_value("n")
        if n >= layers:
            return MethodVerdict(
                EXIT_INCOMPATIBLE,
                f"{label}: the target has {layers} layers; n must be in 1 … {layers - 1}: incompatible.",
            )
        return MethodVerdict(EXIT_OK, f"{label}: the target's first {n} of {layers} layers; compatible.")
    try:
        facts = read_head(Path(str(spec.values["head"])))
        problem = stored_shape_problem(facts) or head_mismatch(
            facts, name=target.name, layers=layers, hidden=hidden, vocab=vocab
        )
    except ModelDirError as e:
        return MethodVerdict(EXIT_CANNOT_CHECK, str(e))
    if problem is not None:
        return MethodVerdict(EXIT_INCOMPATIBLE, f"{problem}: incompatible.")
    return MethodVerdict(
        EXIT_OK,
        f"{label}: an EAGLE-3 head of hidden size {facts.hidden} reading target layers "
        f"{list(facts.aux_layers)}; compatible.",
    )
