"""Kubelet's labels and annotations on CRI objects (kuberuntime/labels.go), both ways.

Labels identify (CRI tools filter on them); annotations carry what kubelet must read back
after a restart: the container spec hash, the restart count, the termination message
path and policy, the grace period. Because the restart count lives on the container
itself, a restarted agent computes the next attempt from the runtime alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from pykubelet.api.types import Container, Pod

POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
POD_UID_LABEL = "io.kubernetes.pod.uid"
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"

CONTAINER_HASH_ANNOTATION = "io.kubernetes.container.hash"
CONTAINER_RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount"
CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath"
CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION = (
    "io.kubernetes.container.terminationMessagePolicy"
)
POD_DELETION_GRACE_PERIOD_ANNOTATION = "io.kubernetes.pod.deletionGracePeriod"
POD_TERMINATION_GRACE_PERIOD_ANNOTATION = "io.kubernetes.pod.terminationGracePeriod"
CONTAINER_PRESTOP_HANDLER_ANNOTATION = "io.kubernetes.container.preStopHandler"
CONTAINER_PORTS_ANNOTATION = "io.kubernetes.container.ports"

# Ours (not upstream): which node agent created a sandbox, so several agents sharing one
# runtime (tests, the one-host lab) only ever clean up their own orphans.
NODE_NAME_ANNOTATION = "pykubelet.io/node-name"
# Ours: "init" or "regular", so status can tell init containers from app containers even
# when the pod spec is gone (kubelet keeps this in its in-memory pod manager).
CONTAINER_TYPE_ANNOTATION = "pykubelet.io/container-type"

INFRA_CONTAINER_NAME = "POD"


def new_pod_labels(pod: Pod) -> dict[str, str]:
    """The sandbox's labels: the pod's own labels plus kubelet's three."""
    labels = dict(pod.metadata.labels)
    labels[POD_NAME_LABEL] = pod.metadata.name
    labels[POD_NAMESPACE_LABEL] = pod.metadata.namespace
    labels[POD_UID_LABEL] = pod.metadata.uid
    return labels


def new_pod_annotations(pod: Pod, node_name: str) -> dict[str, str]:
    annotations = dict(pod.metadata.annotations)
    annotations[NODE_NAME_ANNOTATION] = node_name
    return annotations


def new_container_labels(pod: Pod, container: Container) -> dict[str, str]:
    return {
        POD_NAME_LABEL: pod.metadata.name,
        POD_NAMESPACE_LABEL: pod.metadata.namespace,
        POD_UID_LABEL: pod.metadata.uid,
        CONTAINER_NAME_LABEL: container.name,
    }


def new_container_annotations(
    pod: Pod, container: Container, restart_count: int, spec_hash: str, container_type: str
) -> dict[str, str]:
    """kubelet's container annotations (newContainerAnnotations)."""
    ann = {
        CONTAINER_HASH_ANNOTATION: spec_hash,
        CONTAINER_RESTART_COUNT_ANNOTATION: str(restart_count),
        CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION: container.termination_message_path,
        CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION: container.termination_message_policy,
        CONTAINER_TYPE_ANNOTATION: container_type,
    }
    if pod.metadata.deletion_grace_period_seconds is not None:
        ann[POD_DELETION_GRACE_PERIOD_ANNOTATION] = str(pod.metadata.deletion_grace_period_seconds)
    if pod.spec.termination_grace_period_seconds is not None:
        ann[POD_TERMINATION_GRACE_PERIOD_ANNOTATION] = str(
            pod.spec.termination_grace_period_seconds
        )
    if container.lifecycle is not None and container.lifecycle.pre_stop is not None:
        pre_stop = container.lifecycle.pre_stop
        if pre_stop.exec is not None:
            ann[CONTAINER_PRESTOP_HANDLER_ANNOTATION] = json.dumps(
                {"exec": {"command": pre_stop.exec.command}}
            )
    if container.ports:
        ann[CONTAINER_PORTS_ANNOTATION] = json.dumps(
            [
                {"containerPort": p.container_port, "protocol": p.protocol or "TCP"}
                | ({"name": p.name} if p.name else {})
                | ({"hostPort": p.host_port} if p.host_port else {})
                for p in container.ports
            ]
        )
    return ann


@dataclass(frozen=True)
class ContainerLabelInfo:
    """What kubelet reads back from a container's labels and annotations."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    container_name: str
    spec_hash: str
    restart_count: int
    termination_grace_period: int | None
    container_type: str
    termination_message_path: str = ""
    termination_message_policy: str = ""


def _int_or(value: str | None, default: int | None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def parse_container_labels(
    labels: Mapping[str, str], annotations: Mapping[str, str]
) -> ContainerLabelInfo:
    return ContainerLabelInfo(
        pod_name=labels.get(POD_NAME_LABEL, ""),
        pod_namespace=labels.get(POD_NAMESPACE_LABEL, ""),
        pod_uid=labels.get(POD_UID_LABEL, ""),
        container_name=labels.get(CONTAINER_NAME_LABEL, ""),
        spec_hash=annotations.get(CONTAINER_HASH_ANNOTATION, ""),
        restart_count=_int_or(annotations.get(CONTAINER_RESTART_COUNT_ANNOTATION), 0) or 0,
        termination_grace_period=_int_or(
            annotations.get(POD_TERMINATION_GRACE_PERIOD_ANNOTATION), None
        ),
        container_type=annotations.get(CONTAINER_TYPE_ANNOTATION, "regular"),
        termination_message_path=annotations.get(
            CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION, ""
        ),
        termination_message_policy=annotations.get(
            CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION, ""
        ),
    )
