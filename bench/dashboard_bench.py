#!/usr/bin/env python3
"""pykubectl dashboard's figures: the time from ``kubectl apply`` of a pod to its card on
the page (first drawn, and drawn in its node's column once bound), p50/p99 over N pods;
the page's weight (bytes transferred for the first view); the dashboard process's RSS.

A real ``pykubelet control-plane`` on loopback with three Node objects kept alive through
the API (no pods run: the scheduler binds, nothing starts), ``pykubectl dashboard``, and
Debian's chromium headless through selenium, as the browser test. Pods are applied one at a
time; the page records when each card is drawn (window.dashboardSeen / dashboardPlaced,
the same clock as this process). ``--screenshot FILE`` leaves a picture of the page with a
pod's decision open (the README's). Figures only: nothing here passes or fails.

    .venv/bin/python bench/dashboard_bench.py [--pods 20] [--screenshot FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration" / "controlplane"))

from cp_process import FakeNode, control_plane  # noqa: E402
from dashboard_browser import browser, dashboard, page_bytes, rss_kib, wait_js  # noqa: E402

POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {ns}}}
spec:
  containers:
  - {{name: c, image: busybox, resources: {{requests: {{cpu: {cpu}, memory: {mem}}}}}}}
"""


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=20)
    ap.add_argument("--screenshot", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dash-bench-") as tmp, \
            control_plane(Path(tmp) / "root", "sqlite") as cp:
        nodes = [FakeNode(cp, "node-1", cpu="4", memory="8Gi",
                          labels={"node-role.kubernetes.io/control-plane": ""}),
                 FakeNode(cp, "node-2", cpu="4", memory="8Gi"),
                 FakeNode(cp, "node-3", cpu="2", memory="4Gi", taints=[
                     {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}])]
        cp.kubectl("create", "namespace", "shop")
        try:
            with dashboard(cp.kubeconfig) as (url, pid), browser(1720, 860) as driver:
                driver.get(url)
                wait_js(driver, "return document.querySelectorAll('.col[data-node]')"
                                ".length >= 4")
                weight = page_bytes(driver)
                rss0 = rss_kib(pid)
                seen, placed = [], []
                sizes = [("100m", "64Mi"), ("250m", "256Mi"), ("500m", "512Mi")]
                for i in range(args.pods):
                    name = f"web-{i}"
                    cpu, mem = sizes[i % len(sizes)]
                    t0 = time.time()
                    cp.kubectl("apply", "-f", "-", input=POD.format(
                        name=name, ns="shop", cpu=cpu, mem=mem))
                    key = f"shop/{name}"
                    wait_js(driver, f"return window.dashboardPlaced['{key}']", timeout=10)
                    got = driver.execute_script(
                        f"return [window.dashboardSeen['{key}'], "
                        f"window.dashboardPlaced['{key}']]")
                    seen.append(got[0] / 1000 - t0)
                    placed.append(got[1] / 1000 - t0)
                rss1 = rss_kib(pid)
                print(f"pods: {args.pods}, applied one at a time with kubectl apply")
                for label, v in (("apply -> card drawn", seen),
                                 ("apply -> card in its node's column", placed)):
                    print(f"{label:36s} p50 {statistics.median(v) * 1000:6.0f} ms   "
                          f"p99 {pct(v, 99) * 1000:6.0f} ms   max {max(v) * 1000:6.0f} ms")
                print(f"page weight, first view: {weight} bytes")
                print(f"dashboard RSS: {rss0 / 1024:.1f} MiB after the first view, "
                      f"{rss1 / 1024:.1f} MiB with {args.pods} pods")
                if args.screenshot:
                    cp.kubectl("apply", "-f", "-", input=POD.format(
                        name="big-batch", ns="shop", cpu="6", mem="1Gi"))
                    card = "[data-pod='shop/web-1']"
                    wait_js(driver, "return document.querySelector("
                                    "\"[data-pod='shop/big-batch']\")")
                    time.sleep(1.0)
                    driver.execute_script(f"document.querySelector(\"{card}\").click()")
                    wait_js(driver, "return document.querySelector('#decision th.winner')")
                    time.sleep(0.5)
                    driver.save_screenshot(args.screenshot)
                    print(f"screenshot: {args.screenshot}")
        finally:
            for n in nodes:
                n.delete()


if __name__ == "__main__":
    main()
