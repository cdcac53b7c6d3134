"""What every object answers about itself (upstream's meta.Accessor), for both models."""

from __future__ import annotations

from typing import Any


class ObjectAccessors:
    """name, namespace, uid, labels and key of an object with `metadata`."""

    __slots__ = ()
    metadata: Any

    @property
    def name(self) -> str:
        return str(self.metadata.name)

    @property
    def namespace(self) -> str:
        return str(self.metadata.namespace)

    @property
    def uid(self) -> str:
        return str(self.metadata.uid)

    @property
    def labels(self) -> dict[str, str]:
        labels: dict[str, str] = self.metadata.labels
        return labels

    @property
    def key(self) -> str:
        """namespace/name, as klog.KObj prints it (name alone for a cluster-scoped object)."""
        ns = self.namespace
        return f"{ns}/{self.name}" if ns else self.name
