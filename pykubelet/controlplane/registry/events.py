"""Events (pkg/registry/core/event): selectable by the object they are about and by
reason, source and type; created on update (a recorder's patch of a series)."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import EVENTS
from pykubelet.controlplane.registry.strategy import Obj, Strategy, canonical_time

EVENT_TTL_S = 3600  # kube-apiserver's --event-ttl


class EventStrategy(Strategy):
    info = EVENTS
    allow_create_on_update = True
    selectable_fields = (
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
    )

    def decode(self, body: Obj, unknown: str = "Strict") -> tuple[Obj, list[str]]:
        obj, warnings = super().decode(body, unknown)
        for f in ("firstTimestamp", "lastTimestamp"):
            if obj.get(f) is not None:
                obj[f] = canonical_time(obj[f], f)
        if obj.get("eventTime") is not None:
            obj["eventTime"] = canonical_time(obj["eventTime"], "eventTime", micro=True)
        series = obj.get("series") or {}
        if series.get("lastObservedTime") is not None:
            series["lastObservedTime"] = canonical_time(series["lastObservedTime"],
                                                        "series.lastObservedTime", micro=True)
        return obj, warnings

    def fields(self, obj: Obj) -> dict[str, str]:
        io = obj.get("involvedObject") or {}
        source = (obj.get("source") or {}).get("component", "")
        return {
            "involvedObject.kind": io.get("kind", ""),
            "involvedObject.namespace": io.get("namespace", ""),
            "involvedObject.name": io.get("name", ""),
            "involvedObject.uid": io.get("uid", ""),
            "involvedObject.apiVersion": io.get("apiVersion", ""),
            "involvedObject.resourceVersion": io.get("resourceVersion", ""),
            "involvedObject.fieldPath": io.get("fieldPath", ""),
            "reason": obj.get("reason", ""),
            "reportingComponent": obj.get("reportingComponent", ""),
            "source": source,
            "type": obj.get("type", ""),
        }
