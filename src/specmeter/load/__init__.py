"""``specmeter load``: load-test any OpenAI- or Messages-compatible server, level by level.

In the order a request's data flows: ``config`` (what to run) → ``arrivals`` (when to send) → ``requests``
(what to send) → ``loop`` (sending, outcomes as they end; ``workers``: the same in N processes) → ``client``
(one streamed request as a user feels it; ``messages_stream`` for the Messages API) → ``readings`` (the
server's own counters around it) → ``level`` (one level, endpoints interleaved) → ``result`` (the level's
summary); ``run`` runs a whole ``load`` and ``view`` renders it. ``trace`` reads ``--trace`` files;
``limits`` holds what one client machine can hold (levels, rates, counts, traces), which ``config`` checks.
"""
