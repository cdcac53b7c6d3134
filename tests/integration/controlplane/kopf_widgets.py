"""A tiny kopf operator for the kopf test: each Widget gets a ConfigMap holding its size
(created on create, patched on a size change), and a deletion handler, so kopf puts its
finalizer on Widgets; kopf keeps the handlers' results in the Widget's status and posts
Events as it goes."""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.level = 20  # INFO events: "Handler 'create_fn' succeeded."
    settings.posting.loggers = True  # (kopf 1.45 posts its log lines as Events on request)
    settings.watching.server_timeout = 30
    kubernetes.config.load_kube_config()


@kopf.on.create("stable.example.com", "v1", "widgets")
def create_fn(spec: dict[str, Any], name: str, namespace: str, body: Any,
              **_: Any) -> dict[str, str]:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": f"{name}-config"}, "data": {"size": spec["size"]}}
    kopf.adopt(cm, owner=body)
    kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, cm)
    return {"configmap": f"{name}-config"}


@kopf.on.field("stable.example.com", "v1", "widgets", field="spec.size")
def size_fn(new: str, name: str, namespace: str, **_: Any) -> None:
    if new is None:
        return
    kubernetes.client.CoreV1Api().patch_namespaced_config_map(
        f"{name}-config", namespace, {"data": {"size": new}})


@kopf.on.delete("stable.example.com", "v1", "widgets")
def delete_fn(name: str, logger: Any, **_: Any) -> None:
    """A deletion handler: kopf keeps its finalizer on Widgets until this ran."""
    logger.info(f"widget {name} let go")
