"""A pod's /etc/resolv.conf inside a real container, as the kubelet's DNS configurer forms
it (dnsPolicy ClusterFirst with the node's clusterDNS/clusterDomain) and the runtime
writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.kubelet.kuberuntime.sandbox_config import generate_pod_sandbox_config
from pykubelet.kubelet.network.dns import Configurer

pytestmark = [pytest.mark.root, pytest.mark.netns, pytest.mark.runc]


def _exec(cri, cid: str, *cmd: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    r = cri.runtime.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=list(cmd), timeout=20),
                             timeout=60)
    return r.exit_code, r.stdout.decode()


def test_cluster_first_resolv_conf_in_a_container(cri, tmp_path: Path) -> None:
    host = tmp_path / "resolv.conf"
    host.write_text("nameserver 192.0.2.53\nsearch node.example\noptions timeout:1\n")
    pod = decode_pod({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "dnsp", "namespace": "team-a", "uid": "u-dns"},
                      "spec": {"containers": [{"name": "c", "image": "busybox"}],
                               "dnsConfig": {"options": [{"name": "edns0"}]}}})
    set_defaults_pod(pod)
    dns = Configurer(["10.96.0.10"], "cluster.local", str(host))
    kubelet_cfg = generate_pod_sandbox_config(pod, 0, "n1", str(tmp_path / "logs"), dns)
    pod_id, pod_cfg = cri.run_pod("dnsp", dns_config=kubelet_cfg.dns_config)
    cid = cri.start_container(pod_id, pod_cfg, "c", ["sleep", "1000"])
    code, text = _exec(cri, cid, "cat", "/etc/resolv.conf")
    assert code == 0
    assert text == ("search team-a.svc.cluster.local svc.cluster.local cluster.local "
                    "node.example\nnameserver 10.96.0.10\noptions ndots:5 edns0\n")
