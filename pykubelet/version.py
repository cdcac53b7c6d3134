"""Versions the project reports: its own, and the Kubernetes version its API and its node
agent speak (what ``kubectl version`` shows as the server's, and nodes as kubeletVersion)."""

from __future__ import annotations

import importlib.metadata

KUBE_VERSION = "v1.32.0"


def pykube_version() -> str:
    try:
        return importlib.metadata.version("pykube-node")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a tree
        return "0.0.0"


def git_version() -> str:
    """A semantic version kubectl accepts: upstream's, with ours as build metadata."""
    return f"{KUBE_VERSION}+pykube.{pykube_version()}"
