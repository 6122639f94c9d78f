"""specmeter.inputs: an input is a regular file before a byte of it is read (issue 39)."""

from __future__ import annotations

import io
import os
import socket
from pathlib import Path

import pytest

from specmeter import inputs
from specmeter.inputs import InputError

pytestmark = pytest.mark.timeout(30)


def test_special_files_are_named_and_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        for path, what in ((fifo, "FIFO"), (link, "FIFO"), ("/dev/zero", "character device"),
                           (sock_path, "socket")):  # fmt: skip
            assert what in (inputs.special(path) or "")
            with pytest.raises(InputError, match=what):
                inputs.read_text(path)  # a FIFO nobody writes would block here for ever
            with pytest.raises(OSError, match="not a regular file"):
                inputs.open_input(path)


def test_regular_files_and_bounds(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{"a": 1}', "utf-8")
    assert inputs.special(path) is None and inputs.special(tmp_path / "missing") is None
    assert inputs.read_text(path) == '{"a": 1}'
    with pytest.raises(InputError, match="more than the 4 "):
        inputs.read_text(path, limit=4)
    with pytest.raises(FileNotFoundError):
        inputs.read_text(tmp_path / "missing")
    with pytest.raises(IsADirectoryError):
        inputs.read_text(tmp_path)


def test_bounded_lines_skip_a_long_line_without_holding_it() -> None:
    data = b"short\n" + b"x" * 100 + b"\n" + b"tail"
    lines = list(inputs.bounded_lines(io.BytesIO(data), limit=10, chunk=7))
    assert lines == [(b"short\n", 6), (None, 101), (b"tail", 4)]
