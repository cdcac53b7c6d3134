"""Every served kind through the API server's door (pykubelet.api.kinds): strict decode (or
the unknown fields collected), lossless encode, defaults, validation on create and update with
upstream's messages, patch metadata and OpenAPI schemas."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from real_objects import REAL_POD

from pykubelet.api import kinds
from pykubelet.api.errors import DecodeError, ErrorType, UnknownFieldError, ValidationError


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def test_a_real_clusters_pod_round_trips_without_losing_a_field() -> None:
    pod = kinds.POD.decode(copy.deepcopy(REAL_POD))
    # typed where the code reads it ...
    assert pod.spec.containers[0].resources.limits["cpu"].milli_value() == 500
    assert pod.spec.tolerations[0].toleration_seconds == 300
    assert pod.spec.containers[0].env_from[0].prefix == "WEB_"
    # ... and kept, checked against upstream's schema, where it does not
    assert pod.spec.unmodelled["runtimeClassName"] == "runc"
    projected = pod.spec.volumes[0].projected  # typed since kubelet serves it
    assert projected is not None
    assert projected.default_mode == 420
    out = json.loads(json.dumps(kinds.POD.encode(pod)))
    assert out == _drop_nulls(REAL_POD)


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (["spec", "topologySpreadConstraints", 0, "maxSkw"], 1,
         "spec.topologySpreadConstraints[0].maxSkw"),
        (["spec", "volumes", 0, "projected", "sources", 0, "secrett"], {},
         "spec.volumes[0].projected.sources[0].secrett"),
        (["spec", "containers", 0, "envFrom", 0, "configMapRef", "nam"], "x",
         "spec.containers[0].envFrom[0].configMapRef.nam"),
        (["metadata", "labelz"], {}, "metadata.labelz"),
    ],
)
def test_unknown_fields_anywhere_are_named_or_collected(
    path: list[Any], value: Any, where: str
) -> None:
    doc = copy.deepcopy(REAL_POD)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(UnknownFieldError) as ei:
        kinds.POD.decode(copy.deepcopy(doc))
    assert str(ei.value) == f"{where}: unknown field"
    unknown: list[str] = []
    pod = kinds.POD.decode(copy.deepcopy(doc), unknown=unknown)
    assert unknown == [where]
    assert kinds.POD.encode(pod) == kinds.POD.encode(kinds.POD.decode(copy.deepcopy(REAL_POD)))
    assert kinds.POD.unknown_fields(doc) == [where]


def test_ill_typed_fields_upstream_has_but_we_do_not_type_are_errors() -> None:
    doc = copy.deepcopy(REAL_POD)
    doc["spec"]["topologySpreadConstraints"][0]["maxSkew"] = "one"
    with pytest.raises(DecodeError) as ei:
        kinds.POD.decode(doc, unknown=[])
    assert str(ei.value) == (
        "spec.topologySpreadConstraints[0].maxSkew: expected integer, got string"
    )
    doc = copy.deepcopy(REAL_POD)
    doc["spec"]["overhead"] = {"cpu": "lots"}
    with pytest.raises(DecodeError, match=r'spec\.overhead\.cpu: invalid quantity "lots"'):
        kinds.POD.decode(doc)


def test_kind_and_api_version_must_be_the_kinds() -> None:
    with pytest.raises(DecodeError, match="apiVersion: expected \"v1\", got 'apps/v1'"):
        kinds.POD.decode({"apiVersion": "apps/v1", "kind": "Pod"})
    with pytest.raises(DecodeError, match="kind"):
        kinds.LEASE.decode({"apiVersion": "coordination.k8s.io/v1", "kind": "Pod"})
    lease = kinds.decode_any(
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n1"}}
    )
    assert lease.metadata.name == "n1"
    assert kinds.by_resource("coordination.k8s.io", "leases") is kinds.LEASE


# ----------------------------------------------------------------------- the other kinds

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}},
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24"],
        "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
    },
    "status": {
        "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "lastHeartbeatTime": "2024-05-01T10:00:00Z",
                "lastTransitionTime": "2024-05-01T09:00:00Z",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            }
        ],
        "addresses": [{"type": "InternalIP", "address": "10.250.0.2"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1.0",
            "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7",
            "kubeletVersion": "v1.32.0", "kubeProxyVersion": "", "operatingSystem": "linux",
            "architecture": "amd64",
        },
        "images": [{"names": ["nginx:1.25"], "sizeBytes": 70000000}],
        "runtimeHandlers": [{"name": "runc", "features": {"recursiveReadOnlyMounts": True}}],
    },
}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


SAMPLES: dict[str, dict[str, Any]] = {
    "Node": NODE,
    "Namespace": {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a"},
        "spec": {},
        "status": {},
    },
    "Event": {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.17c", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1"},
        "reason": "Scheduled",
        "message": "Successfully assigned default/web to node-1",
        "source": {"component": "default-scheduler"},
        "firstTimestamp": "2024-05-01T10:00:00Z",
        "lastTimestamp": "2024-05-01T10:00:00Z",
        "count": 1,
        "type": "Normal",
        "reportingComponent": "",
        "reportingInstance": "",
    },
    "ConfigMap": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "web-config", "namespace": "default"},
        "data": {"nginx.conf": "events {}"},
        "binaryData": {"logo.png": _b64("\x89PNG")},
    },
    "Secret": {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "web-tls", "namespace": "default"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": _b64("cert"), "tls.key": _b64("key")},
    },
    "Binding": {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web", "namespace": "default"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    },
    "Lease": {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "node-1", "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 40,
            "renewTime": "2024-05-01T10:00:00.123456Z",
        },
    },
    "PriorityClass": {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        "description": "important",
        "preemptionPolicy": "PreemptLowerPriority",
    },
    "PodDisruptionBudget": {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "disruptionsAllowed": 1,
            "currentHealthy": 2,
            "desiredHealthy": 1,
            "expectedPods": 2,
            "observedGeneration": 1,
        },
    },
    "Eviction": {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 0},
    },
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_kind_round_trips_and_is_valid(name: str) -> None:
    sample = SAMPLES[name]
    kind = kinds.by_kind(sample["apiVersion"], sample["kind"])
    obj = kind.decode(copy.deepcopy(sample))
    assert json.loads(json.dumps(kind.encode(obj))) == sample
    kind.check(kind.set_defaults(obj))


def test_defaults_of_the_other_kinds() -> None:
    node = kinds.NODE.set_defaults(kinds.NODE.decode(copy.deepcopy(NODE)))
    assert node.status.allocatable["cpu"].text == "2"
    ns = kinds.NAMESPACE.set_defaults(kinds.NAMESPACE.decode(SAMPLES["Namespace"]))
    assert ns.metadata.labels == {"kubernetes.io/metadata.name": "team-a"}
    assert ns.status.phase == "Active"
    assert ns.spec.finalizers == ["kubernetes"]
    secret = kinds.SECRET.decode(
        {"metadata": {"name": "s", "namespace": "d"}, "stringData": {"password": "hunter2"}}
    )
    kinds.SECRET.set_defaults(secret)
    assert secret.type == "Opaque"
    assert secret.data == {"password": _b64("hunter2")}
    assert "stringData" not in kinds.SECRET.encode(secret)
    pc = kinds.PRIORITY_CLASS.set_defaults(
        kinds.PRIORITY_CLASS.decode({"metadata": {"name": "p"}, "value": 1})
    )
    assert pc.preemption_policy == "PreemptLowerPriority"


def test_secret_data_must_be_base64() -> None:
    with pytest.raises(DecodeError, match=r"data\.key: illegal base64 data"):
        kinds.SECRET.decode({"metadata": {"name": "s"}, "data": {"key": "not base64!"}})


def _errors(kind: kinds.Kind[Any], doc: dict[str, Any]) -> list[str]:
    return [str(e) for e in kind.validate(kind.set_defaults(kind.decode(doc)))]


LABEL_KEY_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def test_object_meta_rules_with_upstreams_messages() -> None:
    doc = {
        "metadata": {
            "name": "c",
            "namespace": "default",
            "labels": {"-bad": "ok", "good": "bad value!"},
            "annotations": {"big": "x" * (256 * 1024)},
        }
    }
    errs = _errors(kinds.CONFIG_MAP, doc)
    assert errs[0] == f'metadata.labels: Invalid value: "-bad": {LABEL_KEY_MSG}'
    assert errs[1].startswith('metadata.labels: Invalid value: "bad value!": a valid label must')
    assert errs[2] == "metadata.annotations: Too long: must have at most 262144 bytes"
    assert _errors(kinds.NODE, {"metadata": {"name": "n", "namespace": "x"}}) == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]
    assert _errors(kinds.LEASE, {"metadata": {"name": "l"}}) == [
        "metadata.namespace: Required value"
    ]
    ns_errs = _errors(kinds.NAMESPACE, {"metadata": {"name": "a.b"}})
    assert ns_errs[0].startswith('metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label')


@pytest.mark.parametrize(
    ("kind", "doc", "expected"),
    [
        (kinds.NODE,
         {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}},
         'spec.taints[0].effect: Unsupported value: "Sometimes": supported values: '
         '"NoSchedule", "PreferNoSchedule", "NoExecute"'),
        (kinds.BINDING, {"metadata": {"name": "p", "namespace": "d"}, "target": {}},
         "target.name: Required value"),
        (kinds.LEASE,
         {"metadata": {"name": "l", "namespace": "d"}, "spec": {"leaseDurationSeconds": 0}},
         "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
        (kinds.PRIORITY_CLASS, {"metadata": {"name": "big"}, "value": 2000000000},
         "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"),
        (kinds.PRIORITY_CLASS, {"metadata": {"name": "system-mine"}, "value": 1},
         "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
         "for system use only. error: system-mine is not a known system priority class"),
        (kinds.POD_DISRUPTION_BUDGET,
         {"metadata": {"name": "b", "namespace": "d"},
          "spec": {"minAvailable": 1, "maxUnavailable": "150%"}},
         "spec.maxUnavailable: Invalid value: 150%: must not be greater than 100%"),
        (kinds.POD_DISRUPTION_BUDGET,
         {"metadata": {"name": "b", "namespace": "d"},
          "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}},
         "spec.selector.matchExpressions[0].values: Required value: must be specified when "
         "`operator` is 'In' or 'NotIn'"),
        (kinds.CONFIG_MAP, {"metadata": {"name": "c", "namespace": "d"}, "data": {"..x": "1"}},
         'data[..x]: Invalid value: "..x": must not start with \'..\''),
        (kinds.SECRET,
         {"metadata": {"name": "s", "namespace": "d"}, "type": "kubernetes.io/tls", "data": {}},
         "data[tls.key]: Required value"),
        (kinds.EVENT,
         {"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"namespace": "b"}},
         'involvedObject.namespace: Invalid value: "b": does not match event.namespace'),
        (kinds.EVICTION,
         {"metadata": {"name": "p", "namespace": "d"},
          "deleteOptions": {"propagationPolicy": "Sometimes"}},
         'deleteOptions.propagationPolicy: Unsupported value: "Sometimes": supported values: '
         '"Foreground", "Background", "Orphan", "nil"'),
    ],
)
def test_kind_rules(kind: kinds.Kind[Any], doc: dict[str, Any], expected: str) -> None:
    assert expected in _errors(kind, doc)


# ----------------------------------------------------------------------- updates


def _pod() -> Any:
    pod = kinds.POD.decode(copy.deepcopy(REAL_POD))
    return kinds.POD.set_defaults(pod)


def test_pod_update_may_change_images_deadline_and_add_tolerations() -> None:
    old = _pod()
    new = _pod()
    new.spec.containers[0].image = "nginx:1.26"
    new.spec.active_deadline_seconds = 60
    new.metadata.labels["extra"] = "yes"
    new.spec.tolerations.append(copy.deepcopy(new.spec.tolerations[0]))
    new.spec.tolerations[-1].key = "other"
    assert kinds.POD.validate_update(new, old) == []


def test_pod_update_refuses_other_spec_changes_naming_them() -> None:
    old = _pod()
    new = _pod()
    new.spec.restart_policy = "Never"
    new.spec.unmodelled["runtimeClassName"] = "kata"
    errs = kinds.POD.validate_update(new, old)
    assert len(errs) == 1
    assert errs[0].type is ErrorType.FORBIDDEN
    assert errs[0].field == "spec"
    text = str(errs[0])
    assert text.startswith(
        "spec: Forbidden: pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`"
    )
    assert 'spec.restartPolicy: "Always" -> "Never"' in text
    assert 'spec.runtimeClassName: "runc" -> "kata"' in text
    with pytest.raises(ValidationError) as ei:
        kinds.POD.check_update(new, old)
    assert ei.value.status()["details"]["causes"][0]["reason"] == "FieldValueForbidden"


def test_pod_update_tolerations_may_only_be_added_and_identity_is_immutable() -> None:
    old = _pod()
    new = _pod()
    new.spec.tolerations[0].effect = "NoSchedule"
    new.metadata.name = "other"
    new.metadata.resource_version = ""
    errs = [str(e) for e in kinds.POD.validate_update(new, old)]
    assert 'metadata.resourceVersion: Invalid value: "": must be specified for an update' in errs
    assert 'metadata.name: Invalid value: "other": field is immutable' in errs
    assert (
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds" in errs
    )
    new = _pod()
    new.spec.containers.append(copy.deepcopy(new.spec.containers[0]))
    assert [str(e) for e in kinds.POD.validate_update(new, old)][-1] == (
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    )


def test_updates_of_immutable_fields_of_other_kinds() -> None:
    pc = kinds.PRIORITY_CLASS.decode(
        {"metadata": {"name": "p", "resourceVersion": "1"}, "value": 1}
    )
    changed = copy.deepcopy(pc)
    changed.value = 2
    assert [str(e) for e in kinds.PRIORITY_CLASS.validate_update(changed, pc)] == [
        "value: Forbidden: may not be changed in an update."
    ]
    cm = kinds.CONFIG_MAP.decode(
        {"metadata": {"name": "c", "namespace": "d", "resourceVersion": "1"},
         "immutable": True, "data": {"a": "1"}}
    )
    changed_cm = copy.deepcopy(cm)
    changed_cm.data["a"] = "2"
    assert [str(e) for e in kinds.CONFIG_MAP.validate_update(changed_cm, cm)] == [
        "data: Forbidden: field is immutable when `immutable` is set"
    ]
    node = kinds.NODE.decode(copy.deepcopy(NODE))
    node.metadata.resource_version = "1"
    moved = copy.deepcopy(node)
    moved.spec.pod_cidrs = ["10.244.9.0/24"]
    assert [str(e) for e in kinds.NODE.validate_update(moved, node)] == [
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'
    ]


# ----------------------------------------------------------------------- patch metadata, schema


@pytest.mark.parametrize(
    ("path", "strategy", "key", "list_type"),
    [
        (("spec", "containers"), ("merge",), "name", "map"),
        (("spec", "volumes"), ("merge", "retainKeys"), "name", "map"),
        (("spec", "containers", "env"), ("merge",), "name", "map"),
        (("spec", "containers", "ports"), ("merge",), "containerPort", "map"),
        (("spec", "containers", "volumeMounts"), ("merge",), "mountPath", "map"),
        (("status", "conditions"), ("merge",), "type", "map"),
        (("spec", "tolerations"), (), "", "atomic"),
        (("metadata", "finalizers"), ("merge",), "", "set"),
    ],
)
def test_patch_metadata_of_pod_lists(
    path: tuple[str, ...], strategy: tuple[str, ...], key: str, list_type: str
) -> None:
    meta = kinds.POD.patch_meta(*path)
    assert (meta.strategy, meta.merge_key, meta.list_type) == (strategy, key, list_type)


def test_openapi_schemas_carry_group_version_kind_and_patch_metadata() -> None:
    schemas = kinds.POD.openapi_schemas()
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-list-type"] == "map"
    assert "io.k8s.api.core.v1.PodList" in schemas
    refs = json.dumps(schemas)
    for name in set(part.split('"')[0] for part in refs.split("#/components/schemas/")[1:]):
        assert name in schemas, name
    lease = kinds.LEASE.openapi_schemas()
    assert "io.k8s.api.core.v1.PodSpec" not in lease


def test_pod_status_updates_keep_the_binding_and_terminated_containers() -> None:
    old = _pod()
    old.spec.restart_policy = "Never"
    old.status.container_statuses[0].state.running = None
    old.status.container_statuses[0].state.terminated = kinds.POD.decode(
        {"status": {"containerStatuses": [{"name": "web", "state": {"terminated": {}}}]}}
    ).status.container_statuses[0].state.terminated
    new = copy.deepcopy(old)
    new.spec.node_name = "node-2"
    new.status.container_statuses[0].state.terminated = None
    new.status.nominated_node_name = "Bad_Name"
    errs = [str(e) for e in kinds.POD.validate_status_update(new, old)]
    assert errs[0] == "status.nodeName: Forbidden: may not be changed directly"
    assert errs[1].startswith('status.nominatedNodeName: Invalid value: "Bad_Name": a lowercase')
    assert errs[2] == (
        "status.containerStatuses[0].state: Forbidden: may not be transitioned to "
        "non-terminated state"
    )
    same = kinds.NODE.decode(copy.deepcopy(NODE))
    assert [str(e) for e in kinds.NODE.validate_status_update(same, same)] == [
        'metadata.resourceVersion: Invalid value: "": must be specified for an update'
    ]


def test_config_map_and_secret_data_keys_and_size() -> None:
    """ValidateConfigMap/ValidateSecret: keys by IsConfigMapKey, a key in both bags of a
    ConfigMap, and the values' total (binaryData and Secrets' data decoded) at most 1 MiB."""
    cm = {"metadata": {"name": "c", "namespace": "d"},
          "data": {"a b": "x", "both": "y"}, "binaryData": {"both": _b64("z"), "..up": ""}}
    errs = _errors(kinds.CONFIG_MAP, cm)
    assert len(errs) == 3
    assert errs[0].startswith('data[a b]: Invalid value: "a b": a valid config key must')
    assert errs[1] == 'data[both]: Invalid value: "both": duplicate of key present in binaryData'
    assert errs[2].startswith('binaryData[..up]: Invalid value: "..up": must not start')
    big = {"metadata": {"name": "c", "namespace": "d"},
           "data": {"a": "x" * ((1 << 19) + 1)}, "binaryData": {"b": _b64("y" * (1 << 19))}}
    assert _errors(kinds.CONFIG_MAP, big) == [": Too long: must have at most 1048576 bytes"]
    big["binaryData"] = {"b": _b64("y" * ((1 << 19) - 1))}  # 1 MiB exactly
    assert _errors(kinds.CONFIG_MAP, big) == []
    secret = {"metadata": {"name": "s", "namespace": "d"},
              "data": {"a b": _b64("x"), "k": _b64("y" * (1 << 20))}}
    errs = _errors(kinds.SECRET, secret)
    assert errs[0].startswith('data[a b]: Invalid value: "a b": a valid config key must')
    assert errs[1] == "data: Too long: must have at most 1048576 bytes"
