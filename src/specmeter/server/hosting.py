"""Running an ASGI app with uvicorn: in the foreground (the ``serve`` command) or in a background thread.

The background form exists for tests, benchmarks and ``load``'s own checks: it binds a free port on
loopback, waits until the socket listens, and shuts down cleanly (lifespan included) on ``stop()`` or on
leaving the ``with`` block.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

__all__ = ["ServerThread", "run_foreground"]


class ServerThread:
    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_level: str = "warning",
        graceful_timeout: int | None = 5,
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


def run_foreground(app: Any, host: str, port: int, *, log_level: str = "info") -> None:
    """Serve until Ctrl-C (uvicorn handles the signal and runs the lifespan shutdown)."""
    uvicorn.run(app, host=host, port=port, log_level=log_level, lifespan="on", access_log=False)
