"""``pykubectl auth can-i`` and ``auth whoami``, with the global ``--as``/``--as-group``,
print what the real kubectl prints against the same control plane process (issue 21):
the same stdout, stderr and exit status for allowed, denied and impersonated questions."""

from __future__ import annotations

import pytest
from cp_process import ControlPlaneProcess
from test_pykubectl import same_as_kubectl

CP_BACKENDS = ("sqlite",)


@pytest.mark.parametrize("args", [
    ("auth", "can-i", "list", "pods"),
    ("auth", "can-i", "delete", "nodes", "-A"),
    ("auth", "can-i", "get", "/healthz"),
    ("auth", "can-i", "get", "deployments.apps/web", "-n", "kube-system"),
    ("auth", "can-i", "--as=bob", "list", "pods"),
    ("auth", "can-i", "--as=bob", "--as-group=system:masters", "list", "pods"),
    ("auth", "can-i", "--as=system:node:n1", "--as-group=system:nodes", "get", "secrets/s"),
    ("auth", "can-i", "--as=bob", "--quiet", "create", "pods"),
    ("auth", "can-i", "get", "pods", "--subresource=log"),
    ("auth", "can-i", "list", "foos"),  # a type the server does not serve: warned
    ("auth", "whoami"),
    ("auth", "whoami", "--as=bob", "--as-group=devs", "--as-group=qa"),
    ("auth", "whoami", "-o", "json"),
    ("auth", "whoami", "-o", "yaml", "--as=bob"),
])
def test_auth_as_kubectl(cp: ControlPlaneProcess, args: tuple[str, ...]) -> None:
    same_as_kubectl(cp, *args)
