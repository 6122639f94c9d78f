"""``specmeter serve``: an OpenAI- and Messages-compatible HTTP server around an engine.

``app`` (routes, checks, submission) → ``worker`` (the FIFO worker thread that owns the engine: one request at
a time or a continuous batch) → ``responses`` (OpenAI bodies and chunks) / ``messages`` (Messages events);
``prom`` exports vLLM-named metrics; ``engine`` is the protocol an engine implements (no torch) and
``local_engine`` the one implementation on specmeter's own speculative loop (the only module here that imports
torch); ``hosting`` runs an app with uvicorn in the foreground or a background thread.
"""
