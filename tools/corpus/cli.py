"""``python -m corpus``: write a training corpus and/or the golden sets.

A build tool, not part of the installed package: run it from the repository root with ``tools`` on the
import path (``make models`` does). Examples::

    PYTHONPATH=tools python -m corpus --out corpus.jsonl --general 60000 --legal 60000 --seed 0
    PYTHONPATH=tools python -m corpus --golden src/specmeter/assets/golden

The corpus run prints its statistics (size, vocabulary, per-register entropies). ``--golden`` writes
golden sets held out from the corpus the same arguments describe: no prompt is a prefix of any of the
first max(--general, --legal) documents per register with --seed. With the defaults (60,000 documents
per register, seed 0) that reproduces the bundled files.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from corpus.generate import DEFAULT_SEED, GOLDEN_SEED, category_register, write_corpus
from corpus.golden import HOLDOUT_SAMPLE, write_golden_sets
from corpus.stats import format_stats

#: Recommended training size per register (what docs/corpus.md reports figures for); the bundled
#: golden sets are held out from exactly this many documents per register.
DEFAULT_DOCUMENTS = HOLDOUT_SAMPLE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m corpus",
        description="Generate specmeter's synthetic English corpus (general and legal registers).",
    )
    parser.add_argument("--out", help="corpus JSONL to write ({text, register, category} per line)")
    parser.add_argument(
        "--general", type=int, default=DEFAULT_DOCUMENTS, help="general documents (%(default)s)"
    )
    parser.add_argument("--legal", type=int, default=DEFAULT_DOCUMENTS, help="legal documents (%(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="training seed (%(default)s)")
    parser.add_argument(
        "--plain-quotes",
        action="store_true",
        help="quote redlines' clauses without the deal's particulars (the corpus the bundled target first "
        "trained on, docs/corpus.md)",
    )
    parser.add_argument(
        "--extra",
        metavar="CATEGORY=N",
        help="add N documents of one sub-category, spread among the others (e.g. legal/redline=40000)",
    )
    parser.add_argument(
        "--golden",
        metavar="DIR",
        help=f"also write general.jsonl and legal.jsonl golden sets to DIR (seed {GOLDEN_SEED}), held "
        "out from the training corpus these arguments describe",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.out is None and args.golden is None:
        parser.error("nothing to do: give --out and/or --golden")
    if args.general < 0 or args.legal < 0:
        parser.error("--general and --legal must be >= 0")
    if args.seed == GOLDEN_SEED:
        parser.error(f"seed {GOLDEN_SEED} is reserved for the golden sets")
    extra = None
    if args.extra is not None:
        category, _, count = args.extra.partition("=")
        if not count.isdigit():
            parser.error(f"--extra: {args.extra!r} is not CATEGORY=N (e.g. legal/redline=40000)")
        try:
            category_register(category)
        except ValueError as e:
            parser.error(f"--extra: {e}")
        extra = (category, int(count))
    if args.out is not None:
        start = time.perf_counter()
        stats = write_corpus(
            args.out, args.general, args.legal, args.seed, particulars=not args.plain_quotes, extra=extra
        )
        print(f"wrote {args.out} in {time.perf_counter() - start:.1f} s")
        print(format_stats(stats))
    if args.golden is not None:
        sample = max(args.general, args.legal)
        written = write_golden_sets(args.golden, train_seed=args.seed, holdout_sample=sample)
        for register, path in written.items():
            print(f"wrote {path} ({register})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
