"""The order Go's encoding/json writes an untyped value in: json.Marshal sorts a map's keys
(a struct's fields keep their declaration order, which the codec and pykubectl's
struct_order know). Bytes that are compared with Go's (a ControllerRevision's patch,
kubectl's printed objects) need it. Standard library only: pykubectl imports it."""

from __future__ import annotations

from typing import Any


def sorted_maps(value: Any) -> Any:
    """`value` with every map's keys sorted, at every depth; lists keep their order."""
    if isinstance(value, dict):
        return {k: sorted_maps(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_maps(v) for v in value]
    return value
