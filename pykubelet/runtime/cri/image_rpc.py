"""ImageService RPCs: protobuf <-> ImageStore.

ImageStatus answers an unset ``image`` for an absent image (not an error), RemoveImage is
idempotent. PullImage pulls from the image's registry (``runtime.image_pull``) with the
request's AuthConfig; concurrent pulls of one reference share one download (several pods
starting at once), as containerd's pull deduplication does.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from typing import Any

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime import imageref
from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.image_pull import Credentials, PullOptions, pull_image
from pykubelet.runtime.images import Image, ImageStore


def image_to_pb(img: Image) -> pb.Image:
    out = pb.Image(id=img.id, repo_tags=img.repo_tags, repo_digests=img.repo_digests,
                   size=img.size, spec=pb.ImageSpec(image=img.id))
    user = img.config.user.split(":", 1)[0]
    if user.isdigit():
        out.uid.value = int(user)
    elif user:
        out.username = user
    return out


def _ref(spec: pb.ImageSpec, field: str = "image.image") -> str:
    if not spec.image:
        raise InvalidArgument(f"{field}: required")
    return spec.image


def credentials_from_pb(auth: pb.AuthConfig) -> Credentials:
    """CRI AuthConfig: ``auth`` (base64 user:password) stands for username and password."""
    user, password = auth.username, auth.password
    if auth.auth and not (user or password):
        try:
            user, _, password = base64.b64decode(auth.auth).decode().partition(":")
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidArgument("auth.auth: not base64 of user:password") from exc
    return Credentials(user, password, auth.identity_token, auth.registry_token)


class SingleFlight:
    """Calls with one key at once run once; the others wait and share its result."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, tuple[threading.Event, list[Any]]] = {}

    def do(self, key: str, fn: Callable[[], Any]) -> Any:
        with self._lock:
            call = self._calls.get(key)
            leader = call is None
            if call is None:
                call = self._calls[key] = (threading.Event(), [])
        done, box = call
        if not leader:
            done.wait()
            ok, value = box[0]
            if ok:
                return value
            raise value
        try:
            value = fn()
            box.append((True, value))
            return value
        except BaseException as exc:
            box.append((False, exc))
            raise
        finally:
            with self._lock:
                self._calls.pop(key, None)
            done.set()


class ImageRPC:
    def __init__(self, images: ImageStore, pull_options: PullOptions | None = None) -> None:
        self.images = images
        self.pull_options = pull_options or PullOptions()
        self._pulls = SingleFlight()

    def ListImages(self, req: pb.ListImagesRequest) -> pb.ListImagesResponse:
        if req.HasField("filter") and req.filter.image.image:
            img = self.images.get(req.filter.image.image)
            found = [img] if img is not None else []
        else:
            found = self.images.list()
        return pb.ListImagesResponse(images=[image_to_pb(i) for i in found])

    def ImageStatus(self, req: pb.ImageStatusRequest) -> pb.ImageStatusResponse:
        img = self.images.get(_ref(req.image))
        if img is None:
            return pb.ImageStatusResponse()
        resp = pb.ImageStatusResponse(image=image_to_pb(img))
        if req.verbose:
            resp.info["info"] = json.dumps({"layers": img.layers, "config": img.to_json()[
                "config"], "manifestDigest": img.manifest_digest})
        return resp

    def PullImage(self, req: pb.PullImageRequest) -> pb.PullImageResponse:
        ref = _ref(req.image)
        if imageref.is_image_id(ref.strip()):  # an ID names no registry: it is here or not
            return pb.PullImageResponse(image_ref=self.images.require(ref).id)
        norm = imageref.normalize(ref, field="image.image")
        creds = credentials_from_pb(req.auth)
        key = f"{norm}\0{creds!r}"
        img = self._pulls.do(key, lambda: pull_image(self.images, norm, creds,
                                                     self.pull_options))
        return pb.PullImageResponse(image_ref=img.id)

    def RemoveImage(self, req: pb.RemoveImageRequest) -> pb.RemoveImageResponse:
        self.images.remove(_ref(req.image))
        return pb.RemoveImageResponse()

    def ImageFsInfo(self, req: pb.ImageFsInfoRequest) -> pb.ImageFsInfoResponse:
        info = self.images.fs_info()
        usage = pb.FilesystemUsage(
            timestamp=info.timestamp_ns,
            fs_id=pb.FilesystemIdentifier(mountpoint=info.mountpoint),
            used_bytes=pb.UInt64Value(value=info.used_bytes),
            inodes_used=pb.UInt64Value(value=info.inodes_used),
        )
        return pb.ImageFsInfoResponse(image_filesystems=[usage])
