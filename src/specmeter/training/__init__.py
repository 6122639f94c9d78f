"""Training small causal LMs: `specmeter train` (from a corpus) and `specmeter distill` (domain drafts)."""
