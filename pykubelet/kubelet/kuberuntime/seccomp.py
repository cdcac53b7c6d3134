"""A pod's seccompProfile fields to CRI's SecurityProfile, as kubelet's getSeccompProfile
(pkg/kubelet/kuberuntime/helpers.go).

The container's profile wins over the pod's; with neither, Unconfined (kubelet's
``seccompDefault`` is off by default, so a pod that asks nothing is not confined, and one
that asks RuntimeDefault gets the runtime's default profile). A Localhost profile is a file
under the kubelet's seccomp profile root (``<rootDir>/seccomp``), named to the runtime by its
full path.
"""

from __future__ import annotations

import os

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.types import PodSecurityContext, SeccompProfile, SecurityContext

RUNTIME_DEFAULT = "RuntimeDefault"
LOCALHOST = "Localhost"


def seccomp_profile_root(root_dir: str) -> str:
    """kubelet's --seccomp-profile-root: <rootDir>/seccomp."""
    return os.path.join(root_dir, "seccomp")


class SeccompProfileError(ValueError):
    """A Localhost profile without its file (kubelet fails the container's creation)."""


def _field_profile(profile: SeccompProfile, root: str) -> pb.SecurityProfile:
    if profile.type == RUNTIME_DEFAULT:
        return pb.SecurityProfile(profile_type=pb.SecurityProfile.RuntimeDefault)
    if profile.type == LOCALHOST:
        if not profile.localhost_profile:
            raise SeccompProfileError(
                "localhostProfile must be set if seccompProfile type is Localhost.")
        return pb.SecurityProfile(profile_type=pb.SecurityProfile.Localhost,
                                  localhost_ref=os.path.join(root, profile.localhost_profile))
    return pb.SecurityProfile(profile_type=pb.SecurityProfile.Unconfined)


def seccomp_profile(pod_sc: PodSecurityContext | None, container_sc: SecurityContext | None,
                    root: str) -> pb.SecurityProfile:
    """The profile for a container (``container_sc`` None: for the sandbox)."""
    if container_sc is not None and container_sc.seccomp_profile is not None:
        return _field_profile(container_sc.seccomp_profile, root)
    if pod_sc is not None and pod_sc.seccomp_profile is not None:
        return _field_profile(pod_sc.seccomp_profile, root)
    return pb.SecurityProfile(profile_type=pb.SecurityProfile.Unconfined)
