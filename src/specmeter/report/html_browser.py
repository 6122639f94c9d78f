"""Headless Chromium for the HTML report: a PNG screenshot (README) and the DOM after load (tests).

Chromium is optional: nothing else in specmeter needs it. It is looked up as ``$SPECMETER_CHROMIUM``,
then ``chromium``, ``chromium-browser``, ``google-chrome`` on PATH. Each call runs with a fresh, temporary
profile and with networking and background services off, so a report can never fetch anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["CHROMIUM_FLAGS", "BrowserError", "dump_dom", "find_chromium", "screenshot_html"]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--mute-audio",
)
_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserError(RuntimeError):
    """No browser, or it failed; the message is one line."""


def find_chromium() -> str | None:
    override = os.environ.get("SPECMETER_CHROMIUM")
    if override:
        return override if Path(override).is_file() else None
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    exe = find_chromium()
    if exe is None:
        raise BrowserError(
            "no chromium found (install the Debian package `chromium`, or set SPECMETER_CHROMIUM)"
        )
    with tempfile.TemporaryDirectory(prefix="specmeter-chromium-") as profile:
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise BrowserError(f"chromium did not finish within {timeout:.0f} s") from e
        except OSError as e:
            raise BrowserError(f"cannot run {exe}: {e}") from e
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise BrowserError(f"chromium exited with {done.returncode}: {tail[0]}")
    return done


def screenshot_html(
    html: Path, png: Path, *, width: int = 1280, height: int = 2800, timeout: float = 60
) -> None:
    """Render ``html`` and save a ``width`` × ``height`` PNG of the top of the page."""
    png.parent.mkdir(parents=True, exist_ok=True)
    _run(
        [f"--screenshot={png.resolve()}", f"--window-size={width},{height}", html.resolve().as_uri()], timeout
    )
    if not png.is_file() or png.stat().st_size == 0:
        raise BrowserError(f"chromium wrote no screenshot to {png}")


def dump_dom(html: Path, *, timeout: float = 60, budget_ms: int = 3000) -> str:
    """The serialized DOM after the page loaded and its scripts ran (``--dump-dom``)."""
    args = [
        f"--virtual-time-budget={budget_ms}",
        "--window-size=1280,2000",
        "--dump-dom",
        html.resolve().as_uri(),
    ]
    return _run(args, timeout).stdout
