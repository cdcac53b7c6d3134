"""The serviceaccount-controller and root-ca-cert-publisher: every active namespace, old or
new, gets a ServiceAccount ``default`` and a ConfigMap ``kube-root-ca.crt`` with the CA;
a deleted one comes back, a changed CA bundle is put back, a terminating namespace is
left alone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from registry_fixture import memory_registry

from pykubelet.controlplane.controllers.serviceaccounts import (
    DESCRIPTION,
    RootCACertPublisher,
    ServiceAccountsController,
)
from pykubelet.controlplane.registry.resources import CONFIGMAPS, NAMESPACES, SERVICE_ACCOUNTS
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


async def until(what: str, check: Callable[[], Any]) -> None:
    for _ in range(300):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


async def running(reg: Registry, body: Callable[[], Any]) -> None:
    controllers = [ServiceAccountsController(reg), RootCACertPublisher(reg, CA)]
    tasks = [asyncio.create_task(c.queue.run()) for c in controllers]
    for c in controllers:
        c.start()
    try:
        await body()
    finally:
        for c in controllers:
            c.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def test_every_namespace_gets_default_and_the_root_ca() -> None:
    async def main() -> None:
        async with memory_registry(("default", "kube-system")) as reg:
            sas, cms = reg.store(SERVICE_ACCOUNTS), reg.store(CONFIGMAPS)
            ctx = Context()

            async def body() -> None:
                await until("default SAs in the first namespaces",
                            lambda: sas.lookup("default", "default")
                            and sas.lookup("kube-system", "default"))
                await reg.store(NAMESPACES).create(ctx, "", {
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
                await until("default SA in team-a", lambda: sas.lookup("team-a", "default"))
                await until("kube-root-ca.crt in team-a",
                            lambda: cms.lookup("team-a", "kube-root-ca.crt"))
                cm = cms.get("team-a", "kube-root-ca.crt").obj()
                assert cm["data"] == {"ca.crt": CA}
                assert DESCRIPTION in cm["metadata"]["annotations"]
                # deleted: made again
                await sas.delete(ctx, "team-a", "default", DeleteOptions())
                await until("default SA back", lambda: sas.lookup("team-a", "default"))
                # changed: put back
                cm["data"] = {"ca.crt": "tampered"}
                await cms.update(ctx, "team-a", "kube-root-ca.crt", cm)
                await until("CA bundle put back", lambda: cms.get(
                    "team-a", "kube-root-ca.crt").obj()["data"] == {"ca.crt": CA})
                await cms.delete(ctx, "team-a", "kube-root-ca.crt", DeleteOptions())
                await until("CA configmap back",
                            lambda: cms.lookup("team-a", "kube-root-ca.crt"))

            await running(reg, body)

    asyncio.run(main())
