"""A lean HTTP/1.1 client for streamed responses, on asyncio Protocols: bytes stamped when they arrive.

Why not httpx here: a chunk that reaches the socket passes through anyio's stream, httpcore's connection
and h11's parser, httpx's response and its byte iterators before ``load`` could take its time — about
100 µs of Python per chunk, one stream after another; with 64 streams whose chunks land together, the last
one is stamped milliseconds late (docs/serving.md, "Benchmark"). Here ``Protocol.data_received`` takes
``time.perf_counter()`` first, before any parsing, and hands the bytes with their stamp to the reader
*synchronously* in the same callback (no task switch per chunk): a chunk's stamp waits only for the socket
reads the event loop serves before it in the same turn, a few microseconds each.

What it speaks: HTTP/1.1 over plain TCP (``http://``; ``load.client`` keeps httpx for ``https://``, URLs
with credentials and proxied ones), one request at a time per connection, keep-alive connections pooled per
(host, port) with a cap and a FIFO wait when it is reached (httpx's ``Limits(max_connections)`` with no
pool timeout); response bodies framed by ``Transfer-Encoding: chunked``, ``Content-Length`` or the
connection's end, decoded from ``gzip``/``deflate`` (the encodings it asks for; an unknown one passes
through as httpx's does). Failures are exceptions that say what httpx would have: ``ConnectFailed``,
``ConnectTimedOut``, ``WriteTimedOut``, ``Stalled`` (no byte for the read timeout), ``Disconnected``
(httpx's ``RemoteProtocolError`` wording), ``ReadFailed`` (a reset: httpx's ``ReadError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import urllib.request
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from time import perf_counter
from typing import Protocol
from urllib.parse import urlsplit

__all__ = [
    "ConnectFailed", "ConnectTimedOut", "Disconnected", "Exchange", "HttpError", "Pool", "ReadFailed",
    "Stalled", "Target", "WriteTimedOut", "target",
]  # fmt: skip

READ_BUFFER = 256 << 10  # bytes one socket read may take (asyncio's own read size)
PARSE_SLICE = 8  # reads parsed between two polls of the sockets (Pool.queue)
MAX_HEAD_BYTES = 64 << 10  # a response's status line and headers; beyond it the response is refused
NO_RESPONSE = "Server disconnected without sending a response."  # httpcore's wording for the stale case
INCOMPLETE = "peer closed connection without sending complete message body"  # and for a cut body


class HttpError(Exception):
    """Every failure of an exchange; ``unanswered`` when no byte of a response had arrived."""

    unanswered = False


class ConnectFailed(HttpError):
    pass


class ConnectTimedOut(HttpError):
    pass


class WriteTimedOut(HttpError):
    pass


class Stalled(HttpError):
    pass


class Disconnected(HttpError):
    """The server closed the connection before the response ended (httpx: ``RemoteProtocolError``)."""


class ReadFailed(HttpError):
    """The connection broke while reading (a reset; httpx: ``ReadError``)."""


@dataclass(frozen=True)
class Target:
    """Where a request goes: the connection's key and the request line's parts."""

    host: str
    port: int
    authority: str  # the Host header
    path: str  # path and query


def target(url: str) -> Target | None:
    """The ``Target`` of an ``http://`` URL this client serves, or None where httpx must: another scheme
    (``https``), credentials in the URL (httpx turns them into basic auth), or a proxy from the environment
    (``HTTP_PROXY``/``ALL_PROXY`` without a ``NO_PROXY`` match, as httpx's ``trust_env`` would use)."""
    try:
        parts = urlsplit(url)
        port = parts.port or 80
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme != "http" or not host or parts.username is not None or parts.password is not None:
        return None
    proxies = urllib.request.getproxies_environment()
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # in 3.11, not in its stubs
    if ("http" in proxies or "all" in proxies) and not bypass(host, proxies):
        return None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(host, port, parts.netloc.rsplit("@", 1)[-1], path)


def request_head(t: Target, method: str, headers: Mapping[str, str], length: int) -> bytes:
    """The request line and headers, with the defaults httpx sends (user headers win, case-insensitively)."""
    fields = {
        "host": ("Host", t.authority),
        "accept": ("Accept", "*/*"),
        "accept-encoding": ("Accept-Encoding", "gzip, deflate"),
        "connection": ("Connection", "keep-alive"),
        "user-agent": ("User-Agent", "specmeter"),
    }
    for name, value in headers.items():
        fields[name.lower()] = (name, value)
    fields["content-length"] = ("Content-Length", str(length))
    lines = [f"{method} {t.path} HTTP/1.1"] + [f"{name}: {value}" for name, value in fields.values()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


# Body framing states.
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _UNTIL_CLOSE, _DONE = range(8)

OnData = Callable[[bytes, float], bool]  # (body bytes, arrival stamp) -> True: the reader wants no more


class Exchange:
    """One request and its response on one connection.

    ``head()`` waits for the status and headers; ``stream(on_data)`` hands every piece of the body to
    ``on_data`` with its arrival stamp, inside the socket's read callback, until the body ends (False) or
    ``on_data`` says it is done (True). Body bytes that came with the head are replayed first with their
    own stamps. ``drain`` reads what is left so the connection can be reused; ``Pool.release`` ends it.
    """

    def __init__(self, conn: _Conn, stall_timeout: float) -> None:
        self.conn = conn
        self.loop = conn.loop
        self.stall_timeout = stall_timeout
        self.status = 0
        self.headers: dict[str, str] = {}
        self.state = _HEAD
        self._buf = b""  # unparsed bytes (head, chunk-size lines, trailers)
        self._remaining = 0  # bytes left in the body (Content-Length) or in the current chunk
        self._received_any = False
        self._keep_alive = True
        self._decoders: list[_Decoder] = []
        self._early: list[tuple[bytes, float]] = []  # body bytes before anyone listened
        self._on_data: OnData | None = None
        self._ignore = False  # the reader is done: the rest of the body is framed and dropped
        self._waiter: asyncio.Future[None] | None = None
        self._error: HttpError | None = None
        self._reader_error: Exception | None = None
        self._last = perf_counter()
        self._timer: asyncio.TimerHandle | None = None

    # ---- the connection's side (called from the protocol's callbacks)

    def feed(self, data: bytes, now: float) -> None:
        self._last = now
        self._received_any = True
        try:
            self._parse(data, now)
        except HttpError as e:
            self._fail(e)
            self.conn.abort()

    def ended(self, exc: Exception | None) -> None:
        """The connection closed (EOF or lost)."""
        if self.state == _DONE or self._error is not None:
            return
        if self.state == _UNTIL_CLOSE and exc is None:
            self.state = _DONE
            self._flush_decoders(perf_counter())
            self._wake()
            return
        if exc is not None and not isinstance(exc, HttpError):
            error: HttpError = ReadFailed(str(exc) or type(exc).__name__)
        elif self.state == _HEAD and not self._buf:
            error = Disconnected(NO_RESPONSE)
        elif self.state == _HEAD:
            error = Disconnected("peer closed connection without sending a complete response head")
        elif self.state == _LENGTH:
            error = Disconnected(f"{INCOMPLETE} (incomplete read: {self._remaining} bytes missing)")
        else:
            error = Disconnected(f"{INCOMPLETE} (incomplete chunked read)")
        error.unanswered = not self._received_any
        self._fail(error)

    # ---- parsing

    def _parse(self, data: bytes, now: float) -> None:
        state = self.state
        buf = self._buf + data if self._buf else data
        self._buf = b""
        pos = 0
        end = len(buf)
        while pos < end:
            if state == _CHUNK_DATA:
                take = min(self._remaining, end - pos)
                piece = buf[pos : pos + take]
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    state = _CHUNK_END
                self._body(piece, now)
            elif state == _CHUNK_END:
                if end - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise Disconnected("malformed chunked body: no CRLF after a chunk")
                pos += 2
                state = _CHUNK_SIZE
            elif state == _CHUNK_SIZE:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    if end - pos > 4096:
                        raise Disconnected("malformed chunked body: a chunk size line too long")
                    break
                line = buf[pos:nl].split(b";", 1)[0].strip()
                pos = nl + 1
                try:
                    size = int(line, 16)
                except ValueError:
                    raise Disconnected(f"malformed chunked body: chunk size {line[:20]!r}") from None
                if size < 0:
                    raise Disconnected("malformed chunked body: negative chunk size")
                if size == 0:
                    state = _TRAILER
                else:
                    self._remaining = size
                    state = _CHUNK_DATA
            elif state == _LENGTH:
                take = min(self._remaining, end - pos)
                piece = buf[pos : pos + take]
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    state = _DONE
                self._body(piece, now)
            elif state == _UNTIL_CLOSE:
                self._body(buf[pos:] if pos else buf, now)
                pos = end
            elif state == _TRAILER:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    if end - pos > MAX_HEAD_BYTES:
                        raise Disconnected("malformed chunked body: trailers too long")
                    break
                line = buf[pos:nl].strip()
                pos = nl + 1
                if not line:
                    state = _DONE
            elif state == _HEAD:
                sep = buf.find(b"\r\n\r\n", pos)
                if sep < 0:
                    if end - pos > MAX_HEAD_BYTES:
                        raise Disconnected(f"response head longer than {MAX_HEAD_BYTES} bytes")
                    break
                head = buf[pos:sep]
                pos = sep + 4
                state = self._head(head)
                if 100 <= self.status < 200:  # an interim response (100 Continue): the real one follows
                    self.status, self.headers, state = 0, {}, _HEAD
                    continue
                self._wake()
            else:  # _DONE
                if pos < end:
                    self._keep_alive = False  # bytes after the response: the connection cannot be reused
                break
        self.state = state
        if pos < end and state != _DONE:
            self._buf = buf[pos:]
        if state == _DONE:
            self._flush_decoders(now)
            self._wake()

    def _head(self, head: bytes) -> int:
        lines = head.split(b"\r\n")
        status_line = lines[0].split(b" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
            raise Disconnected(f"malformed response status line {lines[0][:40]!r}")
        try:
            self.status = int(status_line[1])
        except ValueError:
            raise Disconnected(f"malformed response status line {lines[0][:40]!r}") from None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise Disconnected(f"malformed response header {line[:40]!r}")
            key = name.strip().lower().decode("latin-1")
            text = value.strip().decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.headers = headers
        version_10 = status_line[0] == b"HTTP/1.0"
        connection = headers.get("connection", "").lower()
        if "close" in connection or (version_10 and "keep-alive" not in connection):
            self._keep_alive = False
        for coding in reversed([c.strip().lower() for c in headers.get("content-encoding", "").split(",")]):
            if coding in ("gzip", "x-gzip"):
                self._decoders.append(zlib.decompressobj(zlib.MAX_WBITS | 16))
            elif coding == "deflate":
                self._decoders.append(_Deflate())
        if self.status in (204, 304) or 100 <= self.status < 200:
            return _DONE
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return _CHUNK_SIZE
        if "content-length" in headers:
            try:
                self._remaining = int(headers["content-length"].split(",")[0])
            except ValueError:
                raise Disconnected("malformed Content-Length") from None
            if self._remaining < 0:
                raise Disconnected("malformed Content-Length")
            return _LENGTH if self._remaining else _DONE
        self._keep_alive = False
        return _UNTIL_CLOSE

    def _body(self, piece: bytes, now: float, first: int = 0) -> None:
        if self._ignore or not piece:
            return
        for decoder in self._decoders[first:]:
            try:
                piece = decoder.decompress(piece)
            except zlib.error as e:
                raise Disconnected(f"DecodingError: {e}") from None
            if not piece:
                return
        if self._on_data is None:
            self._early.append((piece, now))
            return
        try:
            stop = self._on_data(piece, now)
        except Exception as e:  # the reader's own failure: raised from ``stream`` in its task, as httpx would
            self._reader_error = e
            stop = True
        if stop:
            self._stop_reading()

    def _flush_decoders(self, now: float) -> None:
        """At the body's end, what the decompressors still hold goes to the reader."""
        decoders, self._decoders = self._decoders, []
        for i, decoder in enumerate(decoders):
            try:
                tail = decoder.flush()
            except zlib.error:
                continue
            if tail:
                self._decoders = decoders
                self._body(tail, now, i + 1)
                self._decoders = []

    def _stop_reading(self) -> None:
        self._ignore = True
        self._on_data = None
        self._wake()

    # ---- waiting

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: HttpError) -> None:
        if self._error is None:
            self._error = error
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = self.loop.call_later(self.stall_timeout, self._check_stall)

    def _check_stall(self) -> None:
        self._timer = None
        idle = perf_counter() - self._last
        if idle >= self.stall_timeout - 1e-3:
            self._fail(Stalled(f"no data for {self.stall_timeout:g}s"))
        elif self._waiter is not None and not self._waiter.done():
            self._timer = self.loop.call_later(self.stall_timeout - idle, self._check_stall)

    async def _wait(self, ready: Callable[[], bool]) -> None:
        """Until ``ready()``; a failure is raised only if it came before that (a head, then the connection's
        end in the same read: the head is returned, the body's bytes are read, then the failure)."""
        while self._error is None and not ready():
            self._waiter = self.loop.create_future()
            self._arm()
            try:
                await self._waiter
            finally:
                self._waiter = None
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
        if self._error is not None and not ready():
            raise self._error

    async def head(self) -> None:
        self._last = perf_counter()
        await self._wait(lambda: self.state != _HEAD)

    async def stream(self, on_data: OnData) -> bool:
        """Hand the body to ``on_data``; True when it stopped the reading, False when the body ended."""
        early, self._early = self._early, []
        for piece, stamp in early:
            if on_data(piece, stamp):
                self._stop_reading()
                return True
        self._on_data = on_data
        try:
            await self._wait(lambda: self._ignore or self.state == _DONE)
        finally:
            self._on_data = None
        if self._reader_error is not None:
            raise self._reader_error
        return self._ignore

    async def read_at_most(self, limit: int) -> bytes:
        """The body's first ``limit`` bytes (an error's), never more read than that."""
        parts: list[bytes] = []
        size = 0

        def take(piece: bytes, now: float) -> bool:
            nonlocal size
            parts.append(piece)
            size += len(piece)
            return size >= limit

        await self.stream(take)
        return b"".join(parts)[:limit]

    async def drain(self, timeout: float) -> None:
        """Read (and drop) the rest of the body so the connection can be reused, for at most ``timeout`` s;
        the connection is closed if it did not end by then."""
        self._ignore = True
        if self.state == _DONE or self._error is not None:
            return
        with contextlib.suppress(asyncio.TimeoutError, HttpError):
            await asyncio.wait_for(self._wait(lambda: self.state == _DONE), timeout)

    def reusable(self) -> bool:
        return self.state == _DONE and self._error is None and self._keep_alive and not self._buf


class _Decoder(Protocol):
    def decompress(self, data: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped, or raw (httpx's DeflateDecoder does the same)."""

    def __init__(self) -> None:
        self._obj = zlib.decompressobj()
        self._first = True

    def decompress(self, data: bytes) -> bytes:
        was_first, self._first = self._first, False
        try:
            return self._obj.decompress(data)
        except zlib.error:
            if was_first:
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                return self._obj.decompress(data)
            raise

    def flush(self) -> bytes:
        return self._obj.flush()


class _Conn(asyncio.BufferedProtocol):
    """One TCP connection: stamps every read, queues it for the exchange in flight (``Pool.flush``).

    A buffered protocol: the transport reads into the pool's one preallocated buffer (``recv_into``)
    instead of allocating 256 KiB per read as ``data_received`` transports do (an mmap and page faults per
    chunk: the largest single cost of a read in a profile of 64 streams); the bytes are copied out at once.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: Pool, key: tuple[str, int]) -> None:
        self.loop = loop
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.closed = False
        self._paused = False
        self._drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.pool.buffer

    def buffer_updated(self, nbytes: int) -> None:
        now = perf_counter()  # first: the arrival, before anything is parsed
        data = bytes(self.pool.buffer[:nbytes])
        exchange = self.exchange
        if exchange is None:  # bytes on an idle connection: nothing may follow them
            self.abort()
            return
        exchange._last = now
        self.pool.queue(exchange, data, now)

    def eof_received(self) -> bool:
        self.closed = True
        self.pool.flush()  # what arrived before the end is read first
        if self.exchange is not None:
            self.exchange.ended(None)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.flush()
        if self.exchange is not None:
            self.exchange.ended(exc)
        else:
            self.pool.lost_idle(self)
        self._resume()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._resume()

    def _resume(self) -> None:
        self._paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def write(self, data: bytes, timeout: float) -> None:
        assert self.transport is not None
        self.transport.write(data)
        if self._paused and not self.closed:
            self._drained = self.loop.create_future()
            try:
                await asyncio.wait_for(self._drained, timeout)
            except asyncio.TimeoutError:
                raise WriteTimedOut(f"timed out after {timeout:g} s") from None
            finally:
                self._drained = None

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


_local = threading.local()


def _read_buffer() -> memoryview:
    """The thread's one read buffer (one event loop per thread; each read is copied out as it lands)."""
    buffer: memoryview | None = getattr(_local, "buffer", None)
    if buffer is None:
        buffer = _local.buffer = memoryview(bytearray(READ_BUFFER))
    return buffer


class Pool:
    """Keep-alive connections per (host, port), at most ``max_connections`` of them open at once.

    A request that finds them all busy waits for one (first come, first served), as httpx's pool with no
    pool timeout does.
    """

    def __init__(self, max_connections: int) -> None:
        self.buffer = _read_buffer()  # every read of the pool's connections lands here
        self._queued: list[tuple[Exchange, bytes, float]] = []
        self._flushing: asyncio.Handle | None = None
        self.max_connections = max(1, max_connections)
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._all: set[_Conn] = set()

    async def _acquire(self, t: Target, connect_timeout: float) -> _Conn:
        key = (t.host, t.port)
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
            self._forget(conn)
        while self._open >= self.max_connections:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # pass the turn on
                raise
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            idle = self._idle.get(key)
            while idle:
                conn = idle.pop()
                if not conn.closed:
                    return conn
                self._forget(conn)
        self._open += 1
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Conn(loop, self, key), t.host, t.port), connect_timeout
            )
        except asyncio.TimeoutError:
            self._open -= 1
            self._wake_one()
            raise ConnectTimedOut(f"timed out after {connect_timeout:g} s") from None
        except OSError as e:
            self._open -= 1
            self._wake_one()
            raise ConnectFailed(str(e) or type(e).__name__) from None
        except BaseException:
            self._open -= 1
            self._wake_one()
            raise
        self._all.add(conn)
        return conn

    def _forget(self, conn: _Conn) -> None:
        if conn in self._all:
            self._all.discard(conn)
            self._open -= 1
            self._wake_one()

    def queue(self, exchange: Exchange, data: bytes, now: float) -> None:
        """Bytes stamped on arrival, parsed later (``_flush_slice``) so that no stamp waits behind parsing.

        The parsing runs as a timer due at once: asyncio runs due timers *after* the socket callbacks of
        its next poll, so every socket that became ready meanwhile is read and stamped before the queued
        bytes are parsed, and parsing goes in slices of :data:`PARSE_SLICE` reads with a poll between them.
        """
        self._queued.append((exchange, data, now))
        if self._flushing is None:
            loop = exchange.loop
            self._flushing = loop.call_at(loop.time(), self._flush_slice)

    def _flush_slice(self) -> None:
        self._flushing = None
        queued = self._queued
        if len(queued) > PARSE_SLICE:
            now_parsed, self._queued = queued[:PARSE_SLICE], queued[PARSE_SLICE:]
            loop = now_parsed[0][0].loop
            self._flushing = loop.call_at(loop.time(), self._flush_slice)
        else:
            now_parsed, self._queued = queued, []
        self._feed(now_parsed)

    def flush(self) -> None:
        """Parse everything queued now (a connection ends: what arrived before its end comes first)."""
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        queued, self._queued = self._queued, []
        self._feed(queued)

    @staticmethod
    def _feed(queued: list[tuple[Exchange, bytes, float]]) -> None:
        """Hand bytes, in arrival order and with their stamps, to their exchanges (if still theirs)."""
        for exchange, data, now in queued:
            if exchange.conn.exchange is exchange and exchange._error is None:
                exchange.feed(data, now)

    def lost_idle(self, conn: _Conn) -> None:
        """An idle connection closed (the server's keep-alive timeout): it no longer counts."""
        idle = self._idle.get(conn.key)
        if idle is not None and conn in idle:
            idle.remove(conn)
        self._forget(conn)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def send(
        self,
        t: Target,
        method: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        connect_timeout: float,
        write_timeout: float,
        stall_timeout: float,
        on_sent: Callable[[], None] | None = None,
    ) -> Exchange:
        """Send a request and wait for its response's head; the caller reads the body and then ``release``s
        the exchange (in a ``finally``: an exchange that did not end closes its connection)."""
        conn = await self._acquire(t, connect_timeout)
        exchange = Exchange(conn, stall_timeout)
        conn.exchange = exchange
        try:
            if conn.closed:  # closed while idle, noticed only now: as a stale connection would fail
                exchange.ended(None)
            else:
                if on_sent is not None:
                    on_sent()
                await conn.write(request_head(t, method, headers, len(body)) + body, write_timeout)
            await exchange.head()
        except BaseException:
            self.release(exchange)
            raise
        return exchange

    def release(self, exchange: Exchange) -> None:
        """The exchange is over: its connection goes back to the pool if the response ended cleanly, else
        it is closed."""
        conn = exchange.conn
        if conn.exchange is not exchange:
            return
        conn.exchange = None
        if exchange.reusable() and not conn.closed:
            self._idle.setdefault(conn.key, []).append(conn)
            self._wake_one()
        else:
            conn.close()
            self._forget(conn)

    async def aclose(self) -> None:
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        self._queued = []
        conns, self._all, self._idle = list(self._all), set(), {}
        self._open = 0
        for conn in conns:
            conn.close()
        if conns:
            await asyncio.sleep(0)  # let the transports run their close callbacks
