"""Static pods from ``staticPodPath``, as kubelet's config/file.go.

Every regular file in the directory (hidden files skipped) holds one or more Pods. Each
pod gets kubelet's file-source defaults: the name suffixed with ``-<nodeName>``, namespace
``default`` when unset, ``spec.nodeName`` set to this node, and a UID hashed from the
document, the node name and the file path (so the same manifest keeps its UID across
restarts of the agent, and an edited manifest is a new pod), plus the
``kubernetes.io/config.*`` annotations. The directory is re-read every period (kubelet's
fileCheckFrequency); a bad file is reported and skipped, never half-applied.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.errors import APIError
from pykubelet.api.manifest import load_documents
from pykubelet.api.types import Pod
from pykubelet.api.validation import validate_pod
from pykubelet.kubelet.util.periodic import Periodic

log = logging.getLogger(__name__)

CONFIG_HASH_ANNOTATION = "kubernetes.io/config.hash"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_SEEN_ANNOTATION = "kubernetes.io/config.seen"
# Upstream polls every 20 s and also watches with inotify; we stat the directory often
# and parse only files whose (mtime, size) changed, so a new manifest starts at once.
FILE_CHECK_PERIOD_S = 0.1


@dataclass(frozen=True)
class SourceError:
    path: str
    message: str


def static_pod_uid(doc: object, node_name: str, path: str) -> str:
    """md5 over the document, then "host:<node>" and "file:<path>" (applyDefaults)."""
    h = hashlib.md5(usedforsecurity=False)
    h.update(json.dumps(doc, sort_keys=True, default=str).encode())
    h.update(f"host:{node_name}".encode())
    h.update(f"file:{path}".encode())
    return h.hexdigest()


def pod_from_document(doc: object, node_name: str, path: str) -> Pod:
    """Decode one manifest document into a static pod with the file-source defaults."""
    pod = decode_pod(doc)
    if not pod.metadata.uid:
        pod.metadata.uid = static_pod_uid(doc, node_name, path)
    pod.metadata.name = f"{pod.metadata.name}-{node_name}" if pod.metadata.name else ""
    if not pod.metadata.namespace:
        pod.metadata.namespace = "default"
    pod.spec.node_name = node_name
    pod.metadata.annotations[CONFIG_HASH_ANNOTATION] = pod.metadata.uid
    pod.metadata.annotations[CONFIG_SOURCE_ANNOTATION] = "file"
    set_defaults_pod(pod)
    validate_pod(pod)
    return pod


def _read_file(f: Path, node_name: str) -> list[Pod] | SourceError:
    try:
        docs = load_documents(f.read_text(), str(f))
        return [pod_from_document(doc, node_name, str(f)) for doc in docs]
    except (APIError, OSError, UnicodeDecodeError) as exc:
        return SourceError(str(f), str(exc))


def _manifest_files(directory: str) -> dict[str, tuple[int, int]]:
    """name -> (mtime_ns, size) of the regular, non-hidden files."""
    out: dict[str, tuple[int, int]] = {}
    d = Path(directory)
    if not d.is_dir():
        return out
    for f in d.iterdir():
        if f.name.startswith("."):
            continue
        try:
            st = f.stat()
        except OSError:
            continue
        if f.is_file():
            out[f.name] = (st.st_mtime_ns, st.st_size)
    return out


def read_static_pods(
    directory: str,
    node_name: str,
    cache: dict[str, tuple[tuple[int, int], list[Pod] | SourceError]] | None = None,
) -> tuple[list[Pod], list[SourceError]]:
    """All pods of the directory's manifests, and the files that could not be used.
    With ``cache``, files whose (mtime, size) did not change are not parsed again."""
    pods: list[Pod] = []
    errors: list[SourceError] = []
    files = _manifest_files(directory)
    if cache is not None:
        for gone in set(cache) - set(files):
            del cache[gone]
    for name in sorted(files):
        stamp = files[name]
        hit = cache.get(name) if cache is not None else None
        if hit is not None and hit[0] == stamp:
            got = hit[1]
        else:
            got = _read_file(Path(directory) / name, node_name)
            if cache is not None:
                cache[name] = (stamp, got)
        if isinstance(got, SourceError):
            errors.append(got)
        else:
            pods.extend(got)
    seen: set[str] = set()
    unique = []
    for p in pods:
        key = f"{p.namespace}/{p.name}"
        if key in seen:
            errors.append(SourceError(key, "duplicate pod name, ignored"))
            continue
        seen.add(key)
        unique.append(p)
    return unique, errors


class StaticPodSource:
    """Polls the directory and hands the full desired set to ``on_pods`` on change."""

    def __init__(
        self,
        directory: str,
        node_name: str,
        on_pods: Callable[[list[Pod]], None],
        period: float = FILE_CHECK_PERIOD_S,
    ) -> None:
        self.directory = directory
        self.node_name = node_name
        self._on_pods = on_pods
        self._loop = Periodic("static-pods", self.poll, period)
        self._last: dict[str, str] | None = None
        self._cache: dict[str, tuple[tuple[int, int], list[Pod] | SourceError]] = {}
        self.errors: list[SourceError] = []

    def poll(self) -> None:
        pods, errors = read_static_pods(self.directory, self.node_name, self._cache)
        for e in errors:
            if e not in self.errors:
                log.warning("static pod %s: %s", e.path, e.message)
        self.errors = errors
        fingerprint = {p.uid: p.name for p in pods}
        if fingerprint != self._last:
            self._last = fingerprint
            self._on_pods(pods)

    def start(self) -> None:
        if not Path(self.directory).is_dir():
            log.info("staticPodPath %s does not exist (yet): no static pods", self.directory)
        self.poll()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
