"""`kubeberth simulate -o html`: a self-contained report, rendered by a real browser (Debian's
headless Chromium) and checked in the DOM it builds; a screenshot is written beside it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kubeberth.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.yaml")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture
def report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["simulate", EXAMPLE, "--seed", "1", "-o", "html"]) == 0
    path = tmp_path / "report.html"
    path.write_text(capsys.readouterr().out)
    return path


def test_the_report_is_self_contained(report: Path) -> None:
    text = report.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "the report must fetch nothing"
    assert "<link" not in text and "@import" not in text and "url(" not in text


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = chromium()
    if exe is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium): "
                    "the HTML report was not checked in a browser")
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--disable-background-networking", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, check=True)


def test_a_browser_renders_it(report: Path, tmp_path: Path) -> None:
    dom = _browser(tmp_path, "--dump-dom", report.as_uri()).stdout
    # The page's script ran (it counts the pod rows into <body data-pods>).
    assert re.search(r'<body[^>]*data-pods="18"', dom)
    assert len(re.findall(r'<tr class="node"', dom)) == 12
    assert len(re.findall(r'<svg class="bar" data-metric="(cpu|memory|pods)"', dom)) == 36
    assert len(re.findall(r'<details class="explanation"', dom)) == 18
    for status, n in (("Scheduled", 8), ("Existing", 6), ("Unschedulable", 2), ("Evicted", 1), ("Ignored", 1)):
        assert re.search(rf'data-status="{status}">.*? {status} {n}</span>', dom), status
    # The victim links to its preemptor's explanation, and the preemptor to its victim's.
    assert re.search(r'id="row-pod-shop-batch-1"[^>]*data-status="Evicted">.*?preempted by '
                     r'<a class="pod-link preemptor" href="#pod-shop-payments-0">shop/payments-0</a>', dom)
    assert '<details class="explanation" id="pod-shop-payments-0">' in dom
    assert 'preempted <a class="pod-link" href="#pod-shop-batch-1">shop/batch-1</a>' in dom
    assert "PostFilter (preemption):" in dom and "nominated to worker-1, evicting shop/batch-1" in dom
    assert '<tr class="profile"><td>default-scheduler</td>' in dom

    shot = Path(os.environ.get("KUBEBERTH_REPORT_SCREENSHOT", tmp_path / "report.png"))
    _browser(tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars", report.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
