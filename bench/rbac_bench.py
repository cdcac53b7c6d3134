#!/usr/bin/env python3
"""RBAC authorization overhead (issue 21's measure): single pod GETs over HTTPS against a
real ``pykubelet control-plane`` process, as the admin (system:masters, allowed before RBAC
is asked) and as a ``--token-auth-file`` user allowed by a RoleBinding (RBAC's cached rules
answer), interleaved in rounds in the same run; the cluster holds ``--bindings`` other
RoleBindings and ClusterRoleBindings so the user's rules are found among many. Prints the
p50/p99 of each and the p50 ratio (goal <= 1.1x). Figures only.

    .venv/bin/python bench/rbac_bench.py [--gets N] [--bindings N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import aiohttp
from api_bench import Server, ms, pct, pod

TOKEN = "bench-user-token-0123456789"
NS = "default"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


async def main(gets: int, bindings: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rbac-bench-") as tmp:
        root = Path(tmp) / "root"
        tokens = Path(tmp) / "tokens.csv"
        tokens.write_text(f"{TOKEN},bench-user,u-1,bench-group\n")
        server = Server(root, ["--token-auth-file", str(tokens)])
        try:
            conn = aiohttp.TCPConnector(ssl=server.ssl, limit=2)
            async with aiohttp.ClientSession(connector=conn) as s:
                admin = server.headers
                user = {**admin, "Authorization": f"Bearer {TOKEN}"}

                async def post(path: str, body: dict[str, object] | bytes) -> None:
                    data = body if isinstance(body, bytes) else json.dumps(body).encode()
                    async with s.post(server.base + path, data=data, headers=admin) as r:
                        assert r.status == 201, await r.text()

                await post(f"/api/v1/namespaces/{NS}/pods", pod("bench-0"))
                rule = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
                await post(f"{RBAC}/namespaces/{NS}/roles",
                           {"metadata": {"name": "reader"}, "rules": rule})
                await post(f"{RBAC}/clusterroles", {"metadata": {"name": "other"},
                                                    "rules": rule})
                for i in range(bindings):  # bindings that are not the user's
                    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "other"}
                    subj = [{"kind": "User", "name": f"someone-{i}"}]
                    await post(f"{RBAC}/clusterrolebindings",
                               {"metadata": {"name": f"b-{i}"}, "roleRef": ref,
                                "subjects": subj})
                    await post(f"{RBAC}/namespaces/{NS}/rolebindings",
                               {"metadata": {"name": f"b-{i}"}, "roleRef": ref,
                                "subjects": subj})
                await post(f"{RBAC}/namespaces/{NS}/rolebindings", {
                    "metadata": {"name": "reader"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                "name": "reader"},
                    "subjects": [{"kind": "User", "name": "bench-user"}]})
                url = f"{server.base}/api/v1/namespaces/{NS}/pods/bench-0"
                lat: dict[str, list[float]] = {"admin": [], "user": []}
                rounds = 20
                for _ in range(rounds):
                    for who, headers in (("admin", admin), ("user", user)):
                        for _ in range(gets // rounds):
                            t0 = time.perf_counter()
                            async with s.get(url, headers=headers) as r:
                                await r.read()
                                assert r.status == 200, r.status
                            lat[who].append(time.perf_counter() - t0)
                for who, values in lat.items():
                    print(f"{who:6s} GET p50 {ms(pct(values, 0.5))} ms  "
                          f"p99 {ms(pct(values, 0.99))} ms  ({len(values)} GETs)")
                ratio = pct(lat["user"], 0.5) / pct(lat["admin"], 0.5)
                print(f"RBAC/admin p50 ratio {ratio:.3f} (goal <= 1.1) with {2 * bindings} "
                      "other bindings")
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gets", type=int, default=4000)
    parser.add_argument("--bindings", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.gets, args.bindings))
