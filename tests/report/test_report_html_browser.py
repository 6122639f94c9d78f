"""The report in a real browser: headless Chromium lays out every chart with visible marks; a PNG comes out.

Skipped where the Debian ``chromium`` package is not installed (/usr/bin/chromium). The shipped report has
no JavaScript; the test copies it and adds a probe script that measures each chart after layout and
writes the result into the DOM, which ``--dump-dom`` then prints.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_report_html import ALL_CHARTS, EVIL, records

from specmeter.report.html import render_report, write_report
from specmeter.report.html_browser import dump_dom, screenshot_html

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason="needs the Debian chromium package")

PROBE = """
<script>
window.addEventListener("load", () => {
  const out = {};
  for (const svg of document.querySelectorAll("svg.chart")) {
    const box = svg.getBoundingClientRect();
    const marks = [...svg.querySelectorAll(".mark")].map(m => m.getBBox());
    out[svg.dataset.chart] = {
      width: box.width, height: box.height, marks: marks.length,
      visible: marks.filter(b => b.width > 0 || b.height > 0).length,
    };
  }
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


@pytest.fixture
def report(tmp_path: Path, result: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPECMETER_CHROMIUM", str(CHROMIUM))
    result["candidates"][0]["draft"] = EVIL  # escaping must hold in a real parser too
    recs = {"baseline": records()["baseline"], f"{EVIL}@k=4": records()["draft-a@k=4"]}
    path = tmp_path / "report.html"
    write_report(path, render_report(result, records=recs))
    return path


def test_chromium_lays_out_every_chart_with_visible_marks(report: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe.html"
    probe.write_text(
        report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8"
    )
    dom = dump_dom(probe, timeout=120)
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert match, "the probe did not run"
    charts = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert set(charts) == ALL_CHARTS | {"timeline"}
    for name, c in charts.items():
        assert c["width"] > 300 and c["height"] > 100, name
        assert c["marks"] > 0 and c["visible"] == c["marks"], name
    # The escaped name is text, never an element: the page holds only our probe script.
    assert dom.count("<script") == 1


def test_screenshot_is_a_png(report: Path, tmp_path: Path) -> None:
    png = tmp_path / "shot.png"
    screenshot_html(report, png, width=1280, height=1600, timeout=120)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a blank page compresses to a few KB
