"""Strict decoding naming the bad field, quantities, and camelCase encoding."""

from __future__ import annotations

import copy
import json

import pytest

from pykubelet.api.decode import decode_pod, encode_pod
from pykubelet.api.errors import DecodeError
from pykubelet.api.machinery.quantity import Quantity, QuantityError

BASE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "busybox:1.36",
                "command": ["sh", "-c"],
                "args": ["sleep 3600"],
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
                "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "livenessProbe": {"httpGet": {"port": 8080, "path": "/healthz"}},
                "readinessProbe": {"tcpSocket": {"port": "http"}},
                "ports": [{"name": "http", "containerPort": 8080}],
            }
        ],
        "volumes": [
            {"name": "data", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
            {"name": "host", "hostPath": {"path": "/tmp", "type": "Directory"}},
        ],
        "hostNetwork": False,
        "terminationGracePeriodSeconds": 0,
        "activeDeadlineSeconds": 60,
        "hostname": "h",
        "subdomain": "s",
    },
}


def with_change(path: list[str | int], value: object) -> dict:
    obj = copy.deepcopy(BASE)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


def test_decode_reads_kubernetes_fields_into_snake_case() -> None:
    pod = decode_pod(BASE)
    c = pod.spec.containers[0]
    assert c.command == ["sh", "-c"]
    assert c.env[1].value_from.field_ref.field_path == "metadata.name"
    assert c.resources.limits["cpu"].milli_value() == 500
    assert c.resources.limits["memory"].value() == 64 * 2**20
    assert c.liveness_probe.http_get.port == 8080
    assert c.readiness_probe.tcp_socket.port == "http"
    assert pod.spec.volumes[0].empty_dir.medium == "Memory"
    assert pod.spec.volumes[1].host_path.path == "/tmp"
    assert pod.spec.termination_grace_period_seconds == 0
    assert pod.spec.active_deadline_seconds == 60


def test_encode_round_trips_and_keeps_explicit_zero() -> None:
    pod = decode_pod(BASE)
    data = encode_pod(pod)
    assert data["spec"]["terminationGracePeriodSeconds"] == 0  # a set pointer survives
    assert "hostNetwork" not in data["spec"]  # false plain bool: omitted (omitempty)
    assert "status" not in data
    assert decode_pod(json.loads(json.dumps(data))) == pod
    assert data["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "500m", "memory": "64Mi"}


BAD_TABLE = [
    (
        ["spec", "containers", 0, "resources", "limits", "cpu"],
        "abc",
        'spec.containers[0].resources.limits.cpu: invalid quantity "abc": quantities must '
         "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    (["spec", "containers", 0, "foo"], 1, "spec.containers[0].foo: unknown field"),
    (["spec", "hostNetwork"], "yes", "spec.hostNetwork: expected boolean, got string"),
    (["spec", "containers", 0, "name"], 5, "spec.containers[0].name: expected string, got number"),
    (
        ["spec", "containers", 0, "command"],
        "sleep",
        "spec.containers[0].command: expected an array, got string",
    ),
    (
        ["spec", "terminationGracePeriodSeconds"],
        True,
        "spec.terminationGracePeriodSeconds: expected integer, got boolean",
    ),
    (
        ["spec", "containers", 0, "livenessProbe", "httpGet", "port"],
        [80],
        "spec.containers[0].livenessProbe.httpGet.port: expected an integer or a string, got array",
    ),
    (["metadata", "labels", "app"], 1, "metadata.labels.app: expected string, got number"),
    (["spec", "volumes", 0, "nfsv5"], {}, "spec.volumes[0].nfsv5: unknown field"),
    (["spec"], [], "spec: expected an object, got array"),
    (["kind"], "Deployment", "kind: expected \"Pod\", got 'Deployment'"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD_TABLE)
def test_decode_errors_name_the_field(path: list, value: object, message: str) -> None:
    with pytest.raises(DecodeError) as exc:
        decode_pod(with_change(path, value))
    assert str(exc.value) == message


def test_kubectl_get_output_metadata_is_accepted() -> None:
    obj = with_change(
        ["metadata", "managedFields"], [{"manager": "kubectl", "operation": "Update"}]
    )
    obj["metadata"]["resourceVersion"] = "42"
    obj["metadata"]["uid"] = "0b4e8a5e-0000-4000-8000-000000000001"
    pod = decode_pod(obj)
    assert pod.metadata.managed_fields[0]["manager"] == "kubectl"
    assert encode_pod(pod)["metadata"]["resourceVersion"] == "42"


def test_null_means_unset() -> None:
    pod = decode_pod(with_change(["spec", "volumes"], None))
    assert pod.spec.volumes == []
    pod = decode_pod(with_change(["spec", "activeDeadlineSeconds"], None))
    assert pod.spec.active_deadline_seconds is None


QUANTITY_TABLE = [
    ("100m", 100, 1),
    ("1", 1000, 1),
    ("1.5", 1500, 2),
    ("0.1", 100, 1),
    ("1Ki", 1024000, 1024),
    ("1Gi", 1073741824000, 1073741824),
    ("1e3", 1000000, 1000),
    ("1M", 1000000000, 1000000),
    ("1n", 1, 1),
    (2, 2000, 2),
    (0.5, 500, 1),
]


@pytest.mark.parametrize(("text", "milli", "value"), QUANTITY_TABLE)
def test_quantities(text: object, milli: int, value: int) -> None:
    q = Quantity.parse(text)
    assert q.milli_value() == milli
    assert q.value() == value


@pytest.mark.parametrize("bad", ["abc", "1.2.3", "", " 1", "1Kb", "--1", True, None, [1]])
def test_bad_quantities(bad: object) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(bad)
