"""Two controllers that give every namespace what its pods' service-account tokens need,
as kube-controller-manager's ``serviceaccount-controller`` and
``root-ca-cert-publisher`` do: a ServiceAccount ``default`` (made again if deleted), and
the ConfigMap ``kube-root-ca.crt`` whose ``ca.crt`` is the cluster's CA (put back as it
was if changed or deleted). A terminating namespace gets neither. Both are keyed by
namespace: a namespace event, or an event of the object they keep, queues its namespace."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.informer import InformerController
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import (
    CONFIGMAPS,
    NAMESPACES,
    SERVICE_ACCOUNTS,
    ResourceInfo,
)
from pykubelet.controlplane.registry.store import Context, Entry, Registry
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)
Obj = dict[str, Any]

DEFAULT_SA = "default"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
DESCRIPTION = "kubernetes.io/description"
# rootcacertpublisher/publisher.go's annotation
DESCRIPTION_TEXT = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.")


def root_ca_configmap(namespace: str, ca_pem: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": namespace,
                         "annotations": {DESCRIPTION: DESCRIPTION_TEXT}},
            "data": {ROOT_CA_KEY: ca_pem}}


class PerNamespace(InformerController):
    """Keeps one object of ``kept`` named ``name`` in every active namespace."""

    kept: ResourceInfo
    name: str
    controller: str

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.primary = registry.store(NAMESPACES)
        self.store = registry.store(self.kept)
        self.queue: WorkQueue = WorkQueue(self.controller, self.sync)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        attrs = ev.entry.attrs
        if cache.prefix == NAMESPACES.storage_prefix and ev.type != "DELETED":
            self.queue.add(f"/{attrs.name}")
        elif cache.prefix == self.kept.storage_prefix and attrs.name == self.name:
            self.queue.add(f"/{attrs.namespace}")

    async def sync(self, key: str) -> None:
        namespace = key.partition("/")[2]
        ns = self.primary.lookup("", namespace)
        if ns is None or ns.attrs.fields.get("status.phase") == "Terminating":
            return
        try:
            await self.reconcile(namespace, self.store.lookup(namespace, self.name))
        except errors.StatusError as exc:
            # 409/AlreadyExists: changed meanwhile (that change queued it again); 403/404:
            # the namespace is going
            if exc.code not in (403, 404, 409):
                raise

    async def reconcile(self, namespace: str, current: Entry | None) -> None:
        raise NotImplementedError


class ServiceAccountsController(PerNamespace):
    """serviceaccounts_controller.go: a ``default`` ServiceAccount in every namespace."""

    kept, name, controller = SERVICE_ACCOUNTS, DEFAULT_SA, "serviceaccount-controller"

    async def reconcile(self, namespace: str, current: Entry | None) -> None:
        if current is None:
            await self.store.create(Context(), namespace, {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_SA, "namespace": namespace}})


class RootCACertPublisher(PerNamespace):
    """rootcacertpublisher: ``kube-root-ca.crt`` holding the cluster's CA everywhere."""

    kept, name, controller = CONFIGMAPS, ROOT_CA_CONFIGMAP, "root-ca-cert-publisher"

    def __init__(self, registry: Registry, ca_pem: str) -> None:
        super().__init__(registry)
        self.ca_pem = ca_pem

    async def reconcile(self, namespace: str, current: Entry | None) -> None:
        if current is None:
            await self.store.create(Context(), namespace,
                                    root_ca_configmap(namespace, self.ca_pem))
            return
        cm = current.obj()
        annotations = (cm.get("metadata") or {}).get("annotations") or {}
        if cm.get("data") == {ROOT_CA_KEY: self.ca_pem} and DESCRIPTION in annotations:
            return
        cm["data"] = {ROOT_CA_KEY: self.ca_pem}
        cm.pop("binaryData", None)
        cm["metadata"]["annotations"] = {**annotations, DESCRIPTION: DESCRIPTION_TEXT}
        await self.store.update(Context(), namespace, ROOT_CA_CONFIGMAP, cm)


async def run_serviceaccounts_controller(cp: ControlPlane) -> None:
    await ServiceAccountsController(cp.registry).run()


async def run_root_ca_cert_publisher(cp: ControlPlane) -> None:
    await RootCACertPublisher(cp.registry, cp.pki.ca_pem.decode()).run()
