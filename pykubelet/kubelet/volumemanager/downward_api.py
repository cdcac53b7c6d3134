"""The downward API's files: a pod's own fields and its containers' resources, as kubelet's
downwardAPI volume plugin and projected volumes write them (pkg/volume/downwardapi,
pkg/fieldpath, pkg/api/v1/resource).

A ``fieldRef`` names ``metadata.name``, ``metadata.namespace``, ``metadata.uid``,
``metadata.labels`` or ``metadata.annotations`` (every pair as ``key="value"``, one a line,
sorted, the value quoted as Go's %q), or one label or annotation
(``metadata.labels['key']``). A ``resourceFieldRef`` names ``limits.`` or ``requests.``
``cpu``, ``memory`` or ``ephemeral-storage`` of a container, divided by its divisor and
rounded up; a limit the container does not set is the node's allocatable, as kubelet
merges them. Pure: the caller writes the files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from fractions import Fraction

from pykubelet.api.types import DownwardAPIVolumeFile, Pod, ResourceFieldSelector

RESOURCES = ("cpu", "memory", "ephemeral-storage")


class DownwardAPIError(ValueError):
    """A field or resource the downward API does not offer, or a container not in the pod."""


def format_map(m: Mapping[str, str]) -> str:
    """fieldpath.FormatMap: ``key="value"`` lines, sorted by key."""
    return "".join(f"{k}={json.dumps(m[k], ensure_ascii=False)}\n" for k in sorted(m))


def field_value(pod: Pod, path: str) -> str:
    """fieldpath.ExtractFieldPathAsString for the metadata fields volumes may name."""
    meta = pod.metadata
    simple = {"metadata.name": meta.name, "metadata.namespace": meta.namespace,
              "metadata.uid": meta.uid}
    if path in simple:
        return simple[path]
    if path == "metadata.labels":
        return format_map(meta.labels)
    if path == "metadata.annotations":
        return format_map(meta.annotations)
    for prefix, source in (("metadata.labels", meta.labels),
                           ("metadata.annotations", meta.annotations)):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return source.get(path[len(prefix) + 2:-2], "")
    raise DownwardAPIError(f"unsupported fieldPath: {path}")


def resource_value(pod: Pod, ref: ResourceFieldSelector,
                   allocatable: Mapping[str, Fraction]) -> str:
    """resource.ExtractContainerResourceValue over the container's resources, its unset
    limits taken from the node's ``allocatable`` (cpu in cores, the rest in bytes)."""
    container = next((c for c in pod.all_containers() if c.name == ref.container_name), None)
    if container is None:
        raise DownwardAPIError(f'container "{ref.container_name}" not found in pod')
    kind, _, name = ref.resource.partition(".")
    if kind not in ("limits", "requests") or name not in RESOURCES:
        raise DownwardAPIError(f"unsupported container resource : {ref.resource}")
    table = container.resources.limits if kind == "limits" else container.resources.requests
    q = table.get(name)
    amount = q.exact if q is not None else (
        allocatable.get(name, Fraction(0)) if kind == "limits" else Fraction(0))
    divisor = ref.divisor.exact if ref.divisor is not None and ref.divisor.exact else 1
    if name == "cpu":  # convertResourceCPUToString: in millicores, rounded up
        return str(math.ceil(math.ceil(amount * 1000) / math.ceil(Fraction(divisor) * 1000)))
    return str(math.ceil(math.ceil(amount) / math.ceil(Fraction(divisor))))


def files(pod: Pod, items: list[DownwardAPIVolumeFile], default_mode: int,
          allocatable: Mapping[str, Fraction]) -> dict[str, tuple[bytes, int]]:
    """path -> (content, mode) for a downwardAPI volume's (or projection's) items."""
    out: dict[str, tuple[bytes, int]] = {}
    for item in items:
        if item.field_ref is not None:
            value = field_value(pod, item.field_ref.field_path)
        elif item.resource_field_ref is not None:
            value = resource_value(pod, item.resource_field_ref, allocatable)
        else:
            raise DownwardAPIError(f"{item.path}: neither fieldRef nor resourceFieldRef")
        out[item.path] = (value.encode(), item.mode if item.mode is not None else default_mode)
    return out
