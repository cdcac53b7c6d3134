"""ConfigMaps and Secrets (pkg/registry/core/{configmap,secret}): the object model checks
keys, sizes and immutability and folds a Secret's ``stringData`` into ``data``; here only
what selectors may use."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import CONFIGMAPS, SECRETS
from pykubelet.controlplane.registry.strategy import Obj, Strategy


class ConfigMapStrategy(Strategy):
    info = CONFIGMAPS


class SecretStrategy(Strategy):
    info = SECRETS
    selectable_fields = ("type",)

    def fields(self, obj: Obj) -> dict[str, str]:
        return {"type": obj.get("type", "")}
