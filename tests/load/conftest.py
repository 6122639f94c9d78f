"""Fixtures of the load tests: a fake OpenAI server and one torch thread (``serving_fixtures``)."""

from serving_fixtures import fake, one_thread

__all__ = ["fake", "one_thread"]
