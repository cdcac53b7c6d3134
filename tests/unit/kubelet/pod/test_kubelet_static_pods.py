"""Static pods from a directory: kubelet's file-source defaults, stable UIDs, bad files
reported and skipped."""

from __future__ import annotations

from pykubelet.kubelet.pod.static_pods import CONFIG_SOURCE_ANNOTATION, read_static_pods

POD = """apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: "busybox:1"}]
"""


def test_defaults_and_stable_uid(tmp_path):
    (tmp_path / "web.yaml").write_text(POD)
    (tmp_path / ".hidden.yaml").write_text("garbage: [")
    pods, errors = read_static_pods(str(tmp_path), "n1")
    assert errors == []
    [pod] = pods
    assert pod.name == "web-n1"
    assert pod.namespace == "default"
    assert pod.spec.node_name == "n1"
    assert pod.metadata.annotations[CONFIG_SOURCE_ANNOTATION] == "file"
    assert pod.spec.restart_policy == "Always"
    uid = pod.uid
    assert uid == read_static_pods(str(tmp_path), "n1")[0][0].uid
    assert uid != read_static_pods(str(tmp_path), "n2")[0][0].uid
    (tmp_path / "web.yaml").write_text(POD.replace("busybox:1", "busybox:2"))
    assert read_static_pods(str(tmp_path), "n1")[0][0].uid != uid


def test_bad_file_is_reported_and_skipped(tmp_path):
    (tmp_path / "a.yaml").write_text(POD)
    (tmp_path / "b.yaml").write_text(POD.replace("image:", "imgae:"))
    pods, errors = read_static_pods(str(tmp_path), "n1")
    assert [p.name for p in pods] == ["web-n1"]
    assert len(errors) == 1
    assert errors[0].path.endswith("b.yaml")
    assert "imgae" in errors[0].message


def test_cache_parses_changed_files_only(tmp_path):
    (tmp_path / "a.yaml").write_text(POD)
    cache: dict = {}
    first, _ = read_static_pods(str(tmp_path), "n1", cache)
    again, _ = read_static_pods(str(tmp_path), "n1", cache)
    assert again[0] is first[0]
    (tmp_path / "a.yaml").unlink()
    assert read_static_pods(str(tmp_path), "n1", cache) == ([], [])
    assert cache == {}
    assert read_static_pods(str(tmp_path / "absent"), "n1") == ([], [])
