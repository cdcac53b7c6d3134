"""A pod's service-account token on a real node (marker root: real runc, namespaces, a
bridge; issue 21): the ServiceAccount admission mounts kube-api-access-XXXXX, the node's
agent asks the TokenRequest API for a token bound to the pod (with its own credentials)
and writes token, ca.crt and namespace; inside the container they are at
/var/run/secrets/kubernetes.io/serviceaccount. The Python client's in-cluster config
(KUBERNETES_SERVICE_HOST/PORT and those files) talks to the API as the pod's account,
judged by RBAC, and the token is refused once the pod is deleted."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for
from node_process import IMAGE, NodeProcess

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

NS = "ksa-token"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlaneProcess,
                                                                       NodeProcess]]:
    from pykubelet.runtime.image_build import build_busybox_image

    work = tmp_path_factory.mktemp("ksa")
    cp = ControlPlaneProcess(work / "cp")
    cp.start()
    archive = work / "busybox.tar"
    build_busybox_image(archive, name=IMAGE)
    base = Path(tempfile.mkdtemp(prefix="ksa-", dir="/tmp"))
    node = NodeProcess(base, "ksa-node1", 8, cp)
    try:
        node.prepare(archive)
        node.start()
        wait_for(lambda: _ready(cp, node.name), timeout=60, what="node Ready")
        yield cp, node
    finally:
        node.cleanup()
        cp.stop()


def _ready(cp: ControlPlaneProcess, name: str) -> bool:
    out = cp.kubectl("get", "node", name, "-o", "json", check=False)
    return out.returncode == 0 and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in json.loads(out.stdout).get("status", {}).get("conditions", []))


def _phase(cp: ControlPlaneProcess, name: str) -> str:
    out = cp.kubectl("get", "pod", name, "-n", NS, "-o", "json", check=False)
    return json.loads(out.stdout).get("status", {}).get("phase", "") if out.returncode == 0 \
        else ""


def test_a_pods_mounted_token_works_in_cluster_and_dies_with_the_pod(
        cluster: Any, tmp_path: Path) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    cp, node = cluster
    cp.kubectl("create", "namespace", NS)
    try:
        cp.kubectl("create", "rolebinding", "view", "-n", NS, "--clusterrole=view",
                   f"--serviceaccount={NS}:default")
        cp.kubectl("create", "-n", NS, "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
            "spec": {"nodeName": node.name, "containers": [{
                "name": "app", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"]}]}}))
        wait_for(lambda: _phase(cp, "app") == "Running", timeout=90, what="pod Running")
        files = {}
        for name in ("token", "ca.crt", "namespace"):
            files[name] = cp.kubectl("exec", "-n", NS, "app", "--", "cat",
                                     f"{MOUNT}/{name}").stdout
            (tmp_path / name).write_text(files[name])
        assert files["namespace"] == NS
        assert files["ca.crt"] == (cp.root / "pki" / "ca.crt").read_text()
        res = cp.kubectl("exec", "-n", NS, "app", "--", "touch", f"{MOUNT}/x", check=False)
        assert res.returncode != 0  # mounted read-only
        # the in-cluster config of the official client, from the pod's own files
        cfg = client.Configuration()
        InClusterConfigLoader(token_filename=str(tmp_path / "token"),
                              cert_filename=str(tmp_path / "ca.crt"),
                              environ={"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                       "KUBERNETES_SERVICE_PORT": str(cp.port)}
                              ).load_and_set(cfg)
        with client.ApiClient(cfg) as api:
            core = client.CoreV1Api(api)
            names = [p.metadata.name for p in core.list_namespaced_pod(NS).items]
            assert names == ["app"]
            with pytest.raises(ApiException) as denied:
                core.list_namespaced_pod("default")
            assert denied.value.status == 403
            assert f'User \\"system:serviceaccount:{NS}:default\\"' in denied.value.body
            # a short grace period, not a forced deletion: the agent kills with it (a forced
            # one leaves the agent the spec's 30 s, which the module's teardown then waits)
            cp.kubectl("delete", "pod", "app", "-n", NS, "--grace-period=1")
            wait_for(lambda: cp.kubectl("get", "pod", "app", "-n", NS,
                                        check=False).returncode != 0,
                     timeout=60, what="pod gone")
            with pytest.raises(ApiException) as gone:
                core.list_namespaced_pod(NS)
            assert gone.value.status == 401
    finally:
        cp.kubectl("delete", "namespace", NS, "--wait=false", check=False)
