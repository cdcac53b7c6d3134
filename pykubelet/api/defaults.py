"""The defaults the API server fills in (pkg/apis/core/v1/defaults.go and the other groups'),
so an object read from a manifest looks as it would after `kubectl apply`.

Defaulting mutates in place and is idempotent; it never fails (validation does).
"""

from __future__ import annotations

import base64

from pykubelet.api.objects import (
    FINALIZER_KUBERNETES,
    NAMESPACE_ACTIVE,
    PREEMPT_LOWER_PRIORITY,
    SECRET_TYPE_OPAQUE,
    Namespace,
    Node,
    PriorityClass,
    Secret,
)
from pykubelet.api.types import (
    DNS_CLUSTER_FIRST,
    PULL_ALWAYS,
    PULL_IF_NOT_PRESENT,
    RESTART_ALWAYS,
    Container,
    EmptyDirVolumeSource,
    Pod,
    PodSecurityContext,
    Probe,
)

DEFAULT_NAMESPACE = "default"
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_TERMINATION_MESSAGE_POLICY = "File"
DEFAULT_VOLUME_MODE = 0o644  # configMap/secret volumes' defaultMode (420)


def image_tag(image: str) -> str:
    """The tag of an image reference ("" when none); a digest counts as pinned."""
    if "@" in image:
        return "@digest"
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def default_pull_policy(image: str) -> str:
    """SetDefaults_Container: Always for `:latest` or no tag, else IfNotPresent."""
    tag = image_tag(image)
    return PULL_ALWAYS if tag in ("", "latest") else PULL_IF_NOT_PRESENT


def set_defaults_probe(probe: Probe | None) -> None:
    if probe is None:
        return
    if probe.timeout_seconds == 0:
        probe.timeout_seconds = 1
    if probe.period_seconds == 0:
        probe.period_seconds = 10
    if probe.success_threshold == 0:
        probe.success_threshold = 1
    if probe.failure_threshold == 0:
        probe.failure_threshold = 3
    if probe.http_get is not None:
        if probe.http_get.path == "":
            probe.http_get.path = "/"
        if probe.http_get.scheme == "":
            probe.http_get.scheme = "HTTP"


def set_defaults_container(container: Container, host_network: bool) -> None:
    if container.image_pull_policy == "":
        container.image_pull_policy = default_pull_policy(container.image)
    if container.termination_message_path == "":
        container.termination_message_path = DEFAULT_TERMINATION_MESSAGE_PATH
    if container.termination_message_policy == "":
        container.termination_message_policy = DEFAULT_TERMINATION_MESSAGE_POLICY
    for port in container.ports:
        if port.protocol == "":
            port.protocol = "TCP"
        if host_network and port.host_port == 0:
            port.host_port = port.container_port
    for env in container.env:
        ref = env.value_from.field_ref if env.value_from else None
        if ref is not None and ref.api_version == "":
            ref.api_version = "v1"
    for probe in (container.liveness_probe, container.readiness_probe, container.startup_probe):
        set_defaults_probe(probe)
    for handler in (
        container.lifecycle.post_start if container.lifecycle else None,
        container.lifecycle.pre_stop if container.lifecycle else None,
    ):
        if handler is not None and handler.http_get is not None:
            if handler.http_get.path == "":
                handler.http_get.path = "/"
            if handler.http_get.scheme == "":
                handler.http_get.scheme = "HTTP"
    # SetDefaults_Pod: a limit without a request makes the request equal the limit.
    for name, limit in container.resources.limits.items():
        container.resources.requests.setdefault(name, limit)


def set_defaults_pod(pod: Pod) -> Pod:
    """Apply the API server's defaults to `pod` (in place) and return it."""
    if pod.metadata.namespace == "":
        pod.metadata.namespace = DEFAULT_NAMESPACE
    spec = pod.spec
    if spec.restart_policy == "":
        spec.restart_policy = RESTART_ALWAYS
    if spec.dns_policy == "":
        spec.dns_policy = DNS_CLUSTER_FIRST
    if spec.termination_grace_period_seconds is None:
        spec.termination_grace_period_seconds = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if spec.scheduler_name == "":
        spec.scheduler_name = DEFAULT_SCHEDULER_NAME
    if spec.security_context is None:
        spec.security_context = PodSecurityContext()
    if spec.enable_service_links is None:
        spec.enable_service_links = True
    for volume in spec.volumes:
        # SetDefaults_Volume: a volume naming no source at all is an emptyDir
        if (volume.empty_dir is None and volume.host_path is None and volume.config_map is None
                and volume.secret is None and volume.downward_api is None
                and volume.projected is None and not volume.unmodelled):
            volume.empty_dir = EmptyDirVolumeSource()
        if volume.downward_api is not None and volume.downward_api.default_mode is None:
            volume.downward_api.default_mode = DEFAULT_VOLUME_MODE
        if volume.projected is not None:
            if volume.projected.default_mode is None:
                volume.projected.default_mode = DEFAULT_VOLUME_MODE
            for source in volume.projected.sources:
                token = source.service_account_token
                if token is not None and token.expiration_seconds is None:
                    token.expiration_seconds = 3600  # SetDefaults_ServiceAccountTokenProjection
        if volume.config_map is not None and volume.config_map.default_mode is None:
            volume.config_map.default_mode = DEFAULT_VOLUME_MODE
        if volume.secret is not None and volume.secret.default_mode is None:
            volume.secret.default_mode = DEFAULT_VOLUME_MODE
        if volume.host_path is not None and volume.host_path.type is None:
            volume.host_path.type = ""
    for container in (*spec.init_containers, *spec.containers, *spec.ephemeral_containers):
        set_defaults_container(container, spec.host_network)
    return pod


# --------------------------------------------------------------------------- other kinds

# The label every namespace carries with its own name (v1.LabelMetadataName).
LABEL_METADATA_NAME = "kubernetes.io/metadata.name"


def set_defaults_node(node: Node) -> Node:
    """SetDefaults_NodeStatus: allocatable is the capacity unless reported."""
    if not node.status.allocatable and node.status.capacity:
        node.status.allocatable = dict(node.status.capacity)
    return node


def set_defaults_namespace(ns: Namespace) -> Namespace:
    """SetDefaults_Namespace and _NamespaceStatus, plus the namespace strategy's create step:
    the name label, phase Active, and the `kubernetes` finalizer."""
    if ns.metadata.name:
        ns.metadata.labels[LABEL_METADATA_NAME] = ns.metadata.name
    if not ns.status.phase:
        ns.status.phase = NAMESPACE_ACTIVE
    if FINALIZER_KUBERNETES not in ns.spec.finalizers:
        ns.spec.finalizers.append(FINALIZER_KUBERNETES)
    return ns


def set_defaults_secret(secret: Secret) -> Secret:
    """SetDefaults_Secret (type Opaque) and the v1 conversion of stringData: each value is
    written, base64-encoded, over data's, and stringData is never stored."""
    if not secret.type:
        secret.type = SECRET_TYPE_OPAQUE
    for key, value in secret.string_data.items():
        secret.data[key] = base64.b64encode(value.encode()).decode()
    secret.string_data = {}
    return secret


def set_defaults_priority_class(pc: PriorityClass) -> PriorityClass:
    """SetDefaults_PriorityClass: preemptionPolicy PreemptLowerPriority."""
    if pc.preemption_policy is None:
        pc.preemption_policy = PREEMPT_LOWER_PRIORITY
    return pc
