"""Serving: the OpenAI-compatible ``serve`` server, a streaming client, and the ``load`` generator.

``app``/``worker``/``prom``/``responses``/``openai_schema``/``sse`` make up the server (only
``local_engine`` imports torch); ``client`` measures one streamed request from outside as a user feels it.
The load path, in the order a request's data flows: ``loadconfig`` (what to run) → ``arrivals`` (when to
send) → ``loadrequests`` (what to send) → ``loadloop`` (sending, outcomes as they end; ``loadworkers``:
the same in N processes) → ``loadreadings`` (the server's own counters around it) → ``loadlevel`` (one
level, endpoints interleaved) → ``loadresult`` (the level's summary); ``loadrun`` runs a whole ``load``
and ``loadview`` renders it.
"""
