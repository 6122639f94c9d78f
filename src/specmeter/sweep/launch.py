"""Launching a server under test: a command template, its own process group, a health wait, a clean stop.

``sweep`` measures server *configurations* (a draft length, a schedule, no speculation), so it has to start
and stop servers itself. A configuration's command comes from a template with placeholders, filled in per
configuration:

==============  ==========================================================================================
``{port}``      a free port on 127.0.0.1 chosen by specmeter (the server must listen on it)
``{k}``         the draft length (a schedule: its largest k)
``{draft}``     the draft model given to ``sweep --draft``
``{spec}``      vLLM's ``--speculative-config`` JSON for this configuration (method, model, k, schedule);
                for a method spec given as the draft (``ngram:min=2,max=4``, ``suffix``), vLLM's
                config for that method (``methods.engines``)
``{schedule}``  the ``num_speculative_tokens_per_batch_size`` JSON list (``serve --k-schedule``)
==============  ==========================================================================================

The template is split like a shell line (``shlex``) and placeholders are filled in *per argument*, so a
JSON value stays one argument with no quoting; no shell runs it (pipes, ``&&`` and ``$VARS`` are not
interpreted: wrap the command in ``sh -c '…'`` for those).

The server runs in its own session (a new process group), its output goes to a log file, and
:meth:`ServerProcess.stop` sends SIGTERM to the whole group, waits, then SIGKILL — so an engine that forks
workers (vLLM's engine core, a tokenizer pool) is stopped with all its children. Every started server is
also registered for an ``atexit`` stop, the last line of defence when the caller dies of an exception
nobody caught; a SIGTERM to specmeter itself becomes the same path as Ctrl-C (:func:`sigterm_as_interrupt`).

Two cases ``atexit`` cannot reach (issue 29.5):

- **specmeter killed** (SIGKILL, the OOM killer): no Python code runs. Each server gets a *guard*, a tiny
  Python process in its own session that reads a pipe whose only write end specmeter holds; the kernel closes
  it when specmeter dies, however it dies, and the guard then stops the server's group (SIGTERM, 5 s, SIGKILL)
  and every process it was told about. A normal stop tells the guard "done" first. (``PR_SET_PDEATHSIG`` is
  not used: it reaches only the direct child, and fires when the *thread* that forked it ends.)
- **a launch that detaches** (a command that double-forks and calls ``setsid``, leaving the server in a
  session of its own): on Linux specmeter makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``)
  while it has servers, so the detached server is re-parented to it. When the launched command exits 0
  before its server is healthy, those adopted processes are the server: specmeter waits for their health
  as usual, stops them by pid (their own process groups) with the launch's group, and tells the guard. A
  command that exits 0 leaving nothing behind is a server that exited, as before.

Every problem is a :class:`LaunchError` with one line naming the configuration and the server's last log
line.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import psutil

from specmeter.engine.schedule import KSchedule
from specmeter.methods import MethodSpec, MethodSpecError, parse_candidate
from specmeter.methods.engines import vllm_speculative_config

__all__ = [
    "PLACEHOLDERS",
    "LaunchError",
    "LaunchValues",
    "ServerProcess",
    "free_port",
    "render_template",
    "sigterm_as_interrupt",
    "spec_config",
]

PLACEHOLDERS = ("{port}", "{k}", "{draft}", "{spec}", "{schedule}")
# vLLM, SGLang, llama.cpp, serve: /health; a server without one (404): the model list
HEALTH_PATHS = ("/health", "/v1/models")
STOP_GRACE_S = 20.0  # SIGTERM → SIGKILL
_LIVE: set[ServerProcess] = set()
GUARD_GRACE_S = 5.0  # the guard's SIGTERM → SIGKILL, when specmeter died without stopping the server

# The guard (see the module's docstring): argv[1] is the launch's process group; stdin is specmeter's pipe,
# which sends the pids of processes that detached, then "done" on a normal stop, or nothing at all: EOF.
_GUARD = r"""
import os, signal, sys, time
groups, pids = {int(sys.argv[1])}, set()
for line in sys.stdin:
    word = line.strip()
    if word == "done":
        sys.exit(0)
    if word.isdigit():
        pids.add(int(word))
        try:  # its group now, while it lives: the processes it started share it
            groups.add(os.getpgid(int(word)))
        except OSError:
            pass
groups.discard(os.getpgrp())
def send(sig):
    alive = False
    for group in groups:
        try:
            os.killpg(group, sig)
            alive = True
        except OSError:
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
            alive = True
        except OSError:
            pass
    return alive
send(signal.SIGTERM)
deadline = time.monotonic() + float(sys.argv[2])
while send(0) and time.monotonic() < deadline:
    time.sleep(0.1)
send(signal.SIGKILL)
"""


class LaunchError(RuntimeError):
    """A server that cannot be started, never became healthy, or died; the message is one line."""


def free_port() -> int:
    """A port nobody listens on right now (the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spec_config(k: int, draft: str | None, schedule: KSchedule | None, method: str) -> str:
    """vLLM's ``--speculative-config`` JSON for draft length ``k`` (or a schedule) with ``draft``.

    ``draft`` may be a method spec (``ngram:min=2,max=4``, ``suffix``; docs/methods.md): the JSON is then
    vLLM's config for that method (``methods.engines.vllm_speculative_config``), not a draft model's."""
    parsed = _method_spec(draft)
    if parsed is not None:
        largest = max(1, schedule.max_k if schedule is not None else k)
        try:
            method_cfg = vllm_speculative_config(parsed, largest)
        except MethodSpecError as e:
            raise LaunchError(f"{{spec}}: {e}") from None
        if schedule is not None:
            method_cfg["num_speculative_tokens_per_batch_size"] = schedule.to_json()
        return json.dumps(method_cfg)
    if schedule is not None:
        return json.dumps(schedule.vllm_config(method, draft))
    cfg: dict[str, Any] = {"method": method}
    if draft is not None:
        cfg["model"] = draft
    cfg["num_speculative_tokens"] = k
    return json.dumps(cfg)


def _method_spec(draft: str | None) -> MethodSpec | None:
    if draft is None:
        return None
    try:
        parsed = parse_candidate(draft)
    except MethodSpecError:
        return None  # SweepConfig refused it already; a library caller gets the text as a model
    return parsed if isinstance(parsed, MethodSpec) else None


# Lines that say why a server stopped, and footers that follow them (see ServerProcess.last_line).
_ERRORISH = re.compile(
    r"error|exception|traceback|refus|invalid|not supported|out of memory|failed|abort", re.I
)
_FOOTER = re.compile(r"for further information visit|^traceback \(most recent call last\)", re.I)
# What gdb prints after a native abort (ggml_print_backtrace attaches it to llama-server on GGML_ASSERT):
# thread and inferior notices, frames ("#2  0x… in ggml_abort ()"), the frame it stopped in and source lines
# it could not find. None of it is the reason, and a many-threaded server prints dozens of such lines.
_GDB = re.compile(
    r"^(#\d+\s+\S|0x[0-9a-f]+ in |\[New (LWP|Thread) |\[Thread debugging |\[Inferior \d+ |"
    r"Using host libthread_db |\d+\t)"
)


@dataclass(frozen=True)
class LaunchValues:
    """What fills one configuration's placeholders."""

    port: int
    k: int
    draft: str | None = None
    schedule: KSchedule | None = None
    method: str = "draft_model"

    def mapping(self) -> dict[str, str]:
        k = self.schedule.max_k if self.schedule is not None else self.k
        return {
            "{port}": str(self.port),
            "{k}": str(k),
            "{draft}": self.draft or "",
            "{spec}": spec_config(k, self.draft, self.schedule, self.method),
            "{schedule}": json.dumps((self.schedule or KSchedule.constant(self.k)).to_json()),
        }


def render_template(template: str, values: LaunchValues, *, option: str = "--launch") -> list[str]:
    """The command's arguments: ``template`` split like a shell line, placeholders filled per argument."""
    try:
        words = shlex.split(template)
    except ValueError as e:
        raise LaunchError(f"{option}: cannot split {template!r} ({e})") from None
    if not words:
        raise LaunchError(f"{option}: the template is empty")
    mapping = values.mapping()
    out = []
    for word in words:
        for name, value in mapping.items():
            word = word.replace(name, value)
        out.append(word)
    return out


def check_template(template: str, option: str, *, needs_port: bool = True) -> None:
    """Placeholders a template must have, and unknown ``{names}`` (a typo would reach the server as is)."""
    import re

    for name in re.findall(r"\{[a-z_]+\}", template):
        if name not in PLACEHOLDERS:
            raise LaunchError(f"{option}: unknown placeholder {name} (known: {', '.join(PLACEHOLDERS)})")
    if needs_port and "{port}" not in template:
        raise LaunchError(f"{option}: the template needs {{port}}: specmeter picks a free port per server")


class ServerProcess:
    """One launched server: its own process group, its log, a health wait, and a stop that always stops."""

    def __init__(self, name: str, argv: Sequence[str], url: str, log: Path) -> None:
        self.name = name  # the configuration, for messages: "k=4", "baseline"
        self.argv = list(argv)
        self.url = url
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.exit_code: int | None = None
        self._wall_start = 0.0
        self.detached: list[int] = []  # processes that left the launch's session and were adopted (pids)
        self._guard: subprocess.Popen[bytes] | None = None
        self._guard_pipe: int | None = None

    def start(self, env: Mapping[str, str] | None = None) -> None:
        """Start the command in a new session; LaunchError when it cannot even be executed."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        _subreaper(True)  # before the launch: a server that detaches is re-parented to specmeter
        with self.log.open("wb") as out:
            try:
                self.proc = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=None if env is None else {**os.environ, **env},
                    start_new_session=True,
                )
            except OSError as e:
                raise LaunchError(f"{self.name}: cannot start {self.argv[0]!r}: {e.strerror or e}") from None
        self.started_at = time.monotonic()
        self._wall_start = time.time()
        _LIVE.add(self)
        self._start_guard()

    def _start_guard(self) -> None:
        """The guard that stops this server if specmeter dies without stopping it (module docstring)."""
        assert self.proc is not None
        read, write = os.pipe()  # not inherited by the server: only the guard gets the read end, as stdin
        try:
            self._guard = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _GUARD, str(self.proc.pid), str(GUARD_GRACE_S)],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C to specmeter's terminal is not for the guard
            )
        except OSError:
            os.close(write)
            self._guard = None  # no guard: atexit and stop() still stop the server
        else:
            self._guard_pipe = write
        finally:
            os.close(read)

    def _tell_guard(self, word: str) -> None:
        if self._guard_pipe is not None:
            with contextlib.suppress(OSError):
                os.write(self._guard_pipe, f"{word}\n".encode())

    def _end_guard(self) -> None:
        """A normal stop: the guard leaves without killing anything."""
        self._tell_guard("done")
        if self._guard_pipe is not None:
            os.close(self._guard_pipe)
            self._guard_pipe = None
        if self._guard is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._guard.wait(timeout=5)
            self._guard = None

    def _follow_detached(self) -> None:
        """The adopted processes still running, and any new ones (told to the guard): a double fork's
        middle process is adopted for the moment it lives, the server for good."""
        running = [pid for pid in self.detached if _running(pid)]
        found = self._adopt()
        # A double fork's server may still be the child of a middle process that has not exited yet (so
        # not yet re-parented to specmeter): the descendants of what was adopted are told too.
        for pid in (*running, *found):
            with contextlib.suppress(psutil.Error):
                found += [c.pid for c in psutil.Process(pid).children(recursive=True)]
        new = [pid for pid in dict.fromkeys(found) if pid not in running]
        for pid in new:
            self._tell_guard(str(pid))
        self.detached = running + new

    def _adopt(self) -> list[int]:
        """Processes the launch left behind in sessions of their own, re-parented to specmeter (the
        subreaper): children of this process, outside its session, started since the launch, and not
        another server's leader or guard."""
        known = {p for s in _LIVE for p in (s.pid, s._guard.pid if s._guard is not None else None) if p}
        own_session = os.getsid(0)
        found = []
        for child in psutil.Process().children():
            try:
                if child.pid in known or os.getsid(child.pid) == own_session:
                    continue
                if child.create_time() < self._wall_start - 1.0:
                    continue
            except (psutil.Error, OSError):
                continue
            found.append(child.pid)
        return found

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def alive(self) -> bool:
        if self.detached:
            return any(_running(pid) for pid in self.detached)
        return self.proc is not None and self.proc.poll() is None

    def last_line(self) -> str:
        """The line of the server's output that says why it failed: the last error-looking one, else the last.

        The last line alone is often a footer: pydantic ends a refused vLLM configuration with "For further
        information visit https://errors.pydantic.dev/…", one line *after* the reason ("Value error,
        --per-request-spec-decode-metrics requires speculative decoding …"). So the last 40 lines are searched
        backwards for one that names an error, skipping such footers and traceback frames. A native abort
        ends in a gdb backtrace (llama-server's ``GGML_ASSERT(…) failed``, then thread notices and frames
        such as "#2 0x… in ggml_abort ()"): gdb's lines are dropped first, so the assert is the one named.
        """
        try:
            data = self.log.read_bytes()[-16384:]
        except OSError:
            return ""
        lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
        lines = [ln for ln in lines if not _GDB.match(ln)] or lines
        for line in reversed(lines[-40:]):
            if _FOOTER.search(line) or line.startswith(("File ", "^", "~")):
                continue
            if _ERRORISH.search(line):
                return line[:300]
        return lines[-1][:300] if lines else ""

    def died(self, when: str) -> LaunchError:
        """The one line for a server that exited ``when`` (e.g. "before it was healthy")."""
        code = self.proc.poll() if self.proc is not None else None
        last = self.last_line()
        said = f"; it said: {last}" if last else "; it printed nothing"
        if self.detached:  # the launch command's own 0 says nothing about the server it detached
            pids = ", ".join(map(str, self.detached))
            return LaunchError(
                f"{self.name}: the server (detached, pid {pids}) exited {when}{said} (log: {self.log})"
            )
        return LaunchError(f"{self.name}: the server exited with code {code} {when}{said} (log: {self.log})")

    async def wait_healthy(self, timeout_s: float, headers: Mapping[str, str] | None = None) -> float:
        """Poll ``/health`` (or ``/v1/models``) until 200; returns the seconds it took. LaunchError else."""
        assert self.proc is not None, "start() first"
        deadline = self.started_at + timeout_s
        last_error = "no answer"
        async with httpx.AsyncClient(timeout=5.0) as client:
            while True:
                code = self.proc.poll()
                if code == 0:  # a command that daemonized its server, or that just ended
                    self._follow_detached()
                if code is not None and not self.detached:
                    raise self.died("before it was healthy")
                for path in HEALTH_PATHS:
                    try:
                        response = await client.get(self.url + path, headers=headers)
                    except httpx.HTTPError as e:
                        last_error = type(e).__name__
                        break  # not listening yet: the other path would fail alike
                    if response.status_code == 200:
                        if self.proc.poll() is not None:  # a detached server answered: the guard knows it
                            self._follow_detached()
                        return time.monotonic() - self.started_at
                    last_error = f"HTTP {response.status_code} on {path}"
                    if response.status_code != 404:
                        break  # /health exists and says not yet: the model list would not know better
                if time.monotonic() > deadline:
                    raise LaunchError(
                        f"{self.name}: not healthy after {timeout_s:g}s ({self.url}/health: {last_error}); "
                        f"stopped it (log: {self.log})"
                    )
                await asyncio.sleep(0.25)

    def stop(self, grace_s: float = STOP_GRACE_S) -> int | None:
        """SIGTERM to the process group (and to the groups of processes that detached), SIGKILL after
        ``grace_s``; idempotent. Returns the exit code."""
        if self.proc is None:
            return None
        pgid = self.proc.pid  # start_new_session: the group's id is the leader's pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        if self.detached:
            self._stop_detached(grace_s)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        # Children that outlived the leader (an engine's workers) are in the same group.
        deadline = time.monotonic() + grace_s
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        self.exit_code = self.proc.returncode
        self._end_guard()
        _LIVE.discard(self)
        if not _LIVE:
            _subreaper(False)
        return self.exit_code

    def _stop_detached(self, grace_s: float) -> None:
        """The adopted processes, each by its own process group: SIGTERM, ``grace_s``, SIGKILL, reaped."""
        groups = set()
        for pid in self.detached:
            with contextlib.suppress(OSError):
                group = os.getpgid(pid)
                if group != os.getpgrp():
                    groups.add(group)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for group in groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, sig)
            for pid in self.detached:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 10.0)
            while any(_running(pid) for pid in self.detached) and time.monotonic() < deadline:
                time.sleep(0.1)


def _running(pid: int) -> bool:
    """True while ``pid`` runs; a zombie child of specmeter's (an adopted process that ended) is reaped."""
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _subreaper(on: bool) -> bool:
    """Make specmeter the child subreaper of its descendants (Linux ``PR_SET_CHILD_SUBREAPER``), or stop
    being one; False where the platform has no such thing."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, int(on), 0, 0, 0) == 0)  # 36: PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _group_alive(pgid: int) -> bool:
    # Members that ended while specmeter was their subreaper are its zombies: reap them, or they count.
    with contextlib.suppress(ChildProcessError, OSError):
        while os.waitpid(-pgid, os.WNOHANG)[0]:
            pass
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop(grace_s=5.0)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM is Ctrl-C: servers are stopped and results kept as on Ctrl-C.

    It runs the current SIGINT handler: inside ``asyncio.run`` that is asyncio's, which cancels the main
    task — so the run's own cancellation path records the requests in flight and saves the level in progress,
    exactly as on Ctrl-C, and ``asyncio.run`` then raises KeyboardInterrupt — and elsewhere Python's, which
    raises KeyboardInterrupt. (Raising it from this handler directly would kill whichever task happened to
    run, losing its request's record.)
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        on_interrupt = signal.getsignal(signal.SIGINT)
        if callable(on_interrupt):
            on_interrupt(
                signal.SIGINT, frame
            )  # asyncio's returns (its main task is cancelled); Python's raises
            return
        raise KeyboardInterrupt  # SIGINT ignored: SIGTERM still ends the run

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
