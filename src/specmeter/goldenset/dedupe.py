"""Exact and near-duplicate removal: normalised-text hashing, then MinHash + LSH over character shingles.

A golden set full of one template ("Summarise this contract: …" × 400) measures that template, not the
traffic, so duplicates go before sampling. Both passes keep the *first* occurrence (file order) and drop a
later prompt when it duplicates a prompt already kept.

Normalisation (both passes): Unicode NFKC, case-folded, runs of whitespace collapsed to one space, ends
stripped.

- **Exact**: equal normalised text.
- **Near**: Jaccard similarity J(A, B) = |A ∩ B| / |A ∪ B| of the sets of character 5-grams ("shingles")
  of the normalised text is at least ``threshold`` (default 0.8). Characters rather than words, so text
  without spaces (Japanese, Chinese) is compared as well as English. A prompt shorter than 5 characters is
  one shingle.

  Comparing every pair is O(n²), so candidates come from MinHash with locality-sensitive hashing (Broder
  1997; Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3): 128 hash functions
  h_i(x) = (a_i·x + b_i) mod (2³¹ − 1) over the shingles' 31-bit hashes, split into 32 bands of 4 rows. Two
  prompts become candidates when all 4 minima of some band agree, which happens with probability
  1 − (1 − J⁴)³²: 0.99999995 at J = 0.8, 0.87 at J = 0.5, 0.03 at J = 0.2. Every candidate pair is then
  checked with the *exact* Jaccard of the two shingle sets, computed on the shingles themselves (each
  packed without loss into 64 or 128 bits: :class:`Shingles`), never on their hashes, so nothing below
  the threshold is ever dropped; a pair at or above 0.8 escapes detection with probability below 10⁻⁷
  (higher thresholds: smaller still). The hash functions come from a fixed seed, so results are reproducible.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BANDS",
    "PERMUTATIONS",
    "SHINGLE",
    "DedupeResult",
    "MinHasher",
    "Shingles",
    "dedupe",
    "jaccard",
    "normalise",
    "shingles",
]

SHINGLE = 5
PERMUTATIONS = 128
BANDS = 32
_ROWS = PERMUTATIONS // BANDS
_PRIME = (1 << 31) - 1  # Mersenne prime; a·x < 2^62 for a, x < 2^31, so uint64 arithmetic never overflows
_WHITESPACE = re.compile(r"\s+")
_CHUNK = 4096


def normalise(text: str) -> str:
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _code_points(norm: str) -> NDArray[np.uint64]:
    # 'surrogatepass': a lone surrogate (U+D800..U+DFFF, which a JSON "\ud800" escape produces) is one code
    # point like any other, not an encoding error.
    return np.frombuffer(norm.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)


def _fmix64(h: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """MurmurHash3's 64-bit finaliser (a bijection on 64 bits)."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


@dataclass(frozen=True, eq=False)
class Shingles:
    """A text's set of distinct character shingles: exact keys for the Jaccard check, hashes for MinHash.

    Every shingle is encoded without loss, so two keys are equal exactly when the shingles are equal and
    :func:`jaccard` is the exact Jaccard of the shingle sets (issue 28: a hashed check let distinct
    shingles collide and dropped a pair at J = 0.7953 as 0.8007).

    - ``narrow``: shingles whose code points all fit ``64 // size`` bits (12 bits for 5-grams: U+0000..U+0FFF,
      i.e. Latin, Greek, Cyrillic, Hebrew, Arabic, Indic scripts...), packed into one uint64; sorted, unique.
    - ``wide``: the others (CJK, emoji, lone surrogates...), the code points at 21 bits each packed into 16
      bytes; sorted, unique. Slower to intersect, hence the split.
    - ``hashes``: a 31-bit hash of each shingle, the input of :class:`MinHasher`. Distinct shingles may
      collide there, which only blurs the candidate search, never the decision.
    """

    narrow: NDArray[np.uint64]
    wide: NDArray[np.void]
    hashes: NDArray[np.uint64]

    def __len__(self) -> int:
        return int(self.narrow.size + self.wide.size)


def _pack(columns: NDArray[np.uint64], bits: int) -> NDArray[np.uint64]:
    out = np.zeros(columns.shape[0], dtype=np.uint64)
    for j in range(columns.shape[1]):
        out = (out << np.uint64(bits)) | columns[:, j]
    return out


def shingles(text: str, size: int = SHINGLE) -> Shingles:
    """The distinct character ``size``-grams (1 ≤ size ≤ 6) of the normalised text."""
    if not 1 <= size <= 6:
        raise ValueError("shingle size must be 1..6 (6 × 21 bits fit a 128-bit key)")
    codes = _code_points(normalise(text))
    if codes.size == 0:
        return Shingles(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype="V16"), np.zeros(0, dtype=np.uint64))
    if codes.size < size:
        codes = np.concatenate([codes, np.zeros(size - codes.size, dtype=np.uint64)])
    windows = np.lib.stride_tricks.sliding_window_view(codes, size)
    bits = min(64 // size, 21)  # code points are < 2^21
    fits = windows.max(axis=1) < np.uint64(1 << bits)
    narrow = np.unique(_pack(windows[fits], bits))
    wide_windows = windows[~fits]
    if wide_windows.shape[0]:
        cut = min(size, 3)  # three 21-bit code points per 64-bit half
        packed = np.empty((wide_windows.shape[0], 2), dtype=">u8")
        packed[:, 0] = _pack(wide_windows[:, :cut], 21)
        packed[:, 1] = _pack(wide_windows[:, cut:], 21)
        wide = np.unique(packed.view("V16").ravel())
        halves = wide.view(">u8").reshape(-1, 2).astype(np.uint64)
        mixed = np.concatenate([_fmix64(narrow), _fmix64(_fmix64(halves[:, 0]) ^ halves[:, 1])])
    else:
        wide = np.zeros(0, dtype="V16")
        mixed = _fmix64(narrow)
    return Shingles(narrow, wide, (mixed >> np.uint64(33)) % np.uint64(_PRIME))


def jaccard(a: Shingles, b: Shingles) -> float:
    """Exact Jaccard similarity of two shingle sets (1.0 for two empty sets)."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    inter = np.intersect1d(a.narrow, b.narrow, assume_unique=True).size
    if a.wide.size and b.wide.size:
        inter += np.intersect1d(a.wide, b.wide, assume_unique=True).size
    return inter / (len(a) + len(b) - inter)


class MinHasher:
    def __init__(self, permutations: int = PERMUTATIONS, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        self.a = rng.integers(1, _PRIME, size=permutations, dtype=np.uint64)
        self.b = rng.integers(0, _PRIME, size=permutations, dtype=np.uint64)

    def signature(self, sh: Shingles) -> NDArray[np.uint64]:
        shingle_hashes = sh.hashes
        if shingle_hashes.size == 0:
            return np.full(self.a.size, _PRIME, dtype=np.uint64)
        out = np.full(self.a.size, _PRIME, dtype=np.uint64)
        for start in range(0, shingle_hashes.size, _CHUNK):  # bounded memory for book-length prompts
            x = shingle_hashes[None, start : start + _CHUNK]
            values = (self.a[:, None] * x + self.b[:, None]) % np.uint64(_PRIME)
            out = np.minimum(out, values.min(axis=1))
        return out


@dataclass
class DedupeResult:
    kept: list[int] = field(default_factory=list)  # indices into the input, in input order
    exact: dict[int, int] = field(default_factory=dict)  # dropped index → index of the kept original
    near: dict[int, tuple[int, float]] = field(default_factory=dict)  # dropped → (kept original, Jaccard)


def dedupe(
    texts: Sequence[str],
    *,
    exact: bool = True,
    near_threshold: float | None = 0.8,
    near_texts: Sequence[str] | None = None,
) -> DedupeResult:
    """Indices to keep (first occurrences), and what each dropped text duplicated.

    ``near_texts`` (default ``texts``) are what the near pass compares, index for index: ``golden`` passes
    the prompts without their system messages.
    """
    near_texts = texts if near_texts is None else near_texts
    if len(near_texts) != len(texts):
        raise ValueError("near_texts must match texts one to one")
    if near_threshold is not None and not 0.0 < near_threshold <= 1.0:
        raise ValueError("near_threshold must be in (0, 1]")
    result = DedupeResult()
    seen: dict[bytes, int] = {}
    hasher = MinHasher() if near_threshold is not None else None
    buckets: list[dict[bytes, list[int]]] = [{} for _ in range(BANDS)]
    kept_shingles: dict[int, Shingles] = {}
    for i, text in enumerate(texts):
        if exact:
            key = hashlib.blake2b(normalise(text).encode("utf-8", "surrogatepass"), digest_size=16).digest()
            if key in seen:
                result.exact[i] = seen[key]
                continue
            seen[key] = i
        if hasher is not None and near_threshold is not None:
            sh = shingles(near_texts[i])
            sig = hasher.signature(sh)
            bands = [sig[b * _ROWS : (b + 1) * _ROWS].tobytes() for b in range(BANDS)]
            best: tuple[int, float] | None = None
            checked: set[int] = set()
            for b, band in enumerate(bands):
                for j in buckets[b].get(band, ()):
                    if j in checked:
                        continue
                    checked.add(j)
                    similarity = jaccard(sh, kept_shingles[j])
                    if similarity >= near_threshold and (best is None or similarity > best[1]):
                        best = (j, similarity)
            if best is not None:
                result.near[i] = best
                continue
            kept_shingles[i] = sh
            for b, band in enumerate(bands):
                buckets[b].setdefault(band, []).append(i)
        result.kept.append(i)
    return result
