"""Running an ASGI app with uvicorn: in the foreground (the ``serve`` command) or in a background thread.

The background form exists for tests, benchmarks and ``load``'s own checks: it binds a free port on
loopback, waits until the socket listens, and shuts down cleanly (lifespan included) on ``stop()`` or on
leaving the ``with`` block.

Both run uvicorn's h11 protocol with one addition: a request's head must arrive within ``head_timeout_s``
(default :data:`HEAD_TIMEOUT_S`) of the connection opening or of the previous response, or the server
answers 408 and closes the connection. uvicorn (0.55) arms its only timer, ``timeout_keep_alive``, after a
response and cancels it on any byte, so a client that sends half a head — or trickles it — held its
connection open forever (issue 29). The body is bounded by the app (``ServeConfig.body_timeout_s``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from types import TracebackType
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEAD_TIMEOUT_S", "ServerThread", "head_timeout_protocol", "run_foreground"]

HEAD_TIMEOUT_S = 10.0  # seconds a request's head may take to arrive (headers are at most h11's 16 KiB)
_TIMEOUT_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class _HeadTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head (see the module's docstring)."""

    head_timeout_s = HEAD_TIMEOUT_S
    _head_timer: asyncio.TimerHandle | None = None

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        # Only a head still incomplete: a request being served is the app's business.
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.info(
                "%s: no complete request head in %g s: 408, closed", self.client, self.head_timeout_s
            )
            self.transport.write(_TIMEOUT_408)
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._cancel_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE:  # waiting for the next request's head
            self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)


def head_timeout_protocol(seconds: float = HEAD_TIMEOUT_S) -> type[H11Protocol]:
    """uvicorn's ``http=`` protocol class whose request heads must arrive within ``seconds``."""
    if seconds <= 0:
        raise ValueError(f"the head timeout must be > 0 seconds, got {seconds}")
    return type("HeadTimeoutH11", (_HeadTimeoutH11,), {"head_timeout_s": seconds})


class ServerThread:
    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_level: str = "warning",
        graceful_timeout: int | None = 5,
        head_timeout_s: float = HEAD_TIMEOUT_S,
    ) -> None:
        self.host = host
        # A bounded graceful shutdown: a stream whose client vanished must not keep a test waiting forever.
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            lifespan="on",
            access_log=False,
            timeout_graceful_shutdown=graceful_timeout,
            http=head_timeout_protocol(head_timeout_s),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="uvicorn", daemon=True)
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the server on {self.host}:{self.port} failed to start")
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not start in time")
            time.sleep(0.01)
        sockets = [s for server in self._server.servers for s in server.sockets]
        self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def run_foreground(
    app: Any, host: str, port: int, *, log_level: str = "info", head_timeout_s: float = HEAD_TIMEOUT_S
) -> None:
    """Serve until Ctrl-C (uvicorn handles the signal and runs the lifespan shutdown)."""
    uvicorn.run(
        app, host=host, port=port, log_level=log_level, lifespan="on", access_log=False,
        http=head_timeout_protocol(head_timeout_s),
    )  # fmt: skip
