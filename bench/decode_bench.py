#!/usr/bin/env python3
"""Reading Kubernetes objects: text to documents, documents to typed objects, and back.

What `pysched simulate` and the API server pay before any scheduling or storing happens:
  parse    a v1 List of N nodes (plus pods) as JSON text (json) and as YAML text (libyaml)
  decode   pysched's view (pysched.simulate.parse_inputs: strict, upstream-schema checked)
  pod      pykubelet.api's complete Pod: decode_pod, set_defaults_pod + validate_pod, encode_pod
The nodes look like a real cluster's (conditions, addresses, nodeInfo, images), so the walker's
checks of fields the scheduler does not keep are paid too. Prints figures; never fails on time.

  python bench/decode_bench.py                 # 5,000 nodes, 1,000 pods
  python bench/decode_bench.py --nodes 500 --pods 100 --yaml
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from pykubelet.api.decode import decode_pod, encode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.machinery.manifest import parse_document
from pykubelet.api.validation import validate_pod
from pysched.simulate import parse_inputs


def node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i}",
            "uid": f"uid-{i}",
            "resourceVersion": "1",
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {
                "kubernetes.io/hostname": f"node-{i}",
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {
            "podCIDR": f"10.{i // 256}.{i % 256}.0/24",
            "podCIDRs": [f"10.{i // 256}.{i % 256}.0/24"],
            "taints": [] if i % 10 else [{"key": "k", "value": "v", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "allocatable": {"cpu": "3900m", "memory": "31Gi", "pods": "110"},
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "reason": "KubeletReady",
                    "message": "ok",
                    "lastHeartbeatTime": "2024-01-01T00:00:00Z",
                    "lastTransitionTime": "2024-01-01T00:00:00Z",
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.250.{i // 256}.{i % 256}"},
                {"type": "Hostname", "address": f"node-{i}"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1",
                "osImage": "Debian 12", "containerRuntimeVersion": "pykubelet://0.1",
                "kubeletVersion": "v1.32.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [
                {"names": [f"registry/img{j}:1"], "sizeBytes": 1_000_000 * (j + 1)}
                for j in range(5)
            ],
        },
    }


def pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"web-{i}", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "ports": [{"name": "http", "containerPort": 80}],
                    "env": [{"name": "MODE", "value": "prod"}],
                    "envFrom": [{"configMapRef": {"name": "web-config"}}],
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
                    "readinessProbe": {"tcpSocket": {"port": 80}},
                }
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "cfg", "configMap": {"name": "web-config"}},
            ],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ],
        },
    }


def best(fn: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--yaml", action="store_true", help="also time YAML text (slower)")
    args = parser.parse_args()

    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [node(i) for i in range(args.nodes)] + [pod(i) for i in range(args.pods)],
    }
    text = json.dumps(doc)
    print(f"List: {args.nodes} nodes + {args.pods} pods, {len(text) / 1e6:.1f} MB of JSON")
    t = best(lambda: parse_document(text))
    print(f"  parse JSON text            {t:7.3f} s")
    if args.yaml:
        ytext = yaml.safe_dump(doc)
        t = best(lambda: parse_document(ytext), repeat=1)
        print(f"  parse YAML text (libyaml)  {t:7.3f} s   ({len(ytext) / 1e6:.1f} MB)")
    t = best(lambda: parse_inputs(doc))
    per = t / (args.nodes + args.pods) * 1e6
    print(f"  decode (pysched view)      {t:7.3f} s   {per:6.1f} us/object")

    pods = [pod(i) for i in range(args.pods)]
    decoded = [decode_pod(p) for p in pods]
    n = max(args.pods, 1)
    t = best(lambda: [decode_pod(p) for p in pods])
    print(f"Pod (pykubelet.api), {args.pods} pods:")
    print(f"  decode_pod                 {t / n * 1e6:7.1f} us/pod")
    times = []
    for _ in range(3):
        fresh = [decode_pod(p) for p in pods]
        start = time.perf_counter()
        for p in fresh:
            validate_pod(set_defaults_pod(p))
        times.append(time.perf_counter() - start)
    print(f"  set_defaults + validate    {min(times) / n * 1e6:7.1f} us/pod")
    t = best(lambda: [encode_pod(p) for p in decoded])
    print(f"  encode_pod                 {t / n * 1e6:7.1f} us/pod")


if __name__ == "__main__":
    main()
