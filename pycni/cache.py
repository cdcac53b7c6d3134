"""libcni's result cache: ``<cache_dir>/results/<network>-<containerID>-<ifName>``.

The file is what libcni writes (kind ``cniCacheV1``), so a reference runtime
and ours can read each other's cache: the conf list bytes (base64, as Go
encodes ``[]byte``), the runtime args, and the final result of ADD. DEL hands
the cached result to the plugins as ``prevResult``; CHECK checks against it.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from typing import Any

from pycni.atomic_files import write_atomic
from pycni.errors import InvalidEnvironment
from pycni.spec import Result

CACHE_KIND = "cniCacheV1"


@dataclass
class CachedAttachment:
    container_id: str
    network_name: str
    ifname: str
    config: bytes = b""
    netns: str = ""
    cni_args: list[tuple[str, str]] = field(default_factory=list)
    capability_args: dict[str, Any] = field(default_factory=dict)
    raw_result: dict[str, Any] | None = None


def cache_path(cache_dir: str, network: str, container_id: str, ifname: str) -> str:
    if not network or not container_id or not ifname:
        raise InvalidEnvironment(
            "cache file path requires network name "
            f'("{network}"), container ID ("{container_id}"), and interface name ("{ifname}")'
        )
    return os.path.join(cache_dir, "results", f"{network}-{container_id}-{ifname}")


def write_result(
    cache_dir: str,
    network: str,
    att: CachedAttachment,
    result: Result,
    cni_version: str,
) -> str:
    """Write atomically (temp file + rename), mode 0600, dir 0700, as libcni's cacheAdd."""
    path = cache_path(cache_dir, network, att.container_id, att.ifname)
    doc: dict[str, Any] = {
        "kind": CACHE_KIND,
        "containerId": att.container_id,
        "config": base64.b64encode(att.config).decode(),
        "ifName": att.ifname,
        "networkName": network,
    }
    if att.netns:
        doc["netns"] = att.netns
    if att.cni_args:
        doc["cniArgs"] = [[k, v] for k, v in att.cni_args]
    if att.capability_args:
        doc["capabilityArgs"] = att.capability_args
    doc["result"] = result.to_dict(cni_version or result.cni_version)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    # as libcni's cache: atomic for readers, not flushed (DEL works without a result too)
    write_atomic(path, json.dumps(doc), mode=0o600, durable=False)
    return path


def read_attachment(
    cache_dir: str, network: str, container_id: str, ifname: str
) -> CachedAttachment | None:
    """The cached entry, None when there is none; ValueError for an unreadable one."""
    path = cache_path(cache_dir, network, container_id, ifname)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None  # libcni ignores read errors: the cache may not exist
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise ValueError(f'failed to unmarshal cached network "{network}" config: {exc}') from exc
    if not isinstance(doc, dict):
        raise ValueError(f'cached network "{network}" config is not an object')
    if doc.get("kind") != CACHE_KIND:
        # A legacy cache file: the bare result.
        return CachedAttachment(container_id, network, ifname, raw_result=doc)
    raw_args = doc.get("cniArgs") or []
    return CachedAttachment(
        container_id=str(doc.get("containerId", container_id)),
        network_name=str(doc.get("networkName", network)),
        ifname=str(doc.get("ifName", ifname)),
        config=base64.b64decode(doc.get("config") or ""),
        netns=str(doc.get("netns", "")),
        cni_args=[(str(k), str(v)) for k, v in raw_args],
        capability_args=dict(doc.get("capabilityArgs") or {}),
        raw_result=doc.get("result"),
    )


def read_result(
    cache_dir: str, network: str, container_id: str, ifname: str, cni_version: str
) -> Result | None:
    """The cached result converted to ``cni_version`` (the list's), as libcni's getCachedResult."""
    att = read_attachment(cache_dir, network, container_id, ifname)
    if att is None or att.raw_result is None:
        return None
    result = Result.from_dict(att.raw_result)
    if cni_version and cni_version != result.cni_version:
        result = result.converted(cni_version)
    return result


def delete_result(cache_dir: str, network: str, container_id: str, ifname: str) -> None:
    try:
        os.unlink(cache_path(cache_dir, network, container_id, ifname))
    except (FileNotFoundError, InvalidEnvironment):
        pass


def list_attachments(cache_dir: str, container_id: str = "") -> list[CachedAttachment]:
    """libcni's GetCachedAttachments: every cniCacheV1 entry (of one container if given)."""
    results_dir = os.path.join(cache_dir, "results")
    try:
        names = sorted(os.listdir(results_dir))
    except FileNotFoundError:
        return []
    out: list[CachedAttachment] = []
    for name in names:
        if container_id:
            part = f"-{container_id}-"
            pos = name.find(part)
            if pos <= 0 or pos + len(part) >= len(name):
                continue
        try:
            with open(os.path.join(results_dir, name), "rb") as f:
                doc = json.loads(f.read())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or doc.get("kind") != CACHE_KIND:
            continue
        if container_id and doc.get("containerId") != container_id:
            continue
        if not doc.get("ifName") or not doc.get("networkName"):
            continue
        out.append(
            CachedAttachment(
                container_id=str(doc.get("containerId", "")),
                network_name=str(doc["networkName"]),
                ifname=str(doc["ifName"]),
                config=base64.b64decode(doc.get("config") or ""),
                netns=str(doc.get("netns", "")),
                cni_args=[(str(k), str(v)) for k, v in doc.get("cniArgs") or []],
                capability_args=dict(doc.get("capabilityArgs") or {}),
                raw_result=doc.get("result"),
            )
        )
    return out
