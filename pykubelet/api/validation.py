"""The API server's checks on a Pod (pkg/apis/core/validation), for what we support.

Each problem is a FieldError (upstream's field.Error: type, path, bad value, detail) whose
text is upstream's, `<path>: <body>`: "Required value", `Invalid value: "x": detail`,
`Unsupported value: "x": supported values: "a", "b"`, `Duplicate value: "x"`,
`Not found: "x"`, "Forbidden: detail". All problems are collected, then raised together as
one ValidationError (the API server's 422 Invalid with one cause each).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any

from pykubelet.api.decode import encode
from pykubelet.api.errors import FieldError, ValidationError
from pykubelet.api.machinery.field import (
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
)
from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.machinery.validation import (
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns_subdomain,
    validate_dns_label,
    validate_dns_subdomain,
    validate_label_name,
    validate_labels,
)
from pykubelet.api.meta_validation import (
    SET_OPERATORS,
    set_operator_errors,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from pykubelet.api.types import (
    CONTAINER_RESTART_POLICIES,
    DNS_POLICIES,
    PREFERRED_TERMS,
    PULL_POLICIES,
    REQUIRED_TERMS,
    RESTART_POLICIES,
    STORAGE_MEDIUM_DEFAULT,
    STORAGE_MEDIUM_MEMORY,
    Affinity,
    Container,
    EphemeralContainer,
    IntOrString,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PodSpec,
    Probe,
    Toleration,
    TopologySpreadConstraint,
    Volume,
    is_restartable_init_container,
)

_IANA_SVC_RE = re.compile(r"^[-a-z0-9]+$")
_ENV_NAME_RE = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")

ENV_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  "
    "or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)

# validEnvDownwardAPIFieldPathExpressions (plus metadata.labels['k'] / annotations['k'])
FIELD_REF_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
_FIELD_REF_SUBSCRIPT_RE = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)


def _non_negative(path: str, value: int) -> list[FieldError]:
    return [invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []


def _port_num_or_name(path: str, port: IntOrString) -> list[FieldError]:
    if isinstance(port, int):
        if not 1 <= port <= 65535:
            return [invalid(path, port, "must be between 1 and 65535, inclusive")]
        return []
    if not port or len(port) > 15 or not _IANA_SVC_RE.match(port) or not re.search("[a-z]", port):
        return [
            invalid(
                path, port, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
            )
        ]
    return []


def validate_port_num_or_name(port: IntOrString, path: str) -> list[FieldError]:
    """ValidatePortNumOrName, for other kinds' ports (a Service's targetPort)."""
    return _port_num_or_name(path, port)


def validate_pod(pod: Pod) -> None:
    """Raise ValidationError listing every problem with `pod` (after defaulting)."""
    errs = pod_errors(pod)
    if errs:
        raise ValidationError(errs, kind="Pod", name=pod.metadata.name)


def pod_errors(pod: Pod) -> list[FieldError]:
    """ValidatePodCreate: the metadata rules (name a DNS subdomain, namespace a DNS label,
    labels, annotations, owner references, finalizers) and the spec's. A pod that has only a
    generateName passes the name rule: the API server generates the name before it asks."""
    meta = pod.metadata
    errs = validate_object_meta(meta, namespaced=True, name_fn=name_is_dns_subdomain)
    if not meta.name and meta.generate_name:
        errs = [e for e in errs if e.field != "metadata.name"]
    errs += _spec_errors(pod)
    if pod.spec.ephemeral_containers:
        # they are added to a running pod, through pods/ephemeralcontainers only
        errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    return errs


def unique_dns_label(name: str, path: str, seen: set[str]) -> list[FieldError]:
    """A required DNS label unique among ``seen`` (volume names, container names across
    init, regular and ephemeral containers), which it joins."""
    if not name:
        return [required(path)]
    errs = validate_dns_label(name, path)
    if name in seen:
        errs.append(duplicate(path, name))
    seen.add(name)
    return errs


def _spec_errors(pod: Pod) -> list[FieldError]:
    spec = pod.spec
    errs: list[FieldError] = []
    volumes: set[str] = set()
    for i, vol in enumerate(spec.volumes):
        path = f"spec.volumes[{i}]"
        errs += unique_dns_label(vol.name, f"{path}.name", volumes)
        # every volume source upstream has (the typed ones, and the unmodelled ones)
        sources = [s for s in ("emptyDir", "hostPath", "configMap", "secret")
                   if getattr(vol, _snake(s)) is not None]
        sources += [s for s, v in (("downwardAPI", vol.downward_api),
                                   ("projected", vol.projected)) if v is not None]
        sources += list(vol.unmodelled)
        if len(sources) == 0:
            errs.append(required(path, "must specify a volume type"))
        elif len(sources) > 1:
            errs.append(
                forbidden(f"{path}.{sources[1]}", "may not specify more than 1 volume type")
            )
        if vol.empty_dir is not None:
            medium = vol.empty_dir.medium
            if medium not in (STORAGE_MEDIUM_DEFAULT, STORAGE_MEDIUM_MEMORY):
                errs.append(not_supported(f"{path}.emptyDir.medium", medium, ("", "Memory")))
            limit = vol.empty_dir.size_limit
            if limit is not None and limit.exact < 0:
                errs.append(
                    invalid(
                        f"{path}.emptyDir.sizeLimit",
                        limit.text,
                        "must be greater than or equal to 0",
                    )
                )
        for src_name, src in (("configMap", vol.config_map), ("secret", vol.secret)):
            if src is None:
                continue
            ref = src.name if src_name == "configMap" else src.secret_name  # type: ignore[union-attr]
            if not ref:
                errs.append(required(f"{path}.{src_name}." + (
                    "name" if src_name == "configMap" else "secretName")))
            mode = src.default_mode
            if mode is not None and not 0 <= mode <= 0o777:
                errs.append(invalid(f"{path}.{src_name}.defaultMode", mode,
                                    "must be a number between 0 and 0777 (octal), both "
                                    "inclusive"))
            for j, item in enumerate(src.items):
                ipath = f"{path}.{src_name}.items[{j}]"
                if not item.key:
                    errs.append(required(f"{ipath}.key"))
                if not item.path:
                    errs.append(required(f"{ipath}.path"))
                errs += local_non_reserved_path(item.path, f"{ipath}.path")
                if item.mode is not None and not 0 <= item.mode <= 0o777:
                    errs.append(invalid(f"{ipath}.mode", item.mode, "must be a number between "
                                        "0 and 0777 (octal), both inclusive"))
        errs += _projected_volume_paths(vol, path)
        if vol.host_path is not None:
            if not vol.host_path.path:
                errs.append(required(f"{path}.hostPath.path"))
            elif ".." in vol.host_path.path.split("/"):
                errs.append(
                    invalid(f"{path}.hostPath.path", vol.host_path.path, "must not contain '..'")
                )
            if (vol.host_path.type or "") not in HOST_PATH_TYPES:
                errs.append(
                    not_supported(f"{path}.hostPath.type", vol.host_path.type, HOST_PATH_TYPES)
                )

    if not spec.containers:
        errs.append(required("spec.containers"))
    names: set[str] = set()
    for i, c in enumerate(spec.init_containers):
        errs += _container_errors(
            c,
            f"spec.initContainers[{i}]",
            names,
            volumes,
            init=True,
            host_network=spec.host_network,
        )
    for i, c in enumerate(spec.containers):
        errs += _container_errors(
            c, f"spec.containers[{i}]", names, volumes, init=False, host_network=spec.host_network
        )
    errs += _ephemeral_container_errors(spec, names, volumes)

    if spec.restart_policy not in RESTART_POLICIES:
        errs.append(
            not_supported(
                "spec.restartPolicy", spec.restart_policy, ("Always", "OnFailure", "Never")
            )
        )
    if spec.dns_policy and spec.dns_policy not in DNS_POLICIES:
        errs.append(not_supported("spec.dnsPolicy", spec.dns_policy, DNS_POLICIES))
    if spec.termination_grace_period_seconds is not None:
        errs += _non_negative(
            "spec.terminationGracePeriodSeconds", spec.termination_grace_period_seconds
        )
    ads = spec.active_deadline_seconds
    if ads is not None and not 1 <= ads <= 2147483647:
        errs.append(
            invalid(
                "spec.activeDeadlineSeconds", ads, "must be between 1 and 2147483647, inclusive"
            )
        )
    if spec.hostname:
        errs += validate_dns_label(spec.hostname, "spec.hostname")
    if spec.subdomain:
        errs += validate_dns_label(spec.subdomain, "spec.subdomain")
    if spec.node_name:
        errs += validate_dns_subdomain(spec.node_name, "spec.nodeName")
    errs += validate_labels(spec.node_selector, "spec.nodeSelector")
    errs += _scheduling_errors(spec)
    return errs


def _snake(camel: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)


def _container_errors(
    c: Container,
    path: str,
    names: set[str],
    volumes: set[str],
    *,
    init: bool,
    host_network: bool = False,
    ephemeral: bool = False,
) -> list[FieldError]:
    errs: list[FieldError] = []
    errs += unique_dns_label(c.name, f"{path}.name", names)
    if not c.image:
        errs.append(required(f"{path}.image"))
    elif c.image.strip() != c.image:
        errs.append(
            invalid(f"{path}.image", c.image, "must not have leading or trailing whitespace")
        )
    if c.image_pull_policy and c.image_pull_policy not in PULL_POLICIES:
        errs.append(
            not_supported(
                f"{path}.imagePullPolicy", c.image_pull_policy, ("Always", "IfNotPresent", "Never")
            )
        )

    port_names: set[str] = set()
    for j, port in enumerate(c.ports):
        ppath = f"{path}.ports[{j}]"
        if port.name:
            errs += _port_num_or_name(f"{ppath}.name", port.name)
            if port.name in port_names:
                errs.append(duplicate(f"{ppath}.name", port.name))
            port_names.add(port.name)
        if port.container_port == 0:
            errs.append(required(f"{ppath}.containerPort"))
        else:
            errs += _port_num_or_name(f"{ppath}.containerPort", port.container_port)
        if port.host_port:
            errs += _port_num_or_name(f"{ppath}.hostPort", port.host_port)
            if host_network and port.host_port != port.container_port:
                errs.append(
                    invalid(
                        f"{ppath}.hostPort",
                        port.host_port,
                        "must match `containerPort` when `hostNetwork` is true",
                    )
                )
        if port.protocol and port.protocol not in ("TCP", "UDP", "SCTP"):
            errs.append(not_supported(f"{ppath}.protocol", port.protocol, ("SCTP", "TCP", "UDP")))

    for j, ef in enumerate(c.env_from):
        efpath = f"{path}.envFrom[{j}]"
        refs = [r for r in (ef.config_map_ref, ef.secret_ref) if r is not None]
        if len(refs) != 1:
            errs.append(invalid(efpath, "", "must specify one of: `configMapRef` or "
                                "`secretRef`"))
        for r, rname in ((ef.config_map_ref, "configMapRef"), (ef.secret_ref, "secretRef")):
            if r is not None and not r.name:
                errs.append(required(f"{efpath}.{rname}.name"))
        if ef.prefix and not _ENV_NAME_RE.match(ef.prefix):
            errs.append(invalid(f"{efpath}.prefix", ef.prefix, ENV_NAME_MSG))
    for j, env in enumerate(c.env):
        epath = f"{path}.env[{j}]"
        if not env.name:
            errs.append(required(f"{epath}.name"))
        elif not _ENV_NAME_RE.match(env.name):
            errs.append(invalid(f"{epath}.name", env.name, ENV_NAME_MSG))
        src = env.value_from
        if src is None:
            continue
        if env.value:
            errs.append(
                invalid(f"{epath}.valueFrom", "", "may not be specified when `value` is not empty")
            )
        sources = [
            s
            for s in (
                src.field_ref,
                src.resource_field_ref,
                src.config_map_key_ref,
                src.secret_key_ref,
            )
            if s is not None
        ]
        if len(sources) != 1:
            errs.append(
                invalid(
                    f"{epath}.valueFrom",
                    "",
                    "may not have more than one field specified at a time"
                    if sources
                    else "must specify one of: `fieldRef`, "
                    "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                )
            )
        if src.field_ref is not None:
            fp = src.field_ref.field_path
            fpath = f"{epath}.valueFrom.fieldRef.fieldPath"
            if not fp:
                errs.append(required(fpath))
            elif src.field_ref.api_version not in ("", "v1"):
                errs.append(
                    not_supported(
                        f"{epath}.valueFrom.fieldRef.apiVersion", src.field_ref.api_version, ("v1",)
                    )
                )
            elif fp not in FIELD_REF_PATHS and not _FIELD_REF_SUBSCRIPT_RE.match(fp):
                errs.append(not_supported(fpath, fp, FIELD_REF_PATHS))
        if src.resource_field_ref is not None:
            res = src.resource_field_ref.resource
            allowed = (
                "limits.cpu",
                "limits.ephemeral-storage",
                "limits.memory",
                "requests.cpu",
                "requests.ephemeral-storage",
                "requests.memory",
            )
            if res not in allowed:
                errs.append(
                    not_supported(f"{epath}.valueFrom.resourceFieldRef.resource", res, allowed)
                )

    errs += _resource_errors(c, f"{path}.resources")

    mount_paths: set[str] = set()
    for j, mount in enumerate(c.volume_mounts):
        mpath = f"{path}.volumeMounts[{j}]"
        if not mount.name:
            errs.append(required(f"{mpath}.name"))
        elif mount.name not in volumes:
            errs.append(not_found(f"{mpath}.name", mount.name))
        if not mount.mount_path:
            errs.append(required(f"{mpath}.mountPath"))
        elif mount.mount_path in mount_paths:
            errs.append(invalid(f"{mpath}.mountPath", mount.mount_path, "must be unique"))
        mount_paths.add(mount.mount_path)
        if mount.sub_path and (mount.sub_path.startswith("/") or ".." in mount.sub_path.split("/")):
            errs.append(
                invalid(f"{mpath}.subPath", mount.sub_path, "must be a relative path without '..'")
            )

    if ephemeral:
        return errs  # restartPolicy, lifecycle and probes: the allow list forbids them
    if c.restart_policy is not None:
        if not init:
            errs.append(
                forbidden(f"{path}.restartPolicy", "may not be set for non-init containers")
            )
        elif c.restart_policy not in CONTAINER_RESTART_POLICIES:
            errs.append(
                not_supported(f"{path}.restartPolicy", c.restart_policy, CONTAINER_RESTART_POLICIES)
            )
    # A sidecar (restartPolicy Always) may carry probes and lifecycle hooks like an app
    # container; a plain init container may not (validateInitContainers).
    init = init and not is_restartable_init_container(c)
    if init and c.lifecycle is not None:
        errs.append(
            forbidden(
                f"{path}.lifecycle",
                "may not be set for init containers without restartPolicy=Always",
            )
        )
    probes = (
        ("livenessProbe", c.liveness_probe),
        ("readinessProbe", c.readiness_probe),
        ("startupProbe", c.startup_probe),
    )
    for field_name, probe in probes:
        if probe is None:
            continue
        ppath = f"{path}.{field_name}"
        if init:
            errs.append(
                forbidden(ppath, "may not be set for init containers without restartPolicy=Always")
            )
            continue
        errs += _probe_errors(probe, ppath, c)
        if field_name != "readinessProbe" and probe.success_threshold != 1:
            errs.append(invalid(f"{ppath}.successThreshold", probe.success_threshold, "must be 1"))
    return errs


def _probe_errors(probe: Probe, path: str, c: Container) -> list[FieldError]:
    errs: list[FieldError] = []
    handlers = [
        (n, h)
        for n, h in (
            ("exec", probe.exec),
            ("httpGet", probe.http_get),
            ("tcpSocket", probe.tcp_socket),
            ("grpc", probe.grpc),
        )
        if h is not None
    ]
    if not handlers:
        errs.append(required(path, "must specify a handler type"))
    for name, _ in handlers[1:]:
        errs.append(forbidden(f"{path}.{name}", "may not specify more than 1 handler type"))
    if probe.exec is not None and not probe.exec.command:
        errs.append(required(f"{path}.exec.command"))
    if probe.http_get is not None:
        errs += _probe_port(probe.http_get.port, f"{path}.httpGet.port", c)
        if probe.http_get.scheme not in ("", "HTTP", "HTTPS"):
            errs.append(
                not_supported(f"{path}.httpGet.scheme", probe.http_get.scheme, ("HTTP", "HTTPS"))
            )
    if probe.tcp_socket is not None:
        errs += _probe_port(probe.tcp_socket.port, f"{path}.tcpSocket.port", c)
    if probe.grpc is not None:
        errs += _port_num_or_name(f"{path}.grpc.port", probe.grpc.port)
    for attr, wire in (
        ("initial_delay_seconds", "initialDelaySeconds"),
        ("timeout_seconds", "timeoutSeconds"),
        ("period_seconds", "periodSeconds"),
        ("success_threshold", "successThreshold"),
        ("failure_threshold", "failureThreshold"),
    ):
        errs += _non_negative(f"{path}.{wire}", getattr(probe, attr))
    if (
        probe.termination_grace_period_seconds is not None
        and probe.termination_grace_period_seconds <= 0
    ):
        errs.append(
            invalid(
                f"{path}.terminationGracePeriodSeconds",
                probe.termination_grace_period_seconds,
                "must be greater than 0",
            )
        )
    return errs


def _probe_port(port: IntOrString, path: str, c: Container) -> list[FieldError]:
    errs = _port_num_or_name(path, port)
    if not errs and isinstance(port, str) and port not in {p.name for p in c.ports}:
        errs.append(invalid(path, port, "must be a container port name"))
    return errs


def _resource_name_ok(name: str) -> bool:
    if name in STANDARD_RESOURCES or name.startswith("hugepages-"):
        return True
    if "/" in name:  # an extended resource, domain-prefixed
        prefix, _, rest = name.partition("/")
        return not is_dns1123_subdomain(prefix) and not is_qualified_name(rest)
    return False


def _resource_errors(c: Container, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    res = c.resources
    for kind, rlist in (("limits", res.limits), ("requests", res.requests)):
        for name, q in rlist.items():
            qpath = f"{path}.{kind}.{name}"
            if not _resource_name_ok(name):
                errs.append(
                    invalid(qpath, name, "must be a standard resource type or fully qualified")
                )
            if q.exact < 0:
                errs.append(invalid(qpath, q.text, "must be greater than or equal to 0"))
    for name, req in res.requests.items():
        limit: Quantity | None = res.limits.get(name)
        if limit is not None and req.exact > limit.exact:
            errs.append(
                invalid(
                    f"{path}.requests",
                    req.text,
                    f"must be less than or equal to {name} limit of {limit.text}",
                )
            )
    return errs


# --------------------------------------------------------------------------- ephemeral

# core.MirrorPodAnnotationKey: a static pod's mirror, which takes no ephemeral containers
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

# allowedEphemeralContainerFields: the Container fields an ephemeral container may set
# (wire names); the rest are forbidden, so a new field is refused until considered.
EPHEMERAL_FORBIDDEN_MSG = "cannot be set for an Ephemeral Container"
_EPHEMERAL_DISALLOWED = ("ports", "resources", "livenessProbe", "readinessProbe",
                         "startupProbe", "lifecycle", "resizePolicy", "restartPolicy")


def _ephemeral_container_errors(
    spec: PodSpec, names: set[str], volumes: set[str]
) -> list[FieldError]:
    """validateEphemeralContainers: a container's common rules, a name unique across every
    container of the pod, a target naming a regular or init container, only the allowed
    fields, no subPath. ``names`` holds the init and regular containers' names."""
    others = set(names)
    errs: list[FieldError] = []
    for i, ec in enumerate(spec.ephemeral_containers):
        path = f"spec.ephemeralContainers[{i}]"
        errs += _container_errors(ec, path, names, volumes, init=False,
                                  host_network=spec.host_network, ephemeral=True)
        if ec.target_container_name and ec.target_container_name not in others:
            errs.append(not_found(f"{path}.targetContainerName", ec.target_container_name))
        errs += _ephemeral_allow_list_errors(ec, path)
        for j, mount in enumerate(ec.volume_mounts):
            if mount.sub_path:
                errs.append(forbidden(f"{path}.volumeMounts[{j}].subPath",
                                      EPHEMERAL_FORBIDDEN_MSG))
            if "subPathExpr" in mount.unmodelled:
                errs.append(forbidden(f"{path}.volumeMounts[{j}].subPathExpr",
                                      EPHEMERAL_FORBIDDEN_MSG))
    return errs


def _ephemeral_allow_list_errors(ec: EphemeralContainer, path: str) -> list[FieldError]:
    """validateFieldAllowList: every disallowed field that is set (not its zero value)."""
    wire = encode(ec)
    return [forbidden(f"{path}.{name}", EPHEMERAL_FORBIDDEN_MSG)
            for name in _EPHEMERAL_DISALLOWED if wire.get(name) not in (None, {}, [], "")]


def pod_ephemeral_containers_update_errors(new: Pod, old: Pod) -> list[FieldError]:
    """ValidatePodEphemeralContainersUpdate (pods/ephemeralcontainers): the metadata rules,
    the new pod valid, no static pod, and existing ephemeral containers neither removed nor
    changed (matched by name: a patch need not keep their order). The caller kept every
    other field of the old pod."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    errs += _spec_errors(new)
    if MIRROR_POD_ANNOTATION in old.metadata.annotations:
        return [forbidden("", "static pods do not support ephemeral containers")]
    by_name = {ec.name: ec for ec in new.spec.ephemeral_containers}
    for before in old.spec.ephemeral_containers:
        after = by_name.get(before.name)
        if after is None:
            errs.append(forbidden("spec.ephemeralContainers",
                                  f'existing ephemeral containers "{before.name}" may not be '
                                  "removed\n"))
        elif after != before:
            diff = _spec_diff(before, after, "")
            errs.append(forbidden("spec.ephemeralContainers",
                                  f'existing ephemeral containers "{before.name}" may not be '
                                  f"changed\n{diff}"))
    return errs


# --------------------------------------------------------------------------- updates

POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)
_MAX_INT32 = 2147483647


def validate_pod_update(new: Pod, old: Pod) -> None:
    """Raise ValidationError listing every problem with updating `old` into `new`."""
    errs = pod_update_errors(new, old)
    if errs:
        raise ValidationError(errs, kind="Pod", name=new.metadata.name)


def pod_update_errors(new: Pod, old: Pod) -> list[FieldError]:
    """ValidatePodUpdate: metadata rules, the new pod valid, and a spec that changes only
    images, activeDeadlineSeconds (down), tolerations (additions), scheduling gates
    (removals) and a negative terminationGracePeriodSeconds (to 1)."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    errs += _spec_errors(new)
    for key in ("containers", "init_containers"):
        wire = "containers" if key == "containers" else "initContainers"
        new_cs, old_cs = getattr(new.spec, key), getattr(old.spec, key)
        if len(new_cs) != len(old_cs):
            errs.append(forbidden(f"spec.{wire}", "pod updates may not add or remove containers"))
            return errs
        for i, c in enumerate(new_cs):
            if not c.image:
                errs.append(required(f"spec.{wire}[{i}].image"))
    ads_new, ads_old = new.spec.active_deadline_seconds, old.spec.active_deadline_seconds
    if ads_new is not None:
        if not 0 <= ads_new <= _MAX_INT32:
            errs.append(
                invalid(
                    "spec.activeDeadlineSeconds",
                    ads_new,
                    f"must be between 0 and {_MAX_INT32}, inclusive",
                )
            )
            return errs
        if ads_old is not None and ads_old < ads_new:
            errs.append(
                invalid(
                    "spec.activeDeadlineSeconds",
                    ads_new,
                    "must be less than or equal to previous value",
                )
            )
            return errs
    elif ads_old is not None:
        errs.append(
            invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    errs += _only_added_tolerations(new.spec.tolerations, old.spec.tolerations)
    errs += _only_deleted_gates(new, old)
    if new.spec == old.spec:
        return errs
    munged = copy.deepcopy(new.spec)
    for mc, oc in zip(munged.containers, old.spec.containers, strict=True):
        mc.image = oc.image
    for mc, oc in zip(munged.init_containers, old.spec.init_containers, strict=True):
        mc.image = oc.image
    munged.active_deadline_seconds = old.spec.active_deadline_seconds
    munged.tolerations = old.spec.tolerations
    old_grace = old.spec.termination_grace_period_seconds
    if old_grace is not None and old_grace < 0 and munged.termination_grace_period_seconds == 1:
        munged.termination_grace_period_seconds = old_grace
    munged.scheduling_gates = old.spec.scheduling_gates
    if munged != old.spec:
        errs.append(forbidden("spec", f"{POD_UPDATE_FORBIDDEN}\n{_spec_diff(old.spec, munged)}"))
    return errs


def _only_added_tolerations(new: list[Toleration], old: list[Toleration]) -> list[FieldError]:
    """validateOnlyAddedTolerations: every old toleration is still there (its
    tolerationSeconds may change)."""
    for o in old:
        if not any(
            dataclasses.replace(o, toleration_seconds=n.toleration_seconds) == n for n in new
        ):
            return [
                forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return []


def _only_deleted_gates(new: Pod, old: Pod) -> list[FieldError]:
    """validateOnlyDeletedSchedulingGates: a gate may be removed, never added."""
    old_names = {g.name for g in old.spec.scheduling_gates}
    return [
        forbidden(
            f"spec.schedulingGates[{i}]",
            f"only deletion is allowed, but found new scheduling gate '{name}'",
        )
        for i, name in enumerate(g.name for g in new.spec.scheduling_gates)
        if name not in old_names
    ]


def _spec_diff(old: Any, new: Any, root: str = "spec") -> str:
    """A short account of what differs (upstream prints a Go cmp.Diff of the specs)."""
    lines: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                walk(a.get(k), b.get(k), f"{path}.{k}" if path else k)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
        else:
            lines.append(f"  {path}: {json.dumps(a)} -> {json.dumps(b)}")

    walk(encode(old), encode(new), root)
    return "\n".join(lines)


def pod_status_update_errors(new: Pod, old: Pod) -> list[FieldError]:
    """ValidatePodStatusUpdate (pods/status): metadata rules, the node binding untouched,
    a valid nominated node, and no terminated container coming back when the pod's
    restartPolicy forbids it. The caller keeps the old spec (a status write changes none)."""
    errs = validate_object_meta_update(new.metadata, old.metadata)
    if new.spec.node_name != old.spec.node_name:
        errs.append(forbidden("status.nodeName", "may not be changed directly"))
    nominated = new.status.nominated_node_name
    if nominated and nominated != old.status.nominated_node_name:
        errs += validate_dns_subdomain(nominated, "status.nominatedNodeName")
    for wire, attr, policy in (
        ("containerStatuses", "container_statuses", old.spec.restart_policy),
        ("initContainerStatuses", "init_container_statuses", old.spec.restart_policy),
        # the kubelet never restarts an ephemeral container: as if restartPolicy Never
        ("ephemeralContainerStatuses", "ephemeral_container_statuses", "Never"),
    ):
        if policy == "Always":
            continue
        new_statuses = getattr(new.status, attr)
        for i, before in enumerate(getattr(old.status, attr)):
            term = before.state.terminated
            if term is None or (term.exit_code != 0 and policy == "OnFailure"):
                continue
            if any(s.name == before.name and s.state.terminated is None for s in new_statuses):
                errs.append(
                    forbidden(
                        f"status.{wire}[{i}].state",
                        "may not be transitioned to non-terminated state",
                    )
                )
    return errs


# --------------------------------------------------------------------------- scheduling fields

_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")
_NOT_POSITIVE = "must be greater than zero"
_WEIGHT_RANGE = "must be in the range 1-100"
_NO_EXECUTE_ONLY = "effect must be 'NoExecute' when `tolerationSeconds` is set"
_EXISTS_WITHOUT_VALUE = "value must be empty when `operator` is 'Exists'"


def _scheduling_errors(spec: PodSpec) -> list[FieldError]:
    """Tolerations, affinity and topology spread constraints (ValidateTolerations,
    validateAffinity, validateTopologySpreadConstraints): what the scheduler reads."""
    errs = _toleration_errors(spec.tolerations, "spec.tolerations")
    if spec.affinity is not None:
        errs += _affinity_errors(spec.affinity, "spec.affinity")
    errs += _spread_errors(spec.topology_spread_constraints, "spec.topologySpreadConstraints")
    if spec.preemption_policy is not None and spec.preemption_policy not in (
        "PreemptLowerPriority",
        "Never",
    ):
        errs.append(
            not_supported(
                "spec.preemptionPolicy", spec.preemption_policy, ("PreemptLowerPriority", "Never")
            )
        )
    return errs


def _toleration_errors(tolerations: list[Toleration], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, t in enumerate(tolerations):
        p = f"{path}[{i}]"
        if t.key:
            errs += validate_label_name(t.key, f"{p}.key")
        if not t.key and t.operator != "Exists":
            errs.append(
                invalid(
                    f"{p}.operator",
                    t.operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            errs.append(
                invalid(f"{p}.effect", t.effect, _NO_EXECUTE_ONLY)
            )
        if t.operator in ("Equal", ""):
            problems = is_valid_label_value(t.value)
            if problems:
                errs.append(invalid(f"{p}.operator", t.value, ";".join(problems)))
        elif t.operator == "Exists":
            if t.value:
                errs.append(
                    invalid(f"{p}.operator", encode(t), _EXISTS_WITHOUT_VALUE)
                )
        else:
            errs.append(not_supported(f"{p}.operator", t.operator, ("Equal", "Exists")))
        if t.effect and t.effect not in _TAINT_EFFECTS:
            errs.append(not_supported(f"{p}.effect", t.effect, _TAINT_EFFECTS))
    return errs


def _node_selector_term_errors(term: NodeSelectorTerm, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(term.match_expressions):
        p = f"{path}.matchExpressions[{j}]"
        if req.operator in SET_OPERATORS:
            errs += set_operator_errors(req.operator, req.values, p)
        elif req.operator in ("Gt", "Lt"):
            if len(req.values) != 1:
                errs.append(
                    required(
                        f"{p}.values",
                        "must be specified single value when `operator` is 'Lt' or 'Gt'",
                    )
                )
        else:
            errs.append(invalid(f"{p}.operator", req.operator, "not a valid selector operator"))
        errs += validate_label_name(req.key, f"{p}.key")
    for j, req in enumerate(term.match_fields):
        p = f"{path}.matchFields[{j}]"
        if req.operator in ("In", "NotIn"):
            if len(req.values) != 1:
                errs.append(
                    required(
                        f"{p}.values",
                        "must be only one value when `operator` is 'In' or 'NotIn' for node "
                        "field selector",
                    )
                )
        else:
            errs.append(invalid(f"{p}.operator", req.operator, "not a valid selector operator"))
        if req.key != "metadata.name":
            errs.append(invalid(f"{p}.key", req.key, "not a valid field selector key"))
        else:
            for k, v in enumerate(req.values):
                errs += validate_dns_subdomain(v, f"{p}.values[{k}]")
    return errs


def _pod_affinity_term_errors(term: PodAffinityTerm, path: str) -> list[FieldError]:
    errs = validate_label_selector(term.label_selector, f"{path}.labelSelector")
    errs += validate_label_selector(term.namespace_selector, f"{path}.namespaceSelector")
    for name in term.namespaces:
        errs += validate_dns_label(name, f"{path}.namespace")
    if not term.topology_key:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    return errs + validate_label_name(term.topology_key, f"{path}.topologyKey")


def _weight_errors(weight: int, path: str) -> list[FieldError]:
    return [] if 0 < weight <= 100 else [invalid(path, weight, _WEIGHT_RANGE)]


def _affinity_errors(affinity: Affinity, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    na = affinity.node_affinity
    if na is not None:
        p = f"{path}.nodeAffinity"
        if na.required is not None:
            tp = f"{p}.{REQUIRED_TERMS}.nodeSelectorTerms"
            if not na.required.node_selector_terms:
                errs.append(required(tp, "must have at least one node selector term"))
            for i, term in enumerate(na.required.node_selector_terms):
                errs += _node_selector_term_errors(term, f"{tp}[{i}]")
        for i, pref in enumerate(na.preferred):
            pp = f"{p}.{PREFERRED_TERMS}[{i}]"
            errs += _weight_errors(pref.weight, f"{pp}.weight")
            errs += _node_selector_term_errors(pref.preference, f"{pp}.preference")
    for name, pa in (("podAffinity", affinity.pod_affinity),
                     ("podAntiAffinity", affinity.pod_anti_affinity)):
        if pa is None:
            continue
        p = f"{path}.{name}"
        for i, pod_term in enumerate(pa.required):
            errs += _pod_affinity_term_errors(pod_term, f"{p}.{REQUIRED_TERMS}[{i}]")
        for i, weighted in enumerate(pa.preferred):
            wp = f"{p}.{PREFERRED_TERMS}[{i}]"
            errs += _weight_errors(weighted.weight, f"{wp}.weight")
            errs += _pod_affinity_term_errors(weighted.pod_affinity_term, f"{wp}.podAffinityTerm")
    return errs


def _spread_errors(constraints: list[TopologySpreadConstraint], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, c in enumerate(constraints):
        p = f"{path}[{i}]"
        if c.max_skew <= 0:
            errs.append(invalid(f"{p}.maxSkew", c.max_skew, _NOT_POSITIVE))
        if not c.topology_key:
            errs.append(required(f"{p}.topologyKey", "can not be empty"))
        if c.when_unsatisfiable not in _SPREAD_ACTIONS:
            errs.append(
                not_supported(f"{p}.whenUnsatisfiable", c.when_unsatisfiable, _SPREAD_ACTIONS)
            )
        if any(
            c.topology_key == o.topology_key and c.when_unsatisfiable == o.when_unsatisfiable
            for o in constraints[i + 1 :]
        ):
            errs.append(
                duplicate(
                    f"{p}.{{topologyKey, whenUnsatisfiable}}",
                    f"{{{c.topology_key}, {c.when_unsatisfiable}}}",
                )
            )
        if c.min_domains is not None:
            if c.min_domains <= 0:
                errs.append(invalid(f"{p}.minDomains", c.min_domains, _NOT_POSITIVE))
            if c.when_unsatisfiable != "DoNotSchedule":
                errs.append(
                    invalid(
                        f"{p}.minDomains",
                        c.min_domains,
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "
                        f"{c.when_unsatisfiable}",
                    )
                )
        for wire_name, policy in (
            ("nodeAffinityPolicy", c.node_affinity_policy),
            ("nodeTaintsPolicy", c.node_taints_policy),
        ):
            if policy is not None and policy not in _INCLUSION_POLICIES:
                errs.append(not_supported(f"{p}.{wire_name}", policy, _INCLUSION_POLICIES))
        errs += validate_label_selector(c.label_selector, f"{p}.labelSelector")
    return errs


def local_non_reserved_path(target: str, path: str) -> list[FieldError]:
    """ValidateLocalNonReservedPath: relative, no '..' element, not starting with '..'
    (the atomic writer keeps ``..data`` and its timestamped directories there)."""
    errs: list[FieldError] = []
    if target.startswith("/"):
        errs.append(invalid(path, target, "must be a relative path"))
    if ".." in target.replace("\\", "/").split("/"):
        errs.append(invalid(path, target, "must not contain '..'"))
    if target.startswith("..") and not target.startswith("../"):
        errs.append(invalid(path, target, "must not start with '..'"))
    return errs


def _item_paths(items: Sequence[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, item in enumerate(items):
        errs += local_non_reserved_path(item.path, f"{path}.items[{j}].path")
    return errs


def _projected_volume_paths(vol: Volume, path: str) -> list[FieldError]:
    """The item paths of downwardAPI and projected volumes stay inside the volume (and
    off the atomic writer's ``..data``), as upstream's validateDownwardAPIVolumeSource and
    validateProjectionSources."""
    errs: list[FieldError] = []
    if vol.downward_api is not None:
        errs += _item_paths(vol.downward_api.items, f"{path}.downwardAPI")
    if vol.projected is None:
        return errs
    for i, src in enumerate(vol.projected.sources):
        spath = f"{path}.projected.sources[{i}]"
        for name, proj in (("configMap", src.config_map), ("secret", src.secret),
                           ("downwardAPI", src.downward_api)):
            if proj is not None:
                errs += _item_paths(proj.items, f"{spath}.{name}")
        if src.service_account_token is not None:
            errs += local_non_reserved_path(src.service_account_token.path,
                                            f"{spath}.serviceAccountToken.path")
        bundle = src.unmodelled.get("clusterTrustBundle")
        target = bundle.get("path") if isinstance(bundle, dict) else None
        if isinstance(target, str):
            errs += local_non_reserved_path(target, f"{spath}.clusterTrustBundle.path")
    return errs


def pod_template_spec_errors(spec: PodSpec, path: str) -> list[FieldError]:
    """ValidatePodSpec for a workload's template: the pod rules with the template's path
    (``spec.template.spec.containers[0].image``) in place of ``spec``."""
    errs = _spec_errors(Pod(spec=spec))
    return [dataclasses.replace(e, field=path + e.field[len("spec"):])
            if e.field.startswith("spec") else e for e in errs]
