"""Server-side apply with the real kubectl and the official Python client against a
control plane process (issue 28 item 1): ``kubectl apply --server-side`` creates and
updates, a label dropped from the manifest goes, a second field manager changing replicas
gets upstream's 409 conflict, ``--force-conflicts`` takes the field; the Python client's
apply (typed ``_content_type`` and the dynamic client's ``server_side_apply``) works."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from cp_process import ControlPlaneProcess

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, dynamic  # noqa: E402

CP_BACKENDS = ("sqlite",)  # the API's apply: the store is not the point

DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {labels}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: c
        image: nginx
        args: ["-g", "daemon off;"]
        ports: [{{containerPort: 80}}]
"""


def manifest(replicas: int = 1, labels: str = "{app: web}") -> str:
    return DEPLOY.format(replicas=replicas, labels=labels)


def get(cp: ControlPlaneProcess, ns: str, *extra: str) -> dict[str, Any]:
    out = cp.kubectl("get", "deployment", "web", "-n", ns, "-o", "json", *extra).stdout
    obj: dict[str, Any] = json.loads(out)
    return obj


def test_kubectl_apply_server_side(cp: ControlPlaneProcess, ns: str) -> None:
    out = cp.kubectl("apply", "--server-side", "-n", ns, "-f", "-",
                     input=manifest(labels="{app: web, tier: fe}"))
    assert out.stdout.strip() == "deployment.apps/web serverside-applied"
    obj = get(cp, ns, "--show-managed-fields")
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["operation"] == "Apply"]
    assert entry["manager"] == "kubectl"
    assert entry["apiVersion"] == "apps/v1"
    containers = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert set(containers['k:{"name":"c"}']) == {".", "f:name", "f:image", "f:args",
                                                 "f:ports"}
    assert "managedFields" not in get(cp, ns)["metadata"]  # kubectl hides them by default
    # the label dropped from the manifest is removed
    out = cp.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest())
    assert out.stdout.strip() == "deployment.apps/web serverside-applied"
    assert get(cp, ns)["metadata"]["labels"] == {"app": "web"}
    # another manager changing replicas conflicts, with upstream's message
    res = cp.kubectl("apply", "--server-side", "--field-manager=other", "-n", ns, "-f", "-",
                     input=manifest(replicas=3), check=False)
    assert res.returncode != 0
    assert ('Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
            in res.stderr), res.stderr
    assert get(cp, ns)["spec"]["replicas"] == 1
    out = cp.kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts",
                     "-n", ns, "-f", "-", input=manifest(replicas=3))
    assert out.stdout.strip() == "deployment.apps/web serverside-applied"
    obj = get(cp, ns, "--show-managed-fields")
    assert obj["spec"]["replicas"] == 3
    owners = {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]
              if e["operation"] == "Apply"}
    assert "f:replicas" in owners["other"]["f:spec"]
    assert "f:replicas" not in owners["kubectl"]["f:spec"]
    # an imperative change is an Update under kubectl's manager name
    cp.kubectl("scale", "deployment", "web", "-n", ns, "--replicas=2")
    res = cp.kubectl("apply", "--server-side", "--field-manager=other", "-n", ns, "-f", "-",
                     input=manifest(replicas=3), check=False)
    assert res.returncode != 0
    assert ('Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
            'using apps/v1: .spec.replicas' in res.stderr), res.stderr


def test_python_client_server_side_apply(cp: ControlPlaneProcess, ns: str) -> None:
    warnings.simplefilter("ignore", DeprecationWarning)
    api = config.new_client_from_config(str(cp.kubeconfig))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py-ssa"},
            "data": {"a": "1"}}
    v1 = client.CoreV1Api(api)
    made = v1.patch_namespaced_config_map("py-ssa", ns, body, field_manager="py",
                                          _content_type="application/apply-patch+yaml")
    assert made.data == {"a": "1"}
    assert [(m.manager, m.operation) for m in made.metadata.managed_fields] == [
        ("py", "Apply")]
    dyn = dynamic.DynamicClient(api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    with pytest.raises(dynamic.exceptions.ConflictError) as err:
        dyn.server_side_apply(cms, {**body, "data": {"a": "2"}}, namespace=ns,
                              field_manager="dyn")
    assert 'conflict with \\"py\\": .data.a' in str(err.value.body) or (
        'conflict with "py": .data.a' in str(err.value.body))
    got = dyn.server_side_apply(cms, {**body, "data": {"a": "2"}}, namespace=ns,
                                field_manager="dyn", force_conflicts=True)
    assert got.data.a == "2"
