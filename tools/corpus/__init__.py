"""A deterministic generator of English text in two registers, for training the bundled demo models.

specmeter's demo must show a general-purpose draft failing on contract text while a draft distilled on
contract text succeeds. Nothing can be downloaded where the project is built, so it writes its own
corpus: pure Python, ``random.Random`` only, identical output for the same seed.

* ``general``: everyday narration, dialogue, how-to instructions, local news, messages
  (``general/narration`` ... ``general/messages``), and ``general/extract`` (a passage, then its main
  points repeated from it);
* ``legal``: commercial-contract clauses in stock contract phrasing (``legal/definitions``,
  ``legal/obligations``, ``legal/indemnity``, ``legal/termination``, ``legal/governing_law``,
  ``legal/confidentiality``, ``legal/liability``, ``legal/payment``, ``legal/warranties``,
  ``legal/boilerplate``), ``legal/redline`` (a clause quoted, then given as amended) and
  ``legal/review`` (a clause in two drafts, then a review that quotes it and says what changed).

The three sub-categories whose text copies its input were added later (:func:`added_categories`); they
enter the training draw in a second stage that leaves every other document as it was.

Public API: :func:`generate_documents`, :func:`write_corpus`, :func:`corpus_stats`,
:func:`write_golden_sets` (the bundled held-out golden sets), and the command line
``PYTHONPATH=tools python -m corpus``. A build tool of the repository (``make models`` runs it), not part of
the installed package: specmeter ships what it wrote (``specmeter/assets/golden``), never the generator.
See ``docs/corpus.md``.
"""

from corpus.generate import (
    DEFAULT_SEED,
    GOLDEN_SEED,
    REGISTER_NAMES,
    Document,
    Register,
    added_categories,
    categories,
    category_spec,
    generate_documents,
    iter_documents,
    training_categories,
    write_corpus,
)
from corpus.golden import (
    GOLDEN_SIZES,
    HOLDOUT_SAMPLE,
    GoldenPrompt,
    default_golden_dir,
    golden_prompts,
    held_out_violations,
    write_golden_sets,
)
from corpus.stats import CorpusStats, RegisterStats, corpus_stats, format_stats

__all__ = [
    "DEFAULT_SEED",
    "GOLDEN_SEED",
    "GOLDEN_SIZES",
    "HOLDOUT_SAMPLE",
    "REGISTER_NAMES",
    "CorpusStats",
    "Document",
    "GoldenPrompt",
    "Register",
    "RegisterStats",
    "added_categories",
    "categories",
    "category_spec",
    "corpus_stats",
    "default_golden_dir",
    "format_stats",
    "generate_documents",
    "golden_prompts",
    "held_out_violations",
    "iter_documents",
    "training_categories",
    "write_corpus",
    "write_golden_sets",
]
