"""Image reference normalisation, as docker/containerd normalise them."""

from __future__ import annotations

import pytest

from pykubelet.runtime import imageref
from pykubelet.runtime.errors import InvalidArgument

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("ref", "want"),
    [
        ("busybox", "docker.io/library/busybox:latest"),
        ("busybox:1.36", "docker.io/library/busybox:1.36"),
        ("library/busybox", "docker.io/library/busybox:latest"),
        ("user/app:v1", "docker.io/user/app:v1"),
        ("index.docker.io/user/app", "docker.io/user/app:latest"),
        ("localhost/busybox:latest", "localhost/busybox:latest"),
        ("localhost:5000/a/b:c", "localhost:5000/a/b:c"),
        ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
        (f"busybox@{DIGEST}", f"docker.io/library/busybox@{DIGEST}"),
        (f"busybox:1.0@{DIGEST}", f"docker.io/library/busybox@{DIGEST}"),
    ],
)
def test_normalize(ref: str, want: str) -> None:
    assert imageref.normalize(ref) == want


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ("", "empty"),
        ("BusyBox", "not a valid image reference"),
        ("busybox:", "invalid tag"),
        ("busybox@sha256:xyz", "invalid digest"),
        ("a//b", "not a valid image reference"),
    ],
)
def test_normalize_rejects(ref: str, problem: str) -> None:
    with pytest.raises(InvalidArgument, match=problem) as info:
        imageref.normalize(ref, field="image.image")
    assert "image.image" in str(info.value)


def test_ids_and_repository() -> None:
    assert imageref.is_image_id("sha256:" + "0" * 64)
    assert imageref.is_image_id("0" * 64)
    assert not imageref.is_image_id("0" * 12)
    assert imageref.canonical_id("0" * 64) == "sha256:" + "0" * 64
    assert imageref.repository("docker.io/library/busybox:latest") == "docker.io/library/busybox"
    assert imageref.repository("localhost:5000/x:1") == "localhost:5000/x"
