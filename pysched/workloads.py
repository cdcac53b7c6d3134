"""The workloads whose selectors PodTopologySpread's system defaults read, decoded for it.

helper.DefaultSelector spreads the pods selected by the Services, ReplicationControllers,
ReplicaSets and StatefulSets that select or own a pod. Services, ReplicaSets and
StatefulSets are the one model's (pykubelet.api); the API server does not serve
ReplicationControllers, so that one is a view here: only its selector, naming the upstream
type it reads (`__k8s__`), so the walker checks the rest of the document by upstream's
schema and drops it. When pykubelet.api models it, its class replaces the view here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.apps import ReplicaSet
from pykubelet.api.apps_statefulset import StatefulSet
from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.services import Service
from pykubelet.api.types import KEEP, Model, ObjectMeta
from pysched.decode import replica_set, slim_namespaced

_CORE = "io.k8s.api.core.v1."


@dataclass(kw_only=True)
class ReplicationControllerSpec(Model):
    __k8s__ = _CORE + "ReplicationControllerSpec"

    selector: dict[str, str] = field(default_factory=dict)


@dataclass(kw_only=True)
class ReplicationController(Model):
    __k8s__ = _CORE + "ReplicationController"

    kind: str = field(default="ReplicationController", metadata=KEEP)
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = field(default_factory=ReplicationControllerSpec)


Workload = Service | ReplicationController | ReplicaSet | StatefulSet

WORKLOAD_KINDS: dict[str, Callable[[Any], Any]] = {
    "Service": lambda d: slim_namespaced(Service, d),
    "ReplicationController": lambda d: slim_namespaced(ReplicationController, d),
    "ReplicaSet": replica_set,
    "StatefulSet": lambda d: slim_namespaced(StatefulSet, d),
}


def workload_from_dict(d: Any) -> Workload:
    """Decode a Service, ReplicationController, ReplicaSet or StatefulSet."""
    if not isinstance(d, dict):
        raise DecodeError("<root>", f"expected an object, got {type(d).__name__}")
    kind = d.get("kind")
    decode = WORKLOAD_KINDS.get(kind) if isinstance(kind, str) else None
    if decode is None:
        raise DecodeError(
            "kind", f"unsupported kind {kind!r}: expected one of {sorted(WORKLOAD_KINDS)}"
        )
    return decode(d)  # type: ignore[no-any-return]
