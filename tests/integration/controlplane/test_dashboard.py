"""``pykubectl dashboard`` end to end: a real control plane with three Node objects kept
alive through the API (FakeNode: the scheduler binds to them, nothing runs), the dashboard
process, and Debian's chromium, headless, looking at its page. A screenshot of the page
with the decision table open is left in the test's tmp directory for a person to look at.
No root needed; loopback only."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from cp_process import ControlPlaneProcess, FakeNode
from dashboard_browser import browser, dashboard, page_bytes, wait_js

CP_BACKENDS = ("sqlite",)
NODES = ("dash-n1", "dash-n2", "dash-n3")


@pytest.fixture(scope="module")
def nodes(cp: ControlPlaneProcess) -> Iterator[list[FakeNode]]:
    made = [FakeNode(cp, "dash-n1", cpu="4", memory="8Gi",
                     labels={"node-role.kubernetes.io/control-plane": ""}),
            FakeNode(cp, "dash-n2", cpu="2", memory="4Gi")]
    try:
        made.append(FakeNode(cp, "dash-n3", cpu="8", memory="16Gi", taints=[
            {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]))
        yield made
    finally:
        for n in made:
            n.delete()


def pod_yaml(name: str, cpu: str, node: str = "") -> str:
    selector = f"  nodeSelector: {{kubernetes.io/hostname: {node}}}\n" if node else ""
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n{selector}"
            f"  containers:\n  - {{name: c, image: busybox, resources: {{requests: "
            f"{{cpu: {cpu}, memory: 64Mi}}}}}}\n")


def raw_get(url: str, path: str, headers: dict[str, str], method: str = "GET"
            ) -> tuple[int, bytes]:
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_proxy_reads_with_the_kubeconfigs_credentials_and_nothing_else(
        cp: ControlPlaneProcess, nodes: list[FakeNode]) -> None:
    context = yaml.safe_load(cp.kubeconfig.read_text())["current-context"]
    with dashboard(cp.kubeconfig, context=context) as (url, _):
        host = urlsplit(url).netloc
        code, body = raw_get(url, "/api/v1/nodes", {"Host": host})
        assert code == 200, body
        assert {n["metadata"]["name"] for n in json.loads(body)["items"]} >= set(NODES)
        # DNS rebinding: another name for 127.0.0.1 is refused (kubectl proxy's accept-hosts)
        code, body = raw_get(url, "/api/v1/nodes", {"Host": f"evil.example:{urlsplit(url).port}"})
        assert code == 403, body
        # another site's page
        code, _ = raw_get(url, "/api/v1/nodes", {"Host": host, "Origin": "http://evil.example"})
        assert code == 403
        # no writes, no secrets, no exec
        code, body = raw_get(url, "/api/v1/nodes/dash-n1", {"Host": host}, method="DELETE")
        assert code == 405, body
        code, _ = raw_get(url, "/api/v1/namespaces/kube-system/secrets", {"Host": host})
        assert code == 403
        code, _ = raw_get(url, "/api/v1/namespaces/default/pods/x/exec", {"Host": host})
        assert code == 403
        assert len(cp.kubectl("get", "node", "dash-n1", "-o", "name").stdout) > 0


def test_page_shows_nodes_pods_live_and_why_a_pod_is_pending(
        cp: ControlPlaneProcess, ns: str, nodes: list[FakeNode], tmp_path: Path) -> None:
    with dashboard(cp.kubeconfig) as (url, _), browser() as driver:
        driver.get(url)
        # the three nodes as columns, with their state and bars
        wait_js(driver, "return ['dash-n1','dash-n2','dash-n3'].every(n => "
                        "document.querySelector(`.col[data-node='${n}']`))")
        n3 = driver.execute_script(
            "return document.querySelector(\".col[data-node='dash-n3']\").innerText")
        assert "Ready" in n3
        assert "dedicated=batch:NoSchedule" in n3
        assert "CPU 0 / 8" in n3
        # everything the page loaded came from the dashboard itself (works offline)
        names = driver.execute_script(
            "return performance.getEntriesByType('resource').map(r => r.name)")
        assert names
        assert all(n.startswith(url) for n in names), names
        assert page_bytes(driver) > 0

        # a pod appears in its node's column within 2 s of its creation
        t0 = time.monotonic()
        cp.kubectl("apply", "-n", ns, "-f", "-", input=pod_yaml("web-1", "500m", "dash-n2"))
        wait_js(driver, f"return document.querySelector(\".col[data-node='dash-n2'] "
                        f"[data-pod='{ns}/web-1']\")", timeout=2.0)
        assert time.monotonic() - t0 < 2.0
        # and its node's CPU bar counts it
        wait_js(driver, "return document.querySelector(\".col[data-node='dash-n2']\")"
                        ".innerText.includes('CPU 500m / 2')", timeout=2.0)

        # a pod no node fits: apart, then its decision names the rejecting plugin per node
        cp.kubectl("apply", "-n", ns, "-f", "-", input=pod_yaml("huge", "6"))
        card = f".col[data-node=''] [data-pod='{ns}/huge']"
        wait_js(driver, f"return document.querySelector(\"{card}\")", timeout=5.0)
        wait_js(driver, f"return document.querySelector(\"{card}\").innerText"
                        ".includes('Unschedulable')", timeout=10.0)
        driver.execute_script(f"document.querySelector(\"{card}\").click()")
        cells = wait_js(driver, """
            const cells = [...document.querySelectorAll('#decision tr.filter td')];
            return cells.length >= 3 && cells.map(c => [c.dataset.node,
                c.querySelector('.verdict').innerText,
                (c.querySelector('.why') || {}).innerText || '']);""", timeout=10.0)
        got = {n: (verdict, plugin) for n, verdict, plugin in cells}
        for n in ("dash-n1", "dash-n2"):
            assert "rejected" in got[n][0], got
            assert got[n][1].startswith("NodeResourcesFit: Insufficient cpu"), got
        assert "rejected" in got["dash-n3"][0], got
        assert got["dash-n3"][1].startswith("TaintToleration:"), got
        # its events (FailedScheduling) and the timeline strip
        wait_js(driver, "return document.querySelector('#pod-events').innerText"
                        ".includes('FailedScheduling')", timeout=10.0)
        wait_js(driver, "return document.querySelector('#timeline').innerText"
                        ".includes('FailedScheduling')", timeout=10.0)
        # a pod two nodes fit: scores per plugin, the weighted total, the winner highlighted
        cp.kubectl("apply", "-n", ns, "-f", "-", input=pod_yaml("free", "100m"))
        placed = wait_js(driver, f"""
            const c = document.querySelector("[data-pod='{ns}/free']");
            return c && c.closest('.col').dataset.node;""", timeout=5.0)
        assert placed in ("dash-n1", "dash-n2")
        driver.execute_script(f"document.querySelector(\"[data-pod='{ns}/free']\").click()")
        table = wait_js(driver, """
            const t = document.querySelector('#decision table');
            if (!t || !t.querySelector('thead th.winner')) return null;
            return {plugins: [...t.querySelectorAll('tbody th')].map(h => h.innerText),
                    winner: t.querySelector('thead th.winner').dataset.node,
                    first: t.querySelector('thead th[data-node]').dataset.node,
                    totals: [...t.querySelectorAll('tr.total td')].map(c =>
                        [c.dataset.node, c.innerText, c.classList.contains('winner')])};
            """, timeout=10.0)
        assert table["winner"] == placed
        assert table["first"] == placed
        assert table["plugins"][0] == "Filter"
        assert "NodeResourcesFit" in table["plugins"]
        assert table["plugins"][-1] == "Total (weighted)"
        totals = {n: (int(v), winner) for n, v, winner in table["totals"] if v}
        assert set(totals) == {"dash-n1", "dash-n2"}
        assert totals[placed][1]
        assert totals[placed][0] >= max(v for v, _ in totals.values())
        driver.execute_script(f"document.querySelector(\"{card}\").click()")
        wait_js(driver, "return document.querySelector('#detail-title').innerText"
                        ".endsWith('/huge') && document.querySelector('#decision tr.filter')")

        shot = tmp_path / "dashboard.png"
        assert driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        print(f"screenshot: {shot}")

        # deleted: the card goes, the bar empties
        cp.kubectl("delete", "pod", "-n", ns, "web-1", "--grace-period=0", "--force")
        wait_js(driver, f"return !document.querySelector(\"[data-pod='{ns}/web-1']\")",
                timeout=5.0)
        wait_js(driver, "return document.querySelector(\".col[data-node='dash-n2']\")"
                        ".innerText.includes('CPU 0 / 2')", timeout=5.0)


def test_a_lost_watch_resumes_and_the_page_stays_live(
        cp: ControlPlaneProcess, ns: str, nodes: list[FakeNode]) -> None:
    with dashboard(cp.kubeconfig) as (url, _), browser() as driver:
        driver.get(url)
        wait_js(driver, "return document.querySelector(\".col[data-node='dash-n1']\")")
        assert driver.find_element("id", "conn").text == "live"
        cp.stop()  # every watch breaks; the dashboard resumes them from their resourceVersion
        wait_js(driver, "return document.querySelector('#conn').innerText == "
                        "'API unreachable'", timeout=15.0)
        cp.start()
        wait_js(driver, "return document.querySelector('#conn').innerText == 'live'",
                timeout=15.0)
        cp.kubectl("apply", "-n", ns, "-f", "-", input=pod_yaml("after", "100m", "dash-n1"))
        wait_js(driver, f"return document.querySelector(\".col[data-node='dash-n1'] "
                        f"[data-pod='{ns}/after']\")", timeout=15.0)
