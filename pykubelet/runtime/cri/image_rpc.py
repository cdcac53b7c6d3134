"""ImageService RPCs: protobuf <-> ImageStore.

ImageStatus answers an unset ``image`` for an absent image (not an error), RemoveImage is
idempotent, and PullImage resolves from the local store only for now (a missing image is
NOT_FOUND with a message saying registries are not supported yet).
"""

from __future__ import annotations

import json

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.errors import InvalidArgument
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


class ImageRPC:
    def __init__(self, images: ImageStore) -> None:
        self.images = images

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
        return pb.PullImageResponse(image_ref=self.images.pull(_ref(req.image)).id)

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
