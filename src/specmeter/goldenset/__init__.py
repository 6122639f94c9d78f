"""Golden sets from production logs (``specmeter golden``): read, categorise, dedupe, sample, scrub, write.

The field report's method starts with "100–500 prompts close to real user input"; teams have request
logs, not golden sets. This package turns OpenAI request logs, ShareGPT conversations, CSV exports,
Spec-Bench questions and specmeter's own logs into a golden set in specmeter's format, every line keeping
its provenance (``source: file:line``). Nothing here imports torch.

(Not to be confused with the repository's build tool ``tools/corpus``, which generates the bundled demo's
golden sets from the synthetic corpus.)
"""

from specmeter.goldenset.build import GoldenConfig, GoldenError, GoldenReport, build_golden, golden_line
from specmeter.goldenset.categorize import UNCATEGORISED, CategoryRules, RulesError, categorize, load_rules
from specmeter.goldenset.dedupe import dedupe, jaccard, shingles
from specmeter.goldenset.formats import FORMATS, LogPrompt, Problem, read_prompts
from specmeter.goldenset.sampling import quotas, stratified_sample
from specmeter.goldenset.scrub import Scrubber

__all__ = [
    "FORMATS",
    "UNCATEGORISED",
    "CategoryRules",
    "GoldenConfig",
    "GoldenError",
    "GoldenReport",
    "LogPrompt",
    "Problem",
    "RulesError",
    "Scrubber",
    "build_golden",
    "categorize",
    "dedupe",
    "golden_line",
    "jaccard",
    "load_rules",
    "quotas",
    "read_prompts",
    "shingles",
    "stratified_sample",
]
