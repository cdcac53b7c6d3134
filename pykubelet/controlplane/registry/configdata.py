"""ConfigMaps and Secrets (pkg/registry/core/{configmap,secret}): keys are config keys,
at most 1 MiB in all, immutable once ``immutable: true``; a Secret's ``stringData`` is
folded into ``data`` (base64) on write, its ``type`` defaults to Opaque and is fixed."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from pykubelet.controlplane.registry.resources import CONFIGMAPS, SECRETS
from pykubelet.controlplane.registry.strategy import Obj, Strategy, forbidden, invalid

MAX_SIZE = 1024 * 1024
_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")
KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
           "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
           "'[-._a-zA-Z0-9]+')")


def _key_errors(path: str, keys: list[str]) -> list[str]:
    errs = []
    for k in keys:
        if len(k) > 253:
            errs.append(invalid(f"{path}[{k}]", k, "must be no more than 253 characters"))
        if not _KEY_RE.match(k):
            errs.append(invalid(f"{path}[{k}]", k, KEY_MSG))
        elif k in (".", ".."):
            errs.append(invalid(f"{path}[{k}]", k, f"must not be '{k}'"))
    return errs


def _immutable_errors(new: Obj, old: Obj, fields: tuple[str, ...]) -> list[str]:
    if not old.get("immutable"):
        return []
    errs = []
    if not new.get("immutable"):
        errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    for f in fields:
        if (new.get(f) or {}) != (old.get(f) or {}):
            errs.append(forbidden(f, "field is immutable when `immutable` is set"))
    return errs


class ConfigMapStrategy(Strategy):
    info = CONFIGMAPS

    def validate(self, obj: Obj) -> list[Any]:
        data = obj.get("data") or {}
        binary = obj.get("binaryData") or {}
        errs = super().validate(obj) + _key_errors("data", list(data))
        errs += _key_errors("binaryData", list(binary))
        for k in set(data) & set(binary):
            errs.append(f'data[{k}]: Invalid value: "{k}": duplicate of key present in binaryData')
        size = sum(len(k) + len(v) for k, v in data.items()) + sum(
            len(k) + len(v) for k, v in binary.items())
        if size > MAX_SIZE:
            errs.append(f"[]: Too long: must have at most {MAX_SIZE} bytes")
        return errs

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        return super().validate_update(new, old) + _immutable_errors(new, old,
                                                                     ("data", "binaryData"))


class SecretStrategy(Strategy):
    info = SECRETS
    selectable_fields = ("type",)

    def decode(self, body: Obj, unknown: str = "Strict") -> tuple[Obj, list[str]]:
        obj, warnings = super().decode(body, unknown)
        data = dict(obj.get("data") or {})
        for k, v in data.items():
            if not isinstance(v, str):
                raise ValueError(f"data.{k}: expected a base64 string")
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"data.{k}: illegal base64 data") from None
        for k, v in (obj.pop("stringData", None) or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        if data or "data" in obj:
            obj["data"] = data
        if not obj.get("type"):
            obj["type"] = "Opaque"
        return obj, warnings

    def validate(self, obj: Obj) -> list[Any]:
        data = obj.get("data") or {}
        errs = super().validate(obj) + _key_errors("data", list(data))
        size = sum(len(k) + len(base64.b64decode(v)) for k, v in data.items())
        if size > MAX_SIZE:
            errs.append(f"data: Too long: must have at most {MAX_SIZE} bytes")
        if obj.get("type") == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" not in data:
            errs.append('data[.dockerconfigjson]: Required value')
        return errs

    def validate_update(self, new: Obj, old: Obj) -> list[Any]:
        errs = super().validate_update(new, old) + _immutable_errors(new, old, ("data",))
        if new.get("type") != old.get("type"):
            errs.append(invalid("type", new.get("type", ""), "field is immutable"))
        return errs

    def fields(self, obj: Obj) -> dict[str, str]:
        return {"type": obj.get("type", "")}
