#!/usr/bin/env python3
"""Custom resource create/s vs a built-in kind (issue 28's measure): against a real
``pykubelet control-plane`` process, ``--clients`` concurrent clients create ConfigMaps and
custom resources of a CRD (schema with a default, an enum and a minimum, so pruning,
defaulting and validation all run) in alternating rounds of the same run. Prints each
kind's creates per second and the CR/ConfigMap ratio. Figures only.

    .venv/bin/python bench/crd_bench.py [--objects N] [--clients N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from api_bench import Server

NS = "default"
GROUP = "bench.example.com"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "replicas": {"type": "integer", "minimum": 1,
                                                "default": 1},
                                   "size": {"type": "string", "enum": ["small", "large"]},
                                   "data": {"type": "object",
                                            "additionalProperties": {"type": "string"}},
                               }}}}}}]},
}
PATHS = {"configmap": f"/api/v1/namespaces/{NS}/configmaps",
         "widget": f"/apis/{GROUP}/v1/namespaces/{NS}/widgets"}


def body(kind: str, name: str) -> bytes:
    data = {"a": "1", "b": "2", "c": "3"}
    if kind == "configmap":
        return json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name}, "data": data}).encode()
    return json.dumps({"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                       "metadata": {"name": name},
                       "spec": {"size": "small", "data": data}}).encode()


async def main(objects: int, clients: int) -> None:
    with tempfile.TemporaryDirectory(prefix="crd-bench-") as tmp:
        server = Server(Path(tmp) / "root")
        try:
            conn = aiohttp.TCPConnector(ssl=server.ssl, limit=clients)
            async with aiohttp.ClientSession(connector=conn) as s:
                headers = server.headers
                async with s.post(server.base + "/apis/apiextensions.k8s.io/v1/"
                                  "customresourcedefinitions", data=json.dumps(CRD).encode(),
                                  headers=headers) as r:
                    assert r.status == 201, await r.text()
                url = f"{server.base}/apis/{GROUP}/v1/namespaces/{NS}/widgets"
                for _ in range(100):  # Established: the resource is served
                    async with s.get(url, headers=headers) as r:
                        if r.status == 200:
                            break
                    await asyncio.sleep(0.05)
                spent = {"configmap": 0.0, "widget": 0.0}
                done = {"configmap": 0, "widget": 0}
                rounds = 10
                for rnd in range(rounds):
                    for kind in ("configmap", "widget"):
                        names = [f"{kind}-{rnd}-{i}" for i in range(objects // rounds)]
                        queue = list(names)

                        async def worker(kind: str = kind, queue: list[str] = queue) -> None:
                            while queue:
                                name = queue.pop()
                                async with s.post(server.base + PATHS[kind],
                                                  data=body(kind, name),
                                                  headers=headers) as r:
                                    await r.read()
                                    assert r.status == 201, r.status

                        t0 = time.perf_counter()
                        await asyncio.gather(*(worker() for _ in range(clients)))
                        spent[kind] += time.perf_counter() - t0
                        done[kind] += len(names)
                rate = {k: done[k] / spent[k] for k in spent}
                for kind in ("configmap", "widget"):
                    print(f"{kind:9s} {rate[kind]:8.1f} creates/s ({done[kind]} objects, "
                          f"{clients} clients)")
                ratio = rate["widget"] / rate["configmap"]
                print(f"custom resource / ConfigMap create rate {ratio:.2f}")
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.objects, args.clients))
