"""downwardAPI and projected volumes, without root: the files kubelet writes for a pod's
fields and resources (fieldpath.FormatMap, ExtractContainerResourceValue with the node's
allocatable for unset limits), the API decoding and defaults of the two volume kinds, and
their validation as one volume source each."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from pykubelet.api.decode import decode_pod, encode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod
from pykubelet.api.validation import pod_errors
from pykubelet.kubelet.volumemanager import downward_api
from pykubelet.kubelet.volumemanager.volumes import write_projected

ALLOC = {"cpu": Fraction(4), "memory": Fraction(8 << 30), "ephemeral-storage": Fraction(0)}


def pod(volumes: list[dict[str, object]]) -> Pod:
    return set_defaults_pod(decode_pod({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-1",
                     "labels": {"tier": "web", "app": "shop"},
                     "annotations": {"note": 'say "hi"\n'}},
        "spec": {"containers": [{"name": "app", "image": "busybox:1.36", "resources": {
            "requests": {"cpu": "250m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}}],
            "volumes": volumes}}))


def ref(path: str) -> dict[str, object]:
    return {"path": path.replace(".", "_").replace("'", "").replace("[", "_").rstrip("]"),
            "fieldRef": {"fieldPath": path}}


def res(resource: str, divisor: str | None = None) -> dict[str, object]:
    r: dict[str, object] = {"containerName": "app", "resource": resource}
    if divisor:
        r["divisor"] = divisor
    return {"path": resource + (divisor or ""), "resourceFieldRef": r}


def test_field_and_resource_files_as_kubelet_writes_them() -> None:
    items = [ref("metadata.name"), ref("metadata.namespace"), ref("metadata.uid"),
             ref("metadata.labels"), ref("metadata.annotations"),
             ref("metadata.labels['tier']"), res("requests.cpu", "1m"), res("requests.cpu"),
             res("limits.cpu"), res("limits.memory", "1Mi"), res("requests.memory")]
    p = pod([{"name": "info", "downwardAPI": {"items": items}}])
    vol = p.spec.volumes[0].downward_api
    assert vol is not None
    assert vol.default_mode == 0o644
    files = {k: v.decode() for k, (v, mode) in
             downward_api.files(p, vol.items, 0o644, ALLOC).items()}
    assert files == {
        "metadata_name": "web", "metadata_namespace": "shop", "metadata_uid": "u-1",
        "metadata_labels": 'app="shop"\ntier="web"\n',
        "metadata_annotations": 'note="say \\"hi\\"\\n"\n',
        "metadata_labels_tier": "web",
        "requests.cpu1m": "250", "requests.cpu": "1",  # cores, rounded up
        "limits.cpu": "4",  # no limit: the node's allocatable
        "limits.memory1Mi": "64", "requests.memory": str(32 << 20)}


@pytest.mark.parametrize("bad", [{"path": "x", "fieldRef": {"fieldPath": "spec.nodeName"}},
                                 {"path": "x", "resourceFieldRef": {"containerName": "nope",
                                                                    "resource": "limits.cpu"}},
                                 {"path": "x", "resourceFieldRef": {"containerName": "app",
                                                                    "resource": "limits.gpu"}}])
def test_what_the_downward_api_does_not_offer_is_an_error(bad: dict[str, object]) -> None:
    p = pod([{"name": "info", "downwardAPI": {"items": [bad]}}])
    vol = p.spec.volumes[0].downward_api
    assert vol is not None
    with pytest.raises(downward_api.DownwardAPIError):
        downward_api.files(p, vol.items, 0o644, ALLOC)


def test_the_volume_kinds_decode_default_and_validate() -> None:
    p = pod([{"name": "info", "downwardAPI": {"items": [ref("metadata.name")]}},
             {"name": "proj", "projected": {"sources": [
                 {"serviceAccountToken": {"path": "token"}},
                 {"configMap": {"name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                 {"downwardAPI": {"items": [ref("metadata.namespace")]}}]}}])
    info, proj = p.spec.volumes
    assert info.empty_dir is None  # not taken for a volume without a source
    assert proj.empty_dir is None
    assert proj.projected is not None
    assert proj.projected.default_mode == 0o644
    token = proj.projected.sources[0].service_account_token
    assert token is not None
    assert token.expiration_seconds == 3600
    wire = encode_pod(p)["spec"]["volumes"]
    assert wire[0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.name"
    assert wire[1]["projected"]["sources"][2]["downwardAPI"]["items"][0]["path"]
    assert pod_errors(p) == []
    both = pod([{"name": "x", "downwardAPI": {"items": []}, "emptyDir": {}}])
    errs = pod_errors(both)
    assert any("may not specify more than 1 volume type" in str(e) for e in errs), errs


def test_files_are_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert write_projected(target, {"name": (b"web", 0o644)})
    assert (target / "name").read_text() == "web"
    assert (target / "name").is_symlink()
    assert not write_projected(target, {"name": (b"web", 0o644)})  # unchanged: no write
