"""``pykubectl dashboard`` as a process and Debian's chromium, headless, driven by
selenium through Debian's chromium-driver: shared by the browser test and
bench/dashboard_bench.py."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PYKUBECTL = str(Path(sys.executable).parent / "pykubectl")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextlib.contextmanager
def dashboard(kubeconfig: Path, *args: str, context: str = "") -> Iterator[tuple[str, int]]:
    """A running ``pykubectl dashboard --port 0``: (its URL, its pid)."""
    cmd = [PYKUBECTL, "dashboard", "--port", "0", "--no-browser", "--kubeconfig",
           str(kubeconfig), *(["--context", context] if context else []), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"(http://\S+/)", line)
        if not m:
            proc.kill()
            raise AssertionError(f"dashboard did not start: {line}{proc.communicate()[1]}")
        yield m.group(1), proc.pid
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.communicate(timeout=10)  # and closes the pipes
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=5)


@contextlib.contextmanager
def browser(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """Headless chromium as root: no sandbox, no GPU, nothing fetched on its own (no
    component updates, sync or background networking), a fresh profile removed after."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="pykube-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run",
              "--disable-dev-shm-usage", f"--user-data-dir={profile}",
              f"--window-size={width},{height}"):
        opts.add_argument(a)
    service = Service(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=opts, service=service)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_js(driver: Any, script: str, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Run ``script`` (it returns a value) until it returns something truthy."""
    end = time.monotonic() + timeout
    while True:
        got = driver.execute_script(script)
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s: {script}")
        time.sleep(interval)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def page_bytes(driver: Any) -> int:
    """Bytes transferred for the first view: the document and every resource it loaded
    (the event stream, still open, counts what it has received so far: not here)."""
    return int(driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "return n.transferSize + performance.getEntriesByType('resource')"
        ".filter(r => !r.name.includes('/stream')).reduce((s, r) => s + r.transferSize, 0);"))

