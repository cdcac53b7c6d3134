"""seccompProfile from the pod spec to CRI, as kubelet's getSeccompProfile does
(pkg/kubelet/kuberuntime/helpers.go): the container's profile wins over the pod's; with
neither, Unconfined (kubelet's seccompDefault is off by default); Localhost names a file
under the kubelet's seccomp profile root (<rootDir>/seccomp); the sandbox takes the pod's.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod
from pykubelet.kubelet.kuberuntime.container_config import (
    ContainerConfigError,
    generate_container_config,
)
from pykubelet.kubelet.kuberuntime.sandbox_config import generate_pod_sandbox_config

ROOT = "/var/lib/pykubelet/seccomp"


def _pod(pod_profile: dict[str, Any] | None, container_profile: dict[str, Any] | None) -> Pod:
    container: dict[str, Any] = {"name": "app", "image": "busybox:1"}
    if container_profile is not None:
        container["securityContext"] = {"seccompProfile": container_profile}
    spec: dict[str, Any] = {"containers": [container]}
    if pod_profile is not None:
        spec["securityContext"] = {"seccompProfile": pod_profile}
    pod = decode_pod({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec})
    set_defaults_pod(pod)
    return pod


def _container_profile(pod: Pod) -> pb.SecurityProfile:
    cfg = generate_container_config(
        pod, pod.spec.containers[0], restart_count=0, spec_hash="", container_type="regular",
        image="busybox:1", pod_ip="", volume_paths={}, etc_hosts=None,
        memory_capacity=1 << 30, seccomp_profile_root=ROOT)
    return cfg.linux.security_context.seccomp


RD = {"type": "RuntimeDefault"}
UC = {"type": "Unconfined"}


@pytest.mark.parametrize(("pod_p", "ctr_p", "want"), [
    (None, None, pb.SecurityProfile.Unconfined),
    (RD, None, pb.SecurityProfile.RuntimeDefault),
    (None, RD, pb.SecurityProfile.RuntimeDefault),
    (RD, UC, pb.SecurityProfile.Unconfined),
    (UC, RD, pb.SecurityProfile.RuntimeDefault),
])
def test_the_containers_profile_wins_over_the_pods(pod_p: Any, ctr_p: Any, want: int) -> None:
    got = _container_profile(_pod(pod_p, ctr_p))
    assert (got.profile_type, got.localhost_ref) == (want, "")


def test_localhost_names_a_file_under_the_profile_root() -> None:
    got = _container_profile(_pod({"type": "Localhost", "localhostProfile": "pod.json"},
                                  {"type": "Localhost", "localhostProfile": "sub/ctr.json"}))
    assert got.profile_type == pb.SecurityProfile.Localhost
    assert got.localhost_ref == f"{ROOT}/sub/ctr.json"


def test_localhost_without_a_file_is_a_config_error() -> None:
    with pytest.raises(ContainerConfigError,
                       match="localhostProfile must be set if seccompProfile type is Localhost"):
        _container_profile(_pod(None, {"type": "Localhost"}))


def test_the_sandbox_takes_the_pods_profile() -> None:
    cfg = generate_pod_sandbox_config(_pod(RD, UC), 0, "n", "/var/log/pods",
                                      seccomp_profile_root=ROOT)
    assert cfg.linux.security_context.seccomp.profile_type == pb.SecurityProfile.RuntimeDefault
    cfg = generate_pod_sandbox_config(
        _pod({"type": "Localhost", "localhostProfile": "p.json"}, None), 0, "n",
        "/var/log/pods", seccomp_profile_root=ROOT)
    assert cfg.linux.security_context.seccomp.localhost_ref == f"{ROOT}/p.json"
    cfg = generate_pod_sandbox_config(_pod(None, RD), 0, "n", "/var/log/pods")
    assert cfg.linux.security_context.seccomp.profile_type == pb.SecurityProfile.Unconfined


def test_the_profile_reads_back_on_the_wire() -> None:
    pod = _pod({"type": "Localhost", "localhostProfile": "a.json"}, RD)
    from pykubelet.api.machinery.codec import encode

    spec = encode(pod)["spec"]
    assert spec["securityContext"]["seccompProfile"] == {"type": "Localhost",
                                                         "localhostProfile": "a.json"}
    assert spec["containers"][0]["securityContext"] == {"seccompProfile": RD}
