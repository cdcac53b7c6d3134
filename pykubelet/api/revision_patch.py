"""What a DaemonSet's or StatefulSet's ControllerRevision holds (the controllers' getPatch,
kubectl's getDaemonSetPatch/getStatefulSetPatch): the owner's pod template as a strategic
merge patch that replaces it. The controllers write these bytes and kubectl's rollbackers
compare them with the object's, so both sides use this one function; it imports nothing
heavy because pykubectl loads it."""

from __future__ import annotations

import copy
from typing import Any

from pykubelet.api.machinery.marshal import sorted_maps

Obj = dict[str, Any]


def template_patch(owner: Obj) -> Obj:
    """``{"spec": {"template": ..., "$patch": "replace"}}`` written as Go's json.Marshal
    writes the typed owner: the template's ``creationTimestamp: null`` (a metav1.Time is
    never omitted), each container's ``resources`` struct, every object's keys sorted."""
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    template.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    pod_spec = template.get("spec") or {}
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for c in pod_spec.get(group) or []:
            c.setdefault("resources", {})  # a struct: Go writes it even when empty
    template["$patch"] = "replace"
    patch: Obj = sorted_maps({"spec": {"template": template}})
    return patch
