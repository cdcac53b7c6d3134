"""klog's structured text form for the agent's log lines: ``"msg" key="value" n=3``.

Upstream kubelet logs each pod event as one line a user can grep (``"SyncLoop ADD"
source="file" pods=["default/web-node1"]``, ``"Killing container with a grace period"
pod="default/web" containerName="httpd" ...``). ``kv`` renders the same shape: the
message quoted, then key=value pairs, strings quoted (so names with spaces stay one
token), lists and maps as JSON.
"""

from __future__ import annotations

import json
from typing import Any


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    return json.dumps(v, separators=(",", ":"), default=str)


def kv(msg: str, **fields: Any) -> str:
    """One structured line; fields whose value is None are left out."""
    parts = [json.dumps(msg)]
    parts += [f"{k}={_value(v)}" for k, v in fields.items() if v is not None]
    return " ".join(parts)


def pod_ref(pod: Any) -> str:
    """klog.KObj: ``namespace/name``."""
    namespace = getattr(pod, "namespace", "") or ""
    name = getattr(pod, "name", "") or ""
    return f"{namespace}/{name}" if namespace else name
