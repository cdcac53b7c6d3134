"""ConfigMaps and Secrets a pod refers to (env ``valueFrom``, ``envFrom`` and volumes), read
from the control plane by the node that runs the pod (kubelet's configmap and secret
managers). Without a control plane there are none: a pod that needs them cannot start.

Values come back decoded: a ConfigMap's ``data`` and ``binaryData`` (bytes), a Secret's
``data`` (base64 on the wire) and ``stringData``. Reads are cached for a few seconds per
object, so a pod's containers and volumes in one sync share one read.
"""

from __future__ import annotations

import base64
import threading
import time
from typing import Any, Protocol

from pykubelet.client.informer import Informer
from pykubelet.client.rest import (
    CONFIGMAPS,
    SECRETS,
    ClientError,
    Resource,
    RESTClient,
    StatusError,
)
from pykubelet.kubelet.token.manager import TokenManager

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts")
SERVICES = Resource("", "v1", "services")

CACHE_TTL_S = 5.0


class RefError(Exception):
    """The object could not be read (the control plane is away, or refused)."""


class ObjectRefs(Protocol):
    def configmap(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """The ConfigMap's keys and values; None if it does not exist."""

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """The Secret's keys and decoded values; None if it does not exist."""

    def services(self, namespace: str) -> list[dict[str, Any]]:
        """The Services of ``namespace`` and the default namespace's ``kubernetes``
        Service (what a pod's service environment variables are made of)."""


class APIObjectRefs:
    """ObjectRefs over the API (the node may read what its pods use, by name)."""

    def __init__(self, client: RESTClient, ttl: float = CACHE_TTL_S) -> None:
        self.client = client
        self.ttl = ttl
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], tuple[float, dict[str, bytes] | None]] = {}
        self._last_services: dict[str, list[dict[str, Any]]] = {}
        self._services: Informer | None = None  # the node's Service informer, once started
        # pods' service-account tokens, asked for with the node's credentials
        self.tokens = TokenManager(self._request_token)

    def _request_token(self, namespace: str, name: str, body: dict[str, Any]) -> Any:
        return self.client.request("POST", SERVICE_ACCOUNTS.path(namespace, name, "token"),
                                   body=body)

    def _get(self, kind: str, namespace: str, name: str) -> dict[str, bytes] | None:
        key = (kind, namespace, name)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and now - hit[0] < self.ttl:
                return hit[1]
        res = CONFIGMAPS if kind == "configmap" else SECRETS
        try:
            obj = self.client.get(res, name, namespace)
            value: dict[str, bytes] | None = _values(kind, obj)
        except StatusError as exc:
            if not exc.not_found:
                raise RefError(f'{kind} "{name}": {exc.message}') from None
            value = None
        except ClientError as exc:
            raise RefError(f'{kind} "{name}": {exc}') from None
        with self._lock:
            self._cache[key] = (now, value)
        return value

    def configmap(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return self._get("configmap", namespace, name)

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return self._get("secret", namespace, name)

    def watch_services(self) -> None:
        """Keep every Service in an informer (kubelet's serviceLister: one watch for the
        node), so a container start reads them locally instead of listing them."""
        if self._services is None:
            self._services = Informer(self.client, SERVICES, name="services")
            self._services.start()

    def services_synced(self) -> bool:
        return self._services is not None and self._services.has_synced

    def stop(self) -> None:
        if self._services is not None:
            self._services.stop()

    def services(self, namespace: str) -> list[dict[str, Any]]:
        """From the Service informer once it has synced (current within moments, so a
        Service created just before a pod is in its variables; a cache of seconds missed
        it). Before that, and on a node that never started it, a list request; with the
        control plane away, the last list read for the namespace stands in, as the
        informer's cache would."""
        if self._services is not None and self._services.has_synced:
            return [s for s in self._services.items() if _for_namespace(s, namespace)]
        try:
            items = list(self.client.list(SERVICES, namespace).get("items") or [])
            if namespace != "default":
                try:
                    items.append(self.client.get(SERVICES, "kubernetes", "default"))
                except StatusError as exc:
                    if not exc.not_found:
                        raise
        except (StatusError, ClientError) as exc:
            with self._lock:
                last = self._last_services.get(namespace)
            if last is not None:
                return last
            raise RefError(f"failed to list services when setting up env vars: {exc}"
                           ) from None
        with self._lock:
            self._last_services[namespace] = items
        return items


def _for_namespace(service: dict[str, Any], namespace: str) -> bool:
    """Whether a pod in ``namespace`` gets ``service``'s variables: its namespace's Services
    and the default namespace's ``kubernetes``."""
    meta = service.get("metadata") or {}
    ns = meta.get("namespace")
    return ns == namespace or (ns == "default" and meta.get("name") == "kubernetes")


def _values(kind: str, obj: dict[str, Any]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if kind == "configmap":
        for k, v in (obj.get("data") or {}).items():
            out[k] = str(v).encode()
        for k, v in (obj.get("binaryData") or {}).items():
            out[k] = base64.b64decode(str(v))
    else:
        for k, v in (obj.get("data") or {}).items():
            out[k] = base64.b64decode(str(v))
        for k, v in (obj.get("stringData") or {}).items():
            out[k] = str(v).encode()
    return out
