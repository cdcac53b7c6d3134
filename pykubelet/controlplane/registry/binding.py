"""pods/binding's rule (pkg/registry/core/pod/storage's BindingREST.assignPod): set
``spec.nodeName`` once, with PodScheduled=True. In the registry so the HTTP subresource and
the in-process scheduler bind through the same rule."""

from __future__ import annotations

from typing import Any

from pykubelet import podtrace
from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.podconditions import set_condition
from pykubelet.controlplane.registry.store import Context, GenericStore, Obj
from pykubelet.controlplane.registry.strategy import StatusStrategy


async def bind_pod(store: GenericStore, namespace: str, name: str, node: str,
                   annotations: dict[str, str], ctx: Context) -> Any:
    """Set ``spec.nodeName`` once, with PodScheduled=True (BindingREST.assignPod)."""

    bound_uid = [""]

    def assign(pod: Obj) -> Obj:
        meta = pod.setdefault("metadata", {})
        bound_uid[0] = meta.get("uid", "")
        if meta.get("deletionTimestamp"):
            raise errors.conflict("pods/binding", "", name,
                                  f"pod {name} is being deleted, cannot be assigned to a host")
        spec = pod.setdefault("spec", {})
        if spec.get("nodeName"):
            raise errors.conflict("pods/binding", "", name,
                                  f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        spec["nodeName"] = node
        if annotations:
            meta.setdefault("annotations", {}).update(annotations)
        set_condition(pod.setdefault("status", {}), {
            "type": "PodScheduled", "status": "True", "lastProbeTime": None,
            "lastTransitionTime": rfc3339(now())})
        return pod

    result = await store.guaranteed_update(namespace, name, assign, BindingStrategy(store),
                                           ctx)
    if not ctx.dry_run:
        podtrace.stage("scheduled", bound_uid[0], node=node)
    return result


class BindingStrategy(StatusStrategy):
    """Binding writes spec.nodeName and the PodScheduled condition, nothing else, and, as
    upstream's setPodNodeAndMetadata (a Storage.GuaranteedUpdate, not the store's Update),
    without the field manager: managedFields stay as they were."""

    tracks_managed_fields = False

    def __init__(self, store: GenericStore) -> None:
        super().__init__(store.strategy)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        pass

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return []
