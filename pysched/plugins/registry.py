"""The in-tree plugins by name: upstream's plugins/registry.go (NewInTreeRegistry)."""

from __future__ import annotations

from typing import Any

from pysched.plugins import (
    balanced_allocation,
    default_binder,
    default_preemption,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    queue_sort,
    scheduling_gates,
    taint_toleration,
    volumes,
)


def in_tree_factories() -> dict[str, Any]:
    """Plugin name -> factory(args, handle), like plugins.NewInTreeRegistry."""
    out: dict[str, Any] = {
        m.NAME: m.new
        for m in (
            scheduling_gates,
            queue_sort,
            node_unschedulable,
            node_name,
            taint_toleration,
            node_affinity,
            node_ports,
            node_resources_fit,
            pod_topology_spread,
            inter_pod_affinity,
            default_preemption,
            balanced_allocation,
            image_locality,
            default_binder,
        )
    }
    for name in (
        volumes.VOLUME_RESTRICTIONS,
        volumes.NODE_VOLUME_LIMITS,
        volumes.VOLUME_BINDING,
        volumes.VOLUME_ZONE,
        volumes.DYNAMIC_RESOURCES,
    ):
        out[name] = volumes.factory(name)
    return out
