"""Files the agent writes or reads for pods: /etc/hosts, the CRI log tail used for
FallbackToLogsOnError, the termination-log file, hostPath type checks."""

from __future__ import annotations

import os

import pytest

from pykubelet.api.decode import decode_pod
from pykubelet.kubelet.logs.container_logs import tail_cri_log
from pykubelet.kubelet.volumemanager.volumes import (
    VolumeError,
    ensure_termination_log,
    etc_hosts_path,
    setup_volumes,
    termination_log_path,
    write_etc_hosts,
)


def pod(**spec):
    return decode_pod({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "p", "namespace": "n", "uid": "u1"},
                       "spec": {"containers": [{"name": "c", "image": "i"}], **spec}})


def test_etc_hosts(tmp_path):
    p = pod(hostAliases=[{"ip": "10.0.0.9", "hostnames": ["a", "b"]}])
    path = write_etc_hosts(p, str(tmp_path), "10.1.0.5", "h", "sub.n.svc.cluster.local")
    assert path == etc_hosts_path(str(tmp_path), "u1")
    text = path.read_text()
    assert "127.0.0.1\tlocalhost\n" in text
    assert "10.1.0.5\th.sub.n.svc.cluster.local\th\n" in text
    assert "10.0.0.9\ta\tb\n" in text


def test_tail_cri_log(tmp_path):
    log = tmp_path / "0.log"
    lines = [f"2026-01-01T00:00:0{i}Z stdout F line{i}" for i in range(5)]
    lines.insert(2, "2026-01-01T00:00:09Z stderr P part-")
    lines.insert(3, "2026-01-01T00:00:09Z stderr F end")
    log.write_text("\n".join(lines) + "\n")
    assert tail_cri_log(str(log), 4, 2048) == "part-end\nline2\nline3\nline4\n"
    assert tail_cri_log(str(log), 80, 6) == "\nline4\n"[-6:]
    assert tail_cri_log(str(tmp_path / "absent"), 3, 100) == ""


def test_termination_log_file(tmp_path):
    path = termination_log_path(str(tmp_path), "u1", "c", 2)
    assert path == tmp_path / "pods" / "u1" / "containers" / "c" / "2"
    ensure_termination_log(path)
    assert path.read_text() == ""
    assert os.stat(path).st_mode & 0o777 == 0o666


def test_host_path_types(tmp_path):
    d = tmp_path / "new" / "dir"
    paths = setup_volumes(pod(volumes=[
        {"name": "a", "hostPath": {"path": str(d), "type": "DirectoryOrCreate"}},
        {"name": "b", "hostPath": {"path": str(tmp_path / "f"), "type": "FileOrCreate"}},
        {"name": "e", "emptyDir": {}},
    ]), str(tmp_path / "root"))
    assert d.is_dir()
    assert (tmp_path / "f").is_file()
    assert paths["e"].endswith("pods/u1/volumes/kubernetes.io~empty-dir/e")
    with pytest.raises(VolumeError, match=r"volumes\[x\].hostPath: Directory .* does not exist"):
        setup_volumes(pod(volumes=[{"name": "x", "hostPath": {
            "path": str(tmp_path / "absent"), "type": "Directory"}}]), str(tmp_path / "root"))
    with pytest.raises(VolumeError, match="is not a File"):
        setup_volumes(pod(volumes=[{"name": "x", "hostPath": {
            "path": str(d), "type": "File"}}]), str(tmp_path / "root"))


def test_event_recorder_aggregates():
    from pykubelet.kubelet.events.recorder import EventRecorder

    now = [100.0]
    sunk = []
    rec = EventRecorder("n1", sink=sunk.append, clock=lambda: now[0], max_events=3)
    p = pod(initContainers=[{"name": "i", "image": "x"}])
    rec.event(p, "Normal", "Pulled", "already there", "i")
    now[0] = 105.0
    rec.event(p, "Normal", "Pulled", "already there", "i")
    [ev] = rec.list("u1")
    assert ev["count"] == 2
    assert ev["involvedObject"]["fieldPath"] == "spec.initContainers{i}"
    assert ev["firstTimestamp"] == "1970-01-01T00:01:40Z"
    assert ev["lastTimestamp"] == "1970-01-01T00:01:45Z"
    assert len(sunk) == 2
    for r in ("A", "B", "C"):
        rec.event(p, "Warning", r, "m", "c")
    assert [e["reason"] for e in rec.list()] == ["A", "B", "C"]  # bounded, oldest dropped
