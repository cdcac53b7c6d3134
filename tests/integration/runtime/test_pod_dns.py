"""A pod's /etc/resolv.conf inside a real container, as the kubelet's DNS configurer forms
it (dnsPolicy ClusterFirst with the node's clusterDNS/clusterDomain) and the runtime
writes it."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
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


HTTPD = ["sh", "-c", "mkdir -p /www && echo named-hello > /www/index.html && "
         "exec httpd -f -p 8080 -h /www"]


def _answer_everything(sock: socket.socket, stop: threading.Event) -> None:
    """A throwaway DNS responder: A 127.0.0.1 for any name (the question echoed, one
    answer pointing at it), so a lookup in the pod goes through glibc's dns module."""
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            query, peer = sock.recvfrom(512)
        except TimeoutError:
            continue
        end = 12
        while query[end]:
            end += query[end] + 1
        question = query[12:end + 5]
        qtype = struct.unpack("!H", question[-4:-2])[0]
        answers = 1 if qtype == 1 else 0
        reply = query[:2] + struct.pack("!HHHHH", 0x8180, 1, answers, 0, 0) + question
        if answers:
            reply += struct.pack("!HHHIH", 0xC00C, 1, 1, 30, 4) + socket.inet_aton("127.0.0.1")
        sock.sendto(reply, peer)


@contextlib.contextmanager
def gateway_dns(address: str) -> Iterator[None]:
    """The responder on the test bridge's gateway address (there once a pod is), port 53."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, 53))
    stop = threading.Event()
    t = threading.Thread(target=_answer_everything, args=(sock, stop), daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(5)
        sock.close()


def _wget(cri, cid: str, url: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    out = (0, "")
    for _ in range(100):  # httpd may not listen yet
        out = _exec(cri, cid, "wget", "-q", "-O-", url)
        if out[0] != 1:  # 1: refused; 139: SIGSEGV in glibc's name lookup
            break
        time.sleep(0.05)
    return out


def test_names_resolve_in_the_busybox_image(cri) -> None:
    """Names resolve inside the busybox image: wget by localhost, by the pod's hostname
    (its /etc/hosts) and by a name only DNS knows. Debian's busybox-static (glibc 2.36,
    static) has the files and dns lookups built in: it opens /etc/nsswitch.conf,
    /etc/hosts and /etc/resolv.conf and queries the nameserver without loading any
    libnss_*.so. The SIGSEGV seen in pods is busybox 1.35's ``wget -T``, whatever the
    URL (also http://127.0.0.1:1/ on the host), so no test here passes -T."""
    dns = pb.DNSConfig(servers=[cri.gateway], options=["ndots:1"])
    pod_id, pod_cfg = cri.run_pod("names", hostname="names-0", dns_config=dns)
    cri.start_container(pod_id, pod_cfg, "web", HTTPD)
    cid = cri.start_container(pod_id, pod_cfg, "client", ["sleep", "1000"])
    with gateway_dns(cri.gateway):
        for host in ("localhost", "names-0", "web.example"):
            assert _wget(cri, cid, f"http://{host}:8080/") == (0, "named-hello\n"), host
    code, text = _exec(cri, cid, "ping", "-c", "1", "-W", "2", "names-0")
    assert code == 0, text
