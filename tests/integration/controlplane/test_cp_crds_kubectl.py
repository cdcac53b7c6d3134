"""CustomResourceDefinitions with the unmodified kubectl and the official Python client
against a control-plane process (issue 28 item 2): apply a CRD, wait for Established,
``kubectl get crd``, apply a custom resource (default client-side --validate), list it
by plural and short name with its printer columns, a bad object refused with upstream's
422 and nothing written, a CRD whose name is not plural.group refused, a watch of custom
resources through the Python client, and deleting the CRD deleting its objects."""

from __future__ import annotations

import json
import threading
import time
import warnings
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402

CP_BACKENDS = ("sqlite",)
GROUP = "stable.example.com"

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %(plural)s.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: %(plural)s, singular: %(singular)s, kind: %(kind)s, shortNames: [%(short)s]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Size, type: string, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              replicas: {type: integer, minimum: 1, default: 1}
              size: {type: string, enum: [small, large]}
          status:
            type: object
            properties:
              phase: {type: string}
"""

CR = """
apiVersion: stable.example.com/v1
kind: %(kind)s
metadata: {name: %(name)s}
spec: %(spec)s
"""


def crd(plural: str, kind: str, short: str) -> str:
    return CRD % {"plural": plural, "singular": kind.lower(), "kind": kind, "short": short}


def api_for(cp: ControlPlaneProcess) -> Any:
    warnings.simplefilter("ignore", DeprecationWarning)
    return config.new_client_from_config(str(cp.kubeconfig))


@pytest.fixture
def widgets(cp: ControlPlaneProcess) -> Any:
    out = cp.kubectl("apply", "-f", "-", input=crd("widgets", "Widget", "wdg")).stdout
    assert out.strip() == f"customresourcedefinition.apiextensions.k8s.io/widgets.{GROUP} created"
    cp.kubectl("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=20s")
    yield "widgets"
    cp.kubectl("delete", "crd", f"widgets.{GROUP}", "--ignore-not-found", "--timeout=30s",
               check=False)


def test_crd_and_custom_resources_with_kubectl(cp: ControlPlaneProcess, ns: str,
                                               widgets: str) -> None:
    rows = [line.split() for line in cp.kubectl("get", "crd").stdout.splitlines()]
    assert rows[0] == ["NAME", "CREATED", "AT"]
    assert [r[0] for r in rows[1:]] == [f"widgets.{GROUP}"]
    out = cp.kubectl("apply", "-n", ns, "-f", "-",
                     input=CR % {"kind": "Widget", "name": "w1", "spec": "{size: small}"})
    assert out.stdout.strip() == f"widget.{GROUP}/w1 created"
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=CR % {"kind": "Widget", "name": "w2", "spec": "{size: large, replicas: 3}"})
    for what in ("widgets", "wdg", f"widgets.{GROUP}", "widget"):
        rows = [line.split() for line in cp.kubectl("get", what, "-n", ns).stdout.splitlines()]
        assert rows[0] == ["NAME", "REPLICAS", "SIZE", "AGE"], what
        assert [r[:3] for r in rows[1:]] == [["w1", "1", "small"], ["w2", "3", "large"]], what
    got = json.loads(cp.kubectl("get", "widget", "w1", "-n", ns, "-o", "json").stdout)
    assert got["spec"] == {"size": "small", "replicas": 1}  # defaulted by the schema
    explained = cp.kubectl("explain", "widgets.spec").stdout  # from the OpenAPI v3 document
    assert "replicas\t<integer>" in explained, explained
    assert "size\t<string>" in explained, explained
    # apply again with a change: kubectl's merge patch of a custom resource
    out = cp.kubectl("apply", "-n", ns, "-f", "-",
                     input=CR % {"kind": "Widget", "name": "w1", "spec": "{size: large}"})
    assert out.stdout.strip() == f"widget.{GROUP}/w1 configured"
    cp.kubectl("patch", "widget", "w1", "-n", ns, "--subresource=status", "--type=merge",
               "-p", '{"status": {"phase": "Ready"}}')
    got = json.loads(cp.kubectl("get", "widget", "w1", "-n", ns, "-o", "json").stdout)
    assert got["spec"]["size"] == "large"
    assert got["status"] == {"phase": "Ready"}
    assert got["metadata"]["generation"] == 2


def test_bad_objects_are_refused_in_upstreams_words(cp: ControlPlaneProcess, ns: str,
                                                   widgets: str) -> None:
    res = cp.kubectl("apply", "-n", ns, "-f", "-", check=False,
                     input=CR % {"kind": "Widget", "name": "bad",
                                 "spec": "{size: small, replicas: three}"})
    assert res.returncode != 0
    assert ('The Widget "bad" is invalid: spec.replicas: Invalid value: "string": '
            'spec.replicas in body must be of type integer: "string"') in res.stderr, res.stderr
    res = cp.kubectl("get", "widget", "bad", "-n", ns, check=False)
    assert res.returncode != 0
    assert "NotFound" in res.stderr
    wrong = crd("gadgets", "Gadget", "gdg").replace("name: gadgets.stable.example.com",
                                                     "name: gizmos.stable.example.com")
    res = cp.kubectl("apply", "-f", "-", input=wrong, check=False)
    assert res.returncode != 0
    assert ('The CustomResourceDefinition "gizmos.stable.example.com" is invalid: '
            'metadata.name: Invalid value: "gizmos.stable.example.com": must be '
            'spec.names.plural+"."+spec.group') in res.stderr, res.stderr
    assert cp.kubectl("get", "crd", "gizmos.stable.example.com", check=False).returncode != 0


def test_watch_custom_resources_with_the_python_client(cp: ControlPlaneProcess, ns: str,
                                                       widgets: str) -> None:
    objects = client.CustomObjectsApi(api_for(cp))
    start = objects.list_namespaced_custom_object(GROUP, "v1", ns, "widgets")[
        "metadata"]["resourceVersion"]
    got: list[tuple[str, str, Any]] = []

    def consume() -> None:
        w = watch.Watch()
        for ev in w.stream(objects.list_namespaced_custom_object, GROUP, "v1", ns, "widgets",
                           resource_version=start, timeout_seconds=10):
            obj = ev["object"]
            got.append((ev["type"], obj["metadata"]["name"], obj["spec"].get("replicas")))
            if ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "ww"},
            "spec": {"size": "small"}}
    objects.create_namespaced_custom_object(GROUP, "v1", ns, "widgets", body)
    objects.patch_namespaced_custom_object(GROUP, "v1", ns, "widgets", "ww",
                                           {"spec": {"replicas": 4}})
    objects.delete_namespaced_custom_object(GROUP, "v1", ns, "widgets", "ww")
    t.join(15)
    assert got == [("ADDED", "ww", 1), ("MODIFIED", "ww", 4), ("DELETED", "ww", 4)]


def test_deleting_the_crd_deletes_its_objects(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("apply", "-f", "-", input=crd("doomeds", "Doomed", "dmd"))
    cp.kubectl("wait", "--for=condition=Established", f"crd/doomeds.{GROUP}", "--timeout=20s")
    for name in ("a", "b"):
        cp.kubectl("apply", "-n", ns, "-f", "-",
                   input=CR % {"kind": "Doomed", "name": name, "spec": "{size: small}"})
    out = cp.kubectl("delete", "crd", f"doomeds.{GROUP}", "--timeout=30s").stdout
    assert out.strip() == f'customresourcedefinition.apiextensions.k8s.io "doomeds.{GROUP}" deleted'
    wait_for(lambda: cp.kubectl("get", "crd", f"doomeds.{GROUP}", check=False).returncode != 0,
             what="the CRD gone")
    res = cp.kubectl("get", "doomeds", "-n", ns, check=False)
    assert res.returncode != 0
    # (kubectl's discovery cache may still name the resource: the list is then a 404)
    assert ('the server doesn\'t have a resource type "doomeds"' in res.stderr
            or "the server could not find the requested resource" in res.stderr), res.stderr
    # made again, it starts empty: the objects went with it
    cp.kubectl("apply", "-f", "-", input=crd("doomeds", "Doomed", "dmd"))
    try:
        cp.kubectl("wait", "--for=condition=Established", f"crd/doomeds.{GROUP}",
                   "--timeout=20s")
        items = json.loads(cp.kubectl("get", "doomeds", "-n", ns, "-o", "json").stdout)["items"]
        assert items == []
    finally:
        cp.kubectl("delete", "crd", f"doomeds.{GROUP}", "--timeout=30s", check=False)
