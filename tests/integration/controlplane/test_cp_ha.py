"""Two control planes active-active over one etcd (Debian's etcd-server on loopback, in a
temporary directory): both serve the API with one CA and one set of tokens, one at a time
schedules (leader election through the kube-scheduler Lease); SIGKILL of the leader hands
scheduling to the other, and a watch resumes on the other API server from its last
resourceVersion."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, FakeNode, wait_for
from test_cp_semantics import Raw

from pykubelet.controlplane.storage.etcdserver import EtcdServer

LEASE = ["--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
         "--leader-elect-retry-period", "500ms"]
LEASE_DURATION_S = 3.0


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[ControlPlaneProcess, ControlPlaneProcess]]:
    etcd = EtcdServer(tmp_path / "etcd")
    etcd.start()
    cps = [ControlPlaneProcess(tmp_path / f"cp{i}", extra_args=LEASE, etcd_url=etcd.client_url)
           for i in range(2)]
    try:
        for cp in cps:
            cp.start()
        yield cps[0], cps[1]
    finally:
        for cp in cps:
            cp.stop()
        etcd.remove()


def identity(cp: ControlPlaneProcess, timeout: float = 10.0) -> str:
    """The identity the control plane logs once started (the line follows the kubeconfig,
    which is what ControlPlaneProcess.start waits for: poll for it)."""
    end = time.monotonic() + timeout
    while True:
        for line in cp.log_path.read_text().splitlines():
            if "; identity " in line:
                return line.rsplit("; identity ", 1)[1].strip()
        if time.monotonic() > end:
            raise AssertionError("no identity in the control plane's log")
        time.sleep(0.05)


def holder(raw: Raw, name: str = "kube-scheduler") -> str:
    code, lease = raw("GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}")
    return str(lease["spec"].get("holderIdentity") or "") if code == 200 else ""


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def node_of(raw: Raw, name: str) -> str:
    code, body = raw("GET", f"/api/v1/namespaces/default/pods/{name}")
    return str(body["spec"].get("nodeName") or "") if code == 200 else ""


def test_sigkill_of_the_leader_hands_scheduling_to_the_other(
        pair: tuple[ControlPlaneProcess, ControlPlaneProcess]) -> None:
    a, b = pair
    raws = {identity(a): (a, Raw(a)), identity(b): (b, Raw(b))}
    wait_for(lambda: holder(Raw(a)) in raws, what="a scheduler leader")
    leader_id = holder(Raw(a))
    leader, _ = raws.pop(leader_id)
    (survivor, raw) = next(iter(raws.values()))
    wait_for(lambda: holder(raw, "kube-controller-manager") in (leader_id, identity(survivor)),
             what="a controllers leader")
    node = FakeNode(survivor, "ha-node")
    try:
        raw("POST", "/api/v1/namespaces/default/pods", pod("before"))
        wait_for(lambda: node_of(raw, "before") == "ha-node", what="bound by the leader")
        leader.kill()
        killed = time.monotonic()
        code, _ = raw("POST", "/api/v1/namespaces/default/pods", pod("after"))
        assert code == 201
        wait_for(lambda: node_of(raw, "after") == "ha-node", timeout=20,
                 interval=0.05, what="bound after the leader died")
        took = time.monotonic() - killed
        assert holder(raw) == identity(survivor)
        # the lease stood still for its duration before the survivor could take it
        assert took >= LEASE_DURATION_S * 0.5
        print(f"failover: kill -> next pod bound in {took:.2f}s (lease {LEASE_DURATION_S}s)")
    finally:
        node.delete()


def test_a_watch_resumes_on_the_other_api_server_without_gaps_or_repeats(
        pair: tuple[ControlPlaneProcess, ControlPlaneProcess]) -> None:
    import urllib3

    a, b = pair
    ra, rb = Raw(a), Raw(b)
    code, listed = ra("GET", "/api/v1/namespaces/default/configmaps")
    assert code == 200
    rv = listed["metadata"]["resourceVersion"]
    made = []
    for i in range(5):
        code, cm = ra("POST", "/api/v1/namespaces/default/configmaps",
                      {"metadata": {"name": f"w{i}"}, "data": {"i": str(i)}})
        assert code == 201
        made.append(cm["metadata"]["resourceVersion"])
    # a client saw the first three through a (now gone) server; it resumes on the other
    seen_rv = made[2]
    a.kill()
    resp = rb.pool.request(
        "GET", rb.base + f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion="
        f"{seen_rv}&timeoutSeconds=2", headers={"Authorization": f"Bearer {rb.token}"},
        preload_content=True, timeout=urllib3.Timeout(total=10))
    events = [json.loads(line) for line in resp.data.splitlines() if line.strip()]
    got = [(e["type"], e["object"]["metadata"]["name"]) for e in events
           if e["type"] != "BOOKMARK"]
    assert got == [("ADDED", "w3"), ("ADDED", "w4")]
    assert int(rv) < int(seen_rv)


def test_one_ca_and_one_set_of_tokens_serve_on_every_api_server(
        pair: tuple[ControlPlaneProcess, ControlPlaneProcess], tmp_path: Path) -> None:
    from pykubelet.client.bootstrap import join
    from pykubelet.controlplane.pki import ca_cert_hash

    a, b = pair
    assert (a.root / "pki" / "ca.crt").read_bytes() == (b.root / "pki" / "ca.crt").read_bytes()
    ra, rb = Raw(a), Raw(b)
    on_b = Raw(a)  # a's kubeconfig (CA and admin token), pointed at b
    on_b.base = rb.base
    code, _ = on_b("GET", "/api/v1/namespaces")
    assert code == 200
    # a node joins through a; its token is good on b (within the refresh)
    ca = (a.root / "pki" / "ca.crt").read_bytes()
    join_token = json.loads((a.root / "tokens.json").read_text())["join"]
    creds = join(ra.base, join_token, ca_cert_hash(ca), "ha-joiner", [],
                 tmp_path / "node-state")

    def node_token_works_on_b() -> bool:
        code, _ = rb("GET", "/api/v1/nodes/ha-joiner", token=creds.token)
        return code in (200, 404)  # authenticated (403 would be a known token, not allowed)

    wait_for(node_token_works_on_b, timeout=10, what="the node's token accepted by b")


def test_a_root_with_another_ca_is_refused_and_left_alone(
        pair: tuple[ControlPlaneProcess, ControlPlaneProcess], tmp_path: Path) -> None:
    from pykubelet.controlplane.pki import PKI

    a, _ = pair
    stranger = PKI(tmp_path / "stranger")
    stranger.ensure_ca()
    before = stranger.ca_pem
    proc = ControlPlaneProcess(tmp_path / "stranger", etcd_url=a.etcd_url)
    with pytest.raises(RuntimeError, match="not the one the other control planes"):
        proc.start(timeout=20)
    assert stranger.ca_pem == before


def test_a_service_account_token_one_server_issued_works_on_the_other(
        pair: tuple[ControlPlaneProcess, ControlPlaneProcess]) -> None:
    """Both API servers sign and verify with one sa.key (shared through etcd, as the CA)."""
    a, b = pair
    ra, rb = Raw(a), Raw(b)
    assert (a.root / "pki" / "sa.key").read_bytes() == (b.root / "pki" / "sa.key").read_bytes()
    code, body = ra("POST", "/api/v1/namespaces/default/serviceaccounts",
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ha"}})
    assert code == 201, body
    # b's watch cache has the account before b judges the token
    wait_for(lambda: rb("GET", "/api/v1/namespaces/default/serviceaccounts/ha")[0] == 200,
             timeout=10, what="the account on b")
    code, tr = ra("POST", "/api/v1/namespaces/default/serviceaccounts/ha/token",
                  {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {}})
    assert code == 201, tr
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    for raw in (ra, rb):
        code, body = raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review,
                         token=tr["status"]["token"])
        assert code == 201, body
        assert body["status"]["userInfo"]["username"] == "system:serviceaccount:default:ha"
