"""Pulling images from registries that speak the OCI distribution API (Docker Registry v2),
as containerd CRI's images/image_pull.go (this module was runtime/registry.py: in pykubelet a
"registry" is the API server's layer, pykubelet.controlplane.registry).

``pull_image(store, ref, credentials, options)``:

1. the manifest by tag or digest (``Accept``: OCI and Docker schema 2 manifests and indexes);
   an index (manifest list) gives the manifest of the node's platform (linux/amd64 here);
2. the config blob, then every layer whose diff_id the store has not unpacked yet,
   downloaded concurrently into the store's tmp dir, each checked against its digest as it
   streams and unpacked (once, checked against its diff_id) as soon as it is complete,
   while the others still download; then the store records the image;
3. authentication as registries ask for it (``WWW-Authenticate`` on a 401): Basic with the
   pull's credentials, or Bearer, the token dance of Docker Hub-style registries (GET the
   realm with service and scope ``repository:<name>:pull``, Basic credentials when we have
   them, and use the returned ``token``/``access_token``); an identity token is sent as a
   refresh token (OAuth2 POST), a registry token as the Bearer token itself.

Plain HTTP is used only for registries configured insecure (``localhost`` and loopback
addresses by default, as containerd and docker treat them); everything else is HTTPS.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import json
import platform
import queue
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from pykubelet.runtime import imageref
from pykubelet.runtime.errors import (
    CRIError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from pykubelet.runtime.images import Image, ImageStore, LayerProgress

MEDIA_OCI_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MEDIA_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEXES = (MEDIA_OCI_INDEX, MEDIA_DOCKER_LIST)
MANIFESTS = (MEDIA_OCI_MANIFEST, MEDIA_DOCKER_MANIFEST)
ACCEPT = ", ".join((MEDIA_OCI_INDEX, MEDIA_DOCKER_LIST, MEDIA_OCI_MANIFEST,
                    MEDIA_DOCKER_MANIFEST))
DOCKER_HUB = "registry-1.docker.io"
DEFAULT_INSECURE = ("localhost", "127.0.0.1", "::1")
MAX_MANIFEST = 4 << 20
CHUNK = 1 << 20


@dataclass(frozen=True)
class Credentials:
    """What CRI's AuthConfig carries (kubelet fills it from imagePullSecrets)."""

    username: str = ""
    password: str = ""
    identity_token: str = ""
    registry_token: str = ""

    @property
    def empty(self) -> bool:
        return not (self.username or self.password or self.identity_token
                    or self.registry_token)


@dataclass(frozen=True)
class PullOptions:
    insecure_registries: tuple[str, ...] = DEFAULT_INSECURE  # host or host:port, plain HTTP
    max_concurrent_downloads: int = 3  # containerd's max_concurrent_downloads default
    os: str = "linux"
    architecture: str = field(default_factory=lambda: node_architecture())


def node_architecture() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386",
            "ppc64le": "ppc64le", "s390x": "s390x"}.get(machine, machine)


@dataclass(frozen=True)
class Reference:
    """A normalised reference split for the distribution API."""

    domain: str
    repository: str
    tag: str
    digest: str
    normalized: str

    @classmethod
    def parse(cls, ref: str) -> Reference:
        norm = imageref.normalize(ref, field="image")
        name, _, digest = norm.partition("@")
        tag = ""
        if not digest:
            name, _, tag = name.rpartition(":")
        domain, _, repo = name.partition("/")
        return cls(domain, repo, tag, digest, norm)

    @property
    def host(self) -> str:
        return DOCKER_HUB if self.domain == imageref.DEFAULT_DOMAIN else self.domain

    @property
    def reference(self) -> str:
        return self.digest or self.tag


def is_insecure(host: str, insecure: tuple[str, ...]) -> bool:
    bare = host.rsplit(":", 1)[0].strip("[]") if not host.endswith("]") else host.strip("[]")
    return host in insecure or bare in insecure


_PARAM = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))')


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``Bearer realm="...",service="...",scope="..."`` -> ("bearer", {...})."""
    scheme, _, rest = header.strip().partition(" ")
    params = {m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
              for m in _PARAM.finditer(rest)}
    return scheme.lower(), params


def _sha256_hex(digest: str) -> str:
    algo, _, hexpart = digest.partition(":")
    if algo != "sha256" or not re.fullmatch(r"[0-9a-f]{64}", hexpart):
        raise InvalidArgument(f"unsupported digest {digest!r}")
    return hexpart


class RegistryClient:
    """One repository on one registry, with the auth its challenges ask for."""

    def __init__(self, http: aiohttp.ClientSession, ref: Reference, creds: Credentials,
                 options: PullOptions) -> None:
        self.http = http
        self.ref = ref
        self.creds = creds
        scheme = "http" if is_insecure(ref.host, options.insecure_registries) else "https"
        self.base = f"{scheme}://{ref.host}/v2/{ref.repository}"
        self._auth: str | None = None
        self._auth_lock = asyncio.Lock()

    async def _authorize(self, challenge: str) -> None:
        scheme, params = parse_challenge(challenge)
        if scheme == "basic":
            if not (self.creds.username or self.creds.password):
                raise PermissionDenied(f"pull {self.ref.normalized}: the registry asks for "
                                       "credentials and none were given")
            raw = f"{self.creds.username}:{self.creds.password}".encode()
            self._auth = "Basic " + base64.b64encode(raw).decode()
            return
        if scheme != "bearer" or not params.get("realm"):
            raise PermissionDenied(f"pull {self.ref.normalized}: unsupported authentication "
                                   f"challenge {challenge!r}")
        if self.creds.registry_token:
            self._auth = "Bearer " + self.creds.registry_token
            return
        scope = params.get("scope") or f"repository:{self.ref.repository}:pull"
        query = {"scope": scope}
        if params.get("service"):
            query["service"] = params["service"]
        try:
            if self.creds.identity_token:  # OAuth2 refresh token (docker's identitytoken)
                form = {"grant_type": "refresh_token", "refresh_token":
                        self.creds.identity_token, "client_id": "pykubelet", **query}
                req = self.http.post(params["realm"], data=form)
            else:
                headers = {}
                if self.creds.username or self.creds.password:
                    raw = f"{self.creds.username}:{self.creds.password}".encode()
                    headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
                req = self.http.get(params["realm"], params=query, headers=headers)
            async with req as resp:
                body = await resp.read()
                if resp.status in (401, 403):
                    raise PermissionDenied(f"pull {self.ref.normalized}: the token server "
                                           f"refused the credentials (HTTP {resp.status})")
                if resp.status != 200:
                    raise Unavailable(f"pull {self.ref.normalized}: token server "
                                      f"{params['realm']} answered HTTP {resp.status}")
        except aiohttp.ClientError as exc:
            raise Unavailable(f"pull {self.ref.normalized}: token server "
                              f"{params['realm']}: {exc}") from exc
        try:
            doc = json.loads(body)
            token = doc.get("token") or doc.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not token:
            raise Unavailable(f"pull {self.ref.normalized}: token server gave no token")
        self._auth = "Bearer " + token

    @contextlib.asynccontextmanager
    async def get(self, path: str, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
        """GET ``<base><path>``, answering one auth challenge; yields the 2xx response."""
        url = self.base + path
        for attempt in range(2):
            hdrs = dict(headers or {})
            if self._auth:
                hdrs["Authorization"] = self._auth
            try:
                resp = await self.http.get(url, headers=hdrs)
            except aiohttp.ClientError as exc:
                raise Unavailable(f"pull {self.ref.normalized}: {self.ref.host}: {exc}") from exc
            try:
                if resp.status == 401 and attempt == 0:
                    challenge = resp.headers.get("WWW-Authenticate", "")
                    async with self._auth_lock:
                        await self._authorize(challenge)
                    continue
                if resp.status in (401, 403):
                    raise PermissionDenied(
                        f"pull {self.ref.normalized}: {self.ref.host} refused access "
                        f"(HTTP {resp.status}): {(await resp.text())[:200]}")
                if resp.status == 404:
                    raise NotFound(f"pull {self.ref.normalized}: not found on "
                                   f"{self.ref.host} ({path})")
                if resp.status >= 300:
                    raise Unavailable(f"pull {self.ref.normalized}: {self.ref.host} answered "
                                      f"HTTP {resp.status} for {path}")
                yield resp
                return
            finally:
                resp.release()
        raise PermissionDenied(f"pull {self.ref.normalized}: authentication failed")

    async def manifest(self, reference: str) -> tuple[str, bytes, str]:
        """(media type, bytes, digest) of a manifest or index; digest-checked when known."""
        async with self.get(f"/manifests/{reference}", {"Accept": ACCEPT}) as resp:
            body = await resp.content.read(MAX_MANIFEST + 1)
            media = resp.headers.get("Content-Type", "").split(";")[0].strip()
        if len(body) > MAX_MANIFEST:
            raise InvalidArgument(f"pull {self.ref.normalized}: manifest larger than 4 MiB")
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if reference.startswith("sha256:") and digest != reference:
            raise InvalidArgument(f"pull {self.ref.normalized}: manifest content {digest} "
                                  f"does not match {reference}")
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise InvalidArgument(f"pull {self.ref.normalized}: manifest is not JSON") from exc
        media = doc.get("mediaType") or media
        if media not in INDEXES + MANIFESTS:
            media = MEDIA_OCI_INDEX if "manifests" in doc else MEDIA_OCI_MANIFEST
        return media, body, digest

    async def blob(self, digest: str) -> bytes:
        async with self.get(f"/blobs/{digest}") as resp:
            data = await resp.read()
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise InvalidArgument(f"pull {self.ref.normalized}: blob {digest} does not "
                                  "match its digest")
        return data

    async def blob_to_sink(self, digest: str, sink: Callable[[bytes], None],
                           progress: Callable[[int], None]) -> None:
        """Stream a blob into ``sink`` chunk by chunk, hashing; a mismatch raises at the end."""
        want = _sha256_hex(digest)
        h = hashlib.sha256()
        async with self.get(f"/blobs/{digest}") as resp:
            async for chunk in resp.content.iter_any():
                h.update(chunk)
                sink(chunk)
                progress(len(chunk))
        if h.hexdigest() != want:
            raise InvalidArgument(f"pull {self.ref.normalized}: layer {digest} does not "
                                  "match its digest")



class ChunkPipe(io.RawIOBase):
    """Bytes handed over from the event loop (``feed``) to a reading thread (``readinto``):
    the download of a layer becomes the input of its unpacking."""

    def __init__(self) -> None:
        super().__init__()
        self._q: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def feed(self, data: bytes) -> None:
        if data:
            self._q.put(bytes(data))

    def finish(self) -> None:
        self._q.put(None)

    def abort(self) -> None:
        self._q.put(ConnectionAbortedError("download failed"))

    def readinto(self, b: Any) -> int:
        while not self._buf:
            item = self._q.get()
            if item is None:
                self._q.put(None)  # later reads see the end too
                return 0
            if isinstance(item, BaseException):
                raise item
            self._buf = memoryview(item)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def choose_platform(index: dict[str, Any], options: PullOptions, what: str) -> dict[str, Any]:
    """The index entry for the node's platform (os/architecture), as containerd's matcher."""
    for desc in index.get("manifests") or []:
        plat = desc.get("platform") or {}
        if plat.get("os") == options.os and plat.get("architecture") == options.architecture:
            return dict(desc)
    found = sorted({f"{(d.get('platform') or {}).get('os')}/"
                    f"{(d.get('platform') or {}).get('architecture')}"
                    for d in index.get("manifests") or []})
    raise NotFound(f"pull {what}: no manifest for {options.os}/{options.architecture} "
                   f"(the image has {', '.join(found) or 'none'})")


async def pull_image_async(store: ImageStore, ref: str, creds: Credentials | None = None,
                           options: PullOptions | None = None,
                           progress: Callable[[LayerProgress], None] | None = None) -> Image:
    options = options or PullOptions()
    creds = creds or Credentials()
    r = Reference.parse(ref)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=300)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        client = RegistryClient(http, r, creds, options)
        media, body, digest = await client.manifest(r.reference)
        if media in INDEXES:
            desc = choose_platform(json.loads(body), options, r.normalized)
            media, body, digest = await client.manifest(desc["digest"])
            if media in INDEXES:
                raise InvalidArgument(f"pull {r.normalized}: nested image indexes")
        manifest = json.loads(body)
        if manifest.get("schemaVersion") != 2 or "config" not in manifest:
            raise InvalidArgument(f"pull {r.normalized}: unsupported manifest "
                                  f"(schema {manifest.get('schemaVersion')}, {media})")
        config = store.config_blob(manifest["config"]["digest"]) or await client.blob(
            manifest["config"]["digest"])
        try:
            diff_ids = list(json.loads(config)["rootfs"]["diff_ids"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidArgument(f"pull {r.normalized}: invalid image config") from exc
        layers = manifest.get("layers") or []
        if len(layers) != len(diff_ids):
            raise InvalidArgument(f"pull {r.normalized}: {len(layers)} layers but "
                                  f"{len(diff_ids)} diff_ids")
        sem = asyncio.Semaphore(max(1, options.max_concurrent_downloads))

        async def fetch(i: int) -> Path | None:
            desc, diff_id = layers[i], diff_ids[i]
            total = int(desc.get("size", 0))
            if store.has_layer(diff_id):
                if progress:
                    progress(LayerProgress(desc["digest"], total, total, skipped=True,
                                           finished=True))
                return None
            done = 0

            def step(n: int) -> None:
                nonlocal done
                done += n
                if progress:
                    progress(LayerProgress(desc["digest"], done, total))

            # the layer is unpacked as it streams in (gunzip, untar and the diff_id
            # check in a thread, the network and the blob digest here): the two cores
            # work at once, and nothing waits for a whole blob on disk
            async with sem:
                pipe = ChunkPipe()
                unpack = asyncio.ensure_future(asyncio.to_thread(
                    store.unpack_reader, pipe,  # type: ignore[arg-type]  # file-like: read()
                    diff_id, desc["digest"]))
                try:
                    await client.blob_to_sink(desc["digest"], pipe.feed, step)
                    pipe.finish()
                    await unpack
                except BaseException:
                    pipe.abort()
                    with contextlib.suppress(Exception):
                        await unpack
                    raise
            if progress:
                progress(LayerProgress(desc["digest"], done, total, finished=True))
            return None

        blobs = await asyncio.gather(*(fetch(i) for i in range(len(layers))))
        size = sum(int(d.get("size", 0)) for d in layers)
        return await asyncio.to_thread(
            store.add_pulled, config=config,
            layers=list(zip(diff_ids, blobs, strict=True)), name=r.normalized,
            manifest_digest=digest, size=size)


def pull_image(store: ImageStore, ref: str, creds: Credentials | None = None,
               options: PullOptions | None = None,
               progress: Callable[[LayerProgress], None] | None = None) -> Image:
    """Blocking pull (a CRI worker thread, the CLI): runs its own event loop."""
    try:
        return asyncio.run(pull_image_async(store, ref, creds, options, progress))
    except CRIError:
        raise
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise Unavailable(f"pull {ref}: {exc}") from exc
