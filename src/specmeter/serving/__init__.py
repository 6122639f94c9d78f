"""Serving: the OpenAI-compatible ``serve`` server, a streaming client, and the ``load`` generator.

``app``/``worker``/``prom``/``responses``/``openai_schema``/``sse`` make up the server (only
``local_engine`` imports torch); ``client`` measures one streamed request from outside as a user feels it,
``loadgen`` drives many of them (fixed concurrency or request rate, sweeps, an interleaved baseline) and
``loadresult`` turns them into the shared result files.
"""
