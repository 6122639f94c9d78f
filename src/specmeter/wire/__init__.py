"""The wire formats that the server and the load client share: Server-Sent Events (``sse``), the OpenAI
completions/chat request and response schemas (``openai``) and Anthropic's Messages API (``messages``).

No I/O and no torch: plain parsing, validation and event construction, so ``server`` (which writes these
formats) and ``load`` (which reads them) depend on one definition and never on each other.
"""
