"""A worker's agent imports only what a worker uses (issue 23 item 3, a lean node): no
control plane, no scheduler beyond kubelet's admission predicates, no numpy, and no
cryptography (its join runs in a child process), with the runtime served in-process
(runtimeInAgent) included. Checked in a fresh interpreter over the modules `pykubelet
run` loads on a node with ``server:`` and no ``controlPlane:``."""

from __future__ import annotations

import json
import subprocess
import sys

WORKER_MODULES = [
    "pykubelet.cli.main", "pykubelet.cli.run_cmd", "pykubelet.cli.cluster_side",
    "pykubelet.cli.runtime_in_agent", "pykubelet.kubelet.agent",
    "pykubelet.kubelet.cluster.node", "pykubelet.client.bootstrap",
    "pykubelet.runtime.service", "pykubelet.runtime.cri.server",
]
NOT_ON_A_WORKER = ["numpy", "cryptography", "pykubelet.controlplane", "pysched.scheduler",
                   "pysched.queue", "pysched.simulate",
                   # CronJob schedules are the control plane's: croniter (and the dateutil it
                   # brings, ~1.5 MiB) load when a schedule is read, not with the API types
                   "croniter", "dateutil"]


def loaded_modules(modules: list[str]) -> set[str]:
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return set(json.loads(out))


def test_a_worker_agent_loads_no_control_plane_scheduler_numpy_cryptography_or_croniter() -> None:
    loaded = loaded_modules(WORKER_MODULES)
    assert "pykubelet.kubelet.agent" in loaded  # the probe itself worked
    found = sorted(m for m in loaded for top in NOT_ON_A_WORKER
                   if m == top or m.startswith(top + "."))
    assert found == []
