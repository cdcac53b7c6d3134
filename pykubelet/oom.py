"""The one fact about the OOM killer every part of the node clamps to.

Root here lacks CAP_SYS_RESOURCE, so a process may not lower an oom_score_adj below its own:
runc fails to start a container that asks for less. Both the kubelet (building a container's
config from pykubelet.api.qos's rule) and the runtime (writing the OCI spec) read it here.
"""

from __future__ import annotations

from pathlib import Path


def own_oom_score_adj() -> int:
    """This process's oom_score_adj: nothing it starts may ask for less."""
    try:
        return int(Path("/proc/self/oom_score_adj").read_text().strip())
    except (OSError, ValueError):
        return 0
