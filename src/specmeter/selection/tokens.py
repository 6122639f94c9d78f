"""Token-level comparisons for ``compat``: id→token maps, tokenizer pipeline parts, a workload re-tokenized.

Ids are what target and draft exchange, so the vocabulary check is on the id→token map, and the workload
check compares the ids both tokenizers give the same texts. It also compares the token *strings*, which
tells a permuted vocabulary (same segmentation, other ids) from a different normalizer or merges (other
segmentation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokenizers import Tokenizer

from specmeter.workloads import Workload, plain_chat_text

__all__ = [
    "TokenizationCheck",
    "VocabDiff",
    "check_tokenization",
    "compare_vocab",
    "describe_part",
    "part_difference",
]

_KEPT = 20  # differing ids kept for the JSON


@dataclass(frozen=True)
class VocabDiff:
    target_size: int
    draft_size: int
    same: int  # target ids whose draft entry is the same token
    conflicts: list[tuple[int, str, str]]  # (id, target token, draft token), the first few
    conflict_count: int
    target_only: list[int]  # ids only the target defines, sorted
    draft_only: list[int]  # ids only the draft defines, sorted
    same_token_set: bool  # both define the same set of token strings

    @property
    def identical(self) -> bool:
        return self.conflict_count == 0 and not self.target_only and not self.draft_only

    @property
    def share(self) -> float:
        """Share of target ids with an identical entry in the draft."""
        return self.same / self.target_size if self.target_size else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "identical": self.identical,
            "target_size": self.target_size,
            "draft_size": self.draft_size,
            "same_ids": self.same,
            "share_identical": self.share,
            "differing_ids": self.conflict_count,
            "first_differing": [{"id": i, "target": a, "draft": b} for i, a, b in self.conflicts],
            "target_only_ids": len(self.target_only),
            "draft_only_ids": len(self.draft_only),
            "same_tokens_other_ids": self.same_token_set and self.conflict_count > 0,
        }


def compare_vocab(target: Mapping[int, str], draft: Mapping[int, str]) -> VocabDiff:
    """Compare two id→token maps id by id."""
    conflicts: list[tuple[int, str, str]] = []
    same = conflict_count = 0
    for i in sorted(target):
        other = draft.get(i)
        if other is None:
            continue
        if other == target[i]:
            same += 1
        else:
            conflict_count += 1
            if len(conflicts) < _KEPT:
                conflicts.append((i, target[i], other))
    return VocabDiff(
        target_size=len(target),
        draft_size=len(draft),
        same=same,
        conflicts=conflicts,
        conflict_count=conflict_count,
        target_only=sorted(set(target) - set(draft)),
        draft_only=sorted(set(draft) - set(target)),
        same_token_set=set(target.values()) == set(draft.values()),
    )


def describe_part(part: Any) -> str:
    """A short name for a tokenizer.json component: ``none``, ``Lowercase``, ``Sequence[NFC, Lowercase]``."""
    if part is None:
        return "none"
    if not isinstance(part, Mapping):
        return type(part).__name__
    kind = str(part.get("type", "?"))
    for key in ("normalizers", "pretokenizers", "processors", "decoders"):
        children = part.get(key)
        if isinstance(children, list):
            return f"{kind}[{', '.join(describe_part(c) for c in children)}]"
    return kind


def _canonical(value: Any) -> Any:
    # Converters write an unset string option as null or as "" (continuing_subword_prefix, ...): same thing.
    if isinstance(value, Mapping):
        return {k: _canonical(v) for k, v in value.items() if v not in (None, "")}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def part_difference(target: Any, draft: Any) -> str | None:
    """None when two tokenizer.json components are equivalent, else what differs in a few words."""
    a, b = _canonical(target), _canonical(draft)
    if a == b:
        return None
    if isinstance(a, dict) and isinstance(b, dict) and a.get("type") == b.get("type"):
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        return f"{describe_part(target)} in both, differing in {', '.join(keys)}"
    return f"target {describe_part(target)}, draft {describe_part(draft)}"


@dataclass(frozen=True)
class TokenizationCheck:
    """The workload's texts tokenized by both tokenizers (no special tokens added)."""

    path: str
    texts: int
    identical: int  # same ids
    same_segmentation: int  # same token strings (ids may differ)
    first_difference: dict[str, Any] | None

    @property
    def share(self) -> float:
        return self.identical / self.texts if self.texts else 1.0

    def summary(self) -> str:
        line = f"{self.identical} of {self.texts} workload texts ({self.share:.0%}) tokenize to identical ids"
        if self.same_segmentation != self.identical:
            line += f", {self.same_segmentation} to the same token strings"
        fd = self.first_difference
        if fd is not None:
            line += (
                f"; first difference: prompt {fd['id']!r} at token {fd['position']}: "
                f"target {' '.join(fd['target'])} vs draft {' '.join(fd['draft'])}"
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "texts": self.texts,
            "identical": self.identical,
            "share_identical": self.share,
            "same_segmentation": self.same_segmentation,
            "first_difference": self.first_difference,
        }


def check_tokenization(workload: Workload, target: Tokenizer, draft: Tokenizer) -> TokenizationCheck:
    """Re-tokenize every prompt with both tokenizers.

    Chat prompts are compared in their template-free rendering (``role: content`` lines): chat templates
    are compared on their own, and this check is about the tokenizers. Special tokens are not added for
    the same reason (the post-processor is its own finding).
    """
    texts = [p.text if p.text is not None else plain_chat_text(p.messages or ()) for p in workload.prompts]
    a = target.encode_batch(texts, add_special_tokens=False)
    b = draft.encode_batch(texts, add_special_tokens=False)
    identical = same_seg = 0
    first: dict[str, Any] | None = None
    for prompt, ea, eb in zip(workload.prompts, a, b, strict=True):
        identical += ea.ids == eb.ids
        same_seg += ea.tokens == eb.tokens
        if first is None and ea.ids != eb.ids:
            pos = next(
                (i for i, (x, y) in enumerate(zip(ea.ids, eb.ids, strict=False)) if x != y),
                min(len(ea.ids), len(eb.ids)),
            )
            first = {
                "id": prompt.id,
                "line": prompt.line,
                "position": pos,
                "target": [
                    f"{t}={i}" for t, i in zip(ea.tokens[pos : pos + 3], ea.ids[pos : pos + 3], strict=True)
                ],
                "draft": [
                    f"{t}={i}" for t, i in zip(eb.tokens[pos : pos + 3], eb.ids[pos : pos + 3], strict=True)
                ],
            }
    return TokenizationCheck(str(workload.path), len(texts), identical, same_seg, first)
