#!/usr/bin/env python3
"""The control plane's CPU per pods/status PATCH, without HTTP: every served resource's
registry (new_registry, with admission) over SQLite in memory, one realistic bound pod
(two containers with env, resources, probes and volumes), and N strategic merge patches
of its status as a kubelet sends them (conditions and container states alternating).
Also the CPU of a create of such a pod (the field manager's share shows there).

    .venv/bin/python bench/status_patch_bench.py [--patches 300] [--creates 100]

Prints process CPU microseconds per write. Figures only; never fails on time.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pykubelet.controlplane.registry.install import new_registry
from pykubelet.controlplane.registry.patch import STRATEGIC_MERGE_PATCH
from pykubelet.controlplane.registry.resources import NAMESPACES, PODS
from pykubelet.controlplane.registry.store import Context
from pykubelet.controlplane.storage.cacher import Cacher
from pykubelet.controlplane.storage.sqlite import SQLiteStorage


def container(name: str) -> dict[str, Any]:
    return {
        "name": name, "image": f"registry.local:5000/{name}:1.2.3",
        "command": ["/bin/server"], "args": ["--port=8080", "--verbose"],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": f"VAR_{i}", "value": str(i)} for i in range(6)] + [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                      "limits": {"cpu": "500m", "memory": "256Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080},
                           "periodSeconds": 5},
        "livenessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 3},
        "volumeMounts": [{"name": "data", "mountPath": "/data"},
                         {"name": "conf", "mountPath": "/etc/conf", "readOnly": True}],
    }


def pod(name: str, automount: bool = True) -> dict[str, Any]:
    """The realistic bound pod (also the one whose managedFields bytes
    tests/unit/controlplane/registry/test_managedfields_pod_bytes.py pins: there without
    the service-account token volume, whose name is random)."""
    spec: dict[str, Any] = {
        "nodeName": "node-1",
        "containers": [container("web"), container("sidecar")],
        "volumes": [{"name": "data", "emptyDir": {}},
                    {"name": "conf", "configMap": {"name": "web-conf"}}],
        "tolerations": [{"key": "example.com/gpu", "operator": "Exists",
                         "effect": "NoSchedule"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
    }
    if not automount:
        spec["automountServiceAccountToken"] = False
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"app": "web", "tier": "frontend", "pod": name},
                     "annotations": {"example.com/owner": "team-a"}},
        "spec": spec,
    }


def status_patch(i: int) -> dict[str, Any]:
    ready = "True" if i % 2 else "False"
    t = f"2026-12-04T08:{i // 60 % 60:02d}:{i % 60:02d}Z"
    state = ({"running": {"startedAt": t}} if i % 2 else
             {"waiting": {"reason": "ContainerCreating"}})
    return {"status": {
        "$setElementOrder/conditions": [{"type": c} for c in (
            "Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "phase": "Running" if i % 2 else "Pending",
        "conditions": [{"type": c, "status": ready, "lastTransitionTime": t}
                       for c in ("Ready", "ContainersReady")] + [
            {"type": "Initialized", "status": "True", "lastTransitionTime": t},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": t}],
        "hostIP": "10.250.0.2", "podIP": "10.244.1.7",
        "podIPs": [{"ip": "10.244.1.7"}], "startTime": "2026-12-04T08:00:00Z",
        "containerStatuses": [
            {"name": n, "image": f"registry.local:5000/{n}:1.2.3",
             "imageID": f"sha256:{'a' * 64}", "containerID": f"pykube://{n}{i}",
             "ready": ready == "True", "restartCount": 0, "started": ready == "True",
             "state": state} for n in ("sidecar", "web")],
        "qosClass": "Burstable",
    }}


async def run(patches: int, creates: int) -> None:
    storage = SQLiteStorage(":memory:")
    await storage.start()
    cacher = Cacher(storage)
    registry = new_registry(storage, cacher)
    await cacher.start()
    try:
        await registry.store(NAMESPACES).create(
            Context(), "", {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "default"}})
        pods = registry.store(PODS)
        await pods.create(Context(field_manager="kubectl"), "default", pod("web-0"))
        status = pods.strategy.subresource_strategy("status")
        for i in range(20):  # warm up
            await pods.patch(Context(subresource="status", field_manager="kubelet"),
                             "default", "web-0", STRATEGIC_MERGE_PATCH, status_patch(i),
                             strategy=status)
        t0 = time.process_time()
        for i in range(patches):
            await pods.patch(Context(subresource="status", field_manager="kubelet"),
                             "default", "web-0", STRATEGIC_MERGE_PATCH, status_patch(i),
                             strategy=status)
        t1 = time.process_time()
        for i in range(creates):
            await pods.create(Context(field_manager="kubectl"), "default", pod(f"p-{i}"))
        t2 = time.process_time()
        print(f"status patch: {(t1 - t0) / patches * 1e6:.0f} us CPU each ({patches})")
        if creates:
            print(f"pod create:   {(t2 - t1) / creates * 1e6:.0f} us CPU each ({creates})")
    finally:
        await cacher.stop()
        await storage.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patches", type=int, default=300)
    ap.add_argument("--creates", type=int, default=100)
    args = ap.parse_args()
    asyncio.run(run(args.patches, args.creates))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
