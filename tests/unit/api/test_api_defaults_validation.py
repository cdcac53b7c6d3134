"""API server defaults and validation messages, and manifest loading."""

from __future__ import annotations

import copy

import pytest

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import default_pull_policy, set_defaults_pod
from pykubelet.api.errors import APIError, ValidationError
from pykubelet.api.manifest import ManifestError, load_pods
from pykubelet.api.validation import pod_errors

MINIMAL = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "app", "image": "busybox"}]},
}


def defaulted(obj: dict) -> object:
    return set_defaults_pod(decode_pod(obj))


def test_pod_defaults() -> None:
    pod = defaulted(MINIMAL)
    assert pod.metadata.namespace == "default"
    assert pod.spec.restart_policy == "Always"
    assert pod.spec.termination_grace_period_seconds == 30
    assert pod.spec.dns_policy == "ClusterFirst"
    assert pod.spec.scheduler_name == "default-scheduler"
    c = pod.spec.containers[0]
    assert c.image_pull_policy == "Always"
    assert c.termination_message_path == "/dev/termination-log"
    assert c.termination_message_policy == "File"


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("localhost:5000/busybox", "Always"),
        ("localhost:5000/busybox:1.0", "IfNotPresent"),
        ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_default_pull_policy_by_tag(image: str, policy: str) -> None:
    assert default_pull_policy(image) == policy


def test_probe_port_volume_and_resource_defaults() -> None:
    obj = copy.deepcopy(MINIMAL)
    c = obj["spec"]["containers"][0]
    c["livenessProbe"] = {"httpGet": {"port": 80}}
    c["ports"] = [{"containerPort": 80}]
    c["resources"] = {"limits": {"cpu": "1"}, "requests": {"memory": "1Mi"}}
    c["env"] = [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    obj["spec"]["volumes"] = [{"name": "v"}]
    pod = defaulted(obj)
    c2 = pod.spec.containers[0]
    p = c2.liveness_probe
    assert (p.timeout_seconds, p.period_seconds, p.success_threshold, p.failure_threshold) == (
        1,
        10,
        1,
        3,
    )
    assert (p.http_get.path, p.http_get.scheme) == ("/", "HTTP")
    assert c2.ports[0].protocol == "TCP"
    assert set(c2.resources.requests) == {"cpu", "memory"}
    assert c2.resources.requests["cpu"].text == "1"
    assert c2.env[0].value_from.field_ref.api_version == "v1"
    assert pod.spec.volumes[0].empty_dir is not None


def test_host_network_defaults_host_port() -> None:
    obj = copy.deepcopy(MINIMAL)
    obj["spec"]["hostNetwork"] = True
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
    assert defaulted(obj).spec.containers[0].ports[0].host_port == 8080


def errors_for(change: dict, container: dict | None = None) -> list[str]:
    obj = copy.deepcopy(MINIMAL)
    obj["spec"].update(change)
    if container:
        obj["spec"]["containers"][0].update(container)
    return [str(e) for e in pod_errors(defaulted(obj))]


VALIDATION_TABLE = [
    ({}, None, []),
    (
        {"restartPolicy": "Sometimes"},
        None,
        [
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"'
        ],
    ),
    ({}, {"image": ""}, ["spec.containers[0].image: Required value"]),
    (
        {},
        {"name": "App"},
        [
            'spec.containers[0].name: Invalid value: "App": a lowercase RFC 1123 label must '
            "consist "
            "of lower case alphanumeric characters or '-', and must start and end with an "
            "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ],
    ),
    (
        {"initContainers": [{"name": "app", "image": "x"}]},
        None,
        ['spec.containers[0].name: Duplicate value: "app"'],
    ),
    (
        {},
        {"imagePullPolicy": "Sometimes"},
        [
            'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: '
            '"Always", "IfNotPresent", "Never"'
        ],
    ),
    (
        {},
        {"livenessProbe": {"periodSeconds": 5}},
        ["spec.containers[0].livenessProbe: Required value: must specify a handler type"],
    ),
    (
        {},
        {"readinessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}},
        [
            "spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 "
            "handler type"
        ],
    ),
    (
        {},
        {"livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}},
        ["spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"],
    ),
    (
        {},
        {"livenessProbe": {"tcpSocket": {"port": "metrics"}}},
        [
            'spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: "metrics": must be a '
            "container port name"
        ],
    ),
    (
        {},
        {"volumeMounts": [{"name": "data", "mountPath": "/d"}]},
        ['spec.containers[0].volumeMounts[0].name: Not found: "data"'],
    ),
    (
        {},
        {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}},
        [
            'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
            "to cpu limit of 1"
        ],
    ),
    (
        {},
        {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.foo"}}}]},
        [
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "
            '"spec.foo": '
            'supported values: "metadata.name", "metadata.namespace", "metadata.uid", '
            '"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", '
            '"status.podIP", "status.podIPs"'
        ],
    ),
    (
        {},
        {
            "env": [
                {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}
            ]
        },
        [],
    ),
    (
        {"volumes": [{"name": "v", "emptyDir": {"medium": "Disk"}}]},
        None,
        [
            'spec.volumes[0].emptyDir.medium: Unsupported value: "Disk": supported values: "", '
            '"Memory"'
        ],
    ),
    (
        {"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]},
        None,
        ["spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"],
    ),
    (
        {"volumes": [{"name": "v", "hostPath": {"path": ""}}]},
        None,
        ["spec.volumes[0].hostPath.path: Required value"],
    ),
    (
        {"activeDeadlineSeconds": 0},
        None,
        [
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
            "inclusive"
        ],
    ),
    (
        {"terminationGracePeriodSeconds": -1},
        None,
        [
            "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal "
            "to 0"
        ],
    ),
    ({"containers": []}, None, ["spec.containers: Required value"]),
    (
        {"hostNetwork": True},
        {"ports": [{"containerPort": 80, "hostPort": 8080}]},
        [
            "spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match "
            "`containerPort` when `hostNetwork` is true"
        ],
    ),
    (
        {
            "initContainers": [
                {"name": "i", "image": "x", "lifecycle": {"preStop": {"exec": {"command": ["t"]}}}}
            ]
        },
        None,
        [
            "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers "
            "without restartPolicy=Always"
        ],
    ),
    (
        {
            "initContainers": [
                {"name": "i", "image": "x", "readinessProbe": {"exec": {"command": ["t"]}}}
            ]
        },
        None,
        [
            "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers "
            "without restartPolicy=Always"
        ],
    ),
]


@pytest.mark.parametrize(("spec", "container", "expected"), VALIDATION_TABLE)
def test_validation_messages(spec: dict, container: dict | None, expected: list[str]) -> None:
    assert errors_for(spec, container) == expected


MANIFEST = """
apiVersion: v1
kind: Pod
metadata:
  name: one
  creationTimestamp: 2024-01-01T00:00:00Z
spec:
  containers:
  - name: c
    image: busybox:1.36
---
# an empty document is skipped
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: two}
  spec:
    containers: [{name: c, image: busybox}]
"""


def test_load_pods_multi_doc_and_list() -> None:
    pods = load_pods(MANIFEST)
    assert [p.metadata.name for p in pods] == ["one", "two"]
    assert pods[0].metadata.creation_timestamp == "2024-01-01T00:00:00Z"
    assert pods[1].spec.restart_policy == "Always"


def test_load_pods_reports_document_and_field() -> None:
    bad = MANIFEST.replace("image: busybox:1.36", "image: busybox:1.36\n    foo: 1")
    with pytest.raises(ManifestError) as exc:
        load_pods(bad, "pods.yaml")
    assert str(exc.value) == "pods.yaml (document 1): spec.containers[0].foo: unknown field"


def test_load_pods_reports_validation_errors_together() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  restartPolicy: Bad\n"
    with pytest.raises(ManifestError) as exc:
        load_pods(text)
    assert isinstance(exc.value.__cause__, ValidationError)
    assert [str(e) for e in exc.value.__cause__.errors] == [
        "spec.containers: Required value",
        'spec.restartPolicy: Unsupported value: "Bad": supported values: "Always", '
        '"OnFailure", "Never"',
    ]
    assert str(exc.value).startswith('manifest: Pod "x" is invalid: [')


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "kind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}]}\n",
            "apiVersion: Required value",
        ),
        ("a: [b\n", "invalid YAML"),
        ("- 1\n- 2\n", "expected a Pod object"),
    ],
)
def test_load_pods_rejects_bad_documents(text: str, fragment: str) -> None:
    with pytest.raises(APIError, match=r".*") as exc:
        load_pods(text)
    assert fragment in str(exc.value)
