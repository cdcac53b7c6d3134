"""The image manager tries each matching imagePullSecrets entry, then reports the last
failure as ErrImagePull (and backs off: ImagePullBackOff)."""

from __future__ import annotations

import base64
import json
import time

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.kubelet.cri.cri_client import CRICallError
from pykubelet.kubelet.events import reasons
from pykubelet.kubelet.images.image_manager import ImageManager
from pykubelet.kubelet.util.backoff import Backoff


class FakeImages:
    def __init__(self, good_user: str) -> None:
        self.good_user = good_user
        self.pulls: list[str] = []

    def image_status(self, image: str) -> None:
        return None

    def pull_image(self, image, sandbox_config=None, timeout=None, auth=None):  # type: ignore[no-untyped-def]
        user = auth.username if auth is not None else ""
        self.pulls.append(user)
        if user != self.good_user:
            raise CRICallError("PullImage", "PERMISSION_DENIED", "pull access denied")
        return "sha256:x"


def pod(secrets: list[str]):  # type: ignore[no-untyped-def]
    p = decode_pod({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
                    "spec": {"containers": [{"name": "c", "image": "reg.example.com/a:1"}],
                             "imagePullSecrets": [{"name": s} for s in secrets]}})
    set_defaults_pod(p)
    return p


def source(namespace: str, names: list[str]) -> list[dict]:
    out = []
    for name in names:
        doc = {"auths": {"reg.example.com": {"username": name, "password": "pw"}}}
        out.append({"metadata": {"name": name, "namespace": namespace},
                    "type": "kubernetes.io/dockerconfigjson",
                    "data": {".dockerconfigjson": base64.b64encode(
                        json.dumps(doc).encode()).decode()}})
    return out


def test_each_secret_is_tried_until_one_works() -> None:
    cri = FakeImages(good_user="second")
    m = ImageManager(cri, Backoff(time.time))  # type: ignore[arg-type]
    m.secret_source = source
    p = pod(["first", "second"])
    image, reason = m.ensure_image(p, p.spec.containers[0], pb.PodSandboxConfig())
    assert (image, reason) == ("reg.example.com/a:1", "")
    assert cri.pulls == ["first", "second"]


def test_no_working_secret_is_err_image_pull_then_backoff() -> None:
    cri = FakeImages(good_user="nobody")
    m = ImageManager(cri, Backoff(time.time))  # type: ignore[arg-type]
    m.secret_source = source
    p = pod(["first"])
    assert m.ensure_image(p, p.spec.containers[0], pb.PodSandboxConfig())[1] == \
        reasons.ERR_IMAGE_PULL
    assert m.ensure_image(p, p.spec.containers[0], pb.PodSandboxConfig())[1] == \
        reasons.IMAGE_PULL_BACK_OFF
    assert cri.pulls == ["first"]


def test_without_a_secret_source_pulls_are_anonymous() -> None:
    cri = FakeImages(good_user="")
    m = ImageManager(cri, Backoff(time.time))  # type: ignore[arg-type]
    p = pod(["first"])
    assert m.ensure_image(p, p.spec.containers[0], pb.PodSandboxConfig())[1] == ""
    assert cri.pulls == [""]
