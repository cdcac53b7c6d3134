"""pykubelet's own API client and informer against a real control plane: errors as
Statuses, watches resumed across a control-plane restart, relists after 410."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for

from pykubelet.client.informer import Informer
from pykubelet.client.rest import CONFIGMAPS, RESTClient, StatusError


def cm(name: str, value: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"v": value}}


def test_client_verbs_and_status_errors(cp: ControlPlaneProcess, ns: str) -> None:
    c = RESTClient.from_kubeconfig(cp.kubeconfig)
    made = c.create(CONFIGMAPS, cm("a"), ns)
    assert made["metadata"]["uid"]
    assert c.get(CONFIGMAPS, "a", ns)["data"] == {"v": "1"}
    c.patch(CONFIGMAPS, "a", {"data": {"v": "2"}}, ns)
    # beside the root CA's ConfigMap, which every namespace holds
    assert [i["metadata"]["name"] for i in c.list(CONFIGMAPS, ns)["items"]] == [
        "a", "kube-root-ca.crt"]
    with pytest.raises(StatusError) as exc:
        c.create(CONFIGMAPS, cm("a"), ns)
    assert exc.value.reason == "AlreadyExists"
    assert exc.value.code == 409
    c.delete(CONFIGMAPS, "a", ns)
    with pytest.raises(StatusError) as exc:
        c.get(CONFIGMAPS, "a", ns)
    assert exc.value.not_found


def test_informer_follows_and_resumes_across_a_restart(tmp_path: Any) -> None:
    proc = ControlPlaneProcess(tmp_path / "root")
    proc.start()
    seen: list[tuple[str, str, str]] = []
    lock = threading.Lock()

    def record(kind: str) -> Any:
        def fn(*objs: dict[str, Any]) -> None:
            o = objs[-1]
            with lock:
                seen.append((kind, o["metadata"]["name"], (o.get("data") or {}).get("v", "")))
        return fn

    try:
        c = RESTClient.from_kubeconfig(proc.kubeconfig)
        c.create(CONFIGMAPS, cm("before"), "default")
        inf = Informer(c, CONFIGMAPS, namespace="default", on_add=record("add"),
                       on_update=record("update"), on_delete=record("delete"))
        inf.start()
        wait_for(lambda: inf.has_synced, what="first list")
        c.patch(CONFIGMAPS, "before", {"data": {"v": "2"}}, "default")
        wait_for(lambda: ("update", "before", "2") in seen, what="update seen")
        proc.kill()  # the informer loses its watch, keeps its copy
        wait_for(lambda: not inf.connected.is_set(), what="disconnected")
        assert inf.get("default/before") is not None
        proc.start()  # same port, same store: the watch resumes from its resourceVersion
        c2 = RESTClient.from_kubeconfig(proc.kubeconfig)
        c2.create(CONFIGMAPS, cm("after"), "default")
        c2.delete(CONFIGMAPS, "before", "default")
        wait_for(lambda: ("delete", "before", "2") in seen, timeout=40, what="delete seen")
        assert ("add", "after", "1") in seen
        assert [s for s in seen if s[0] == "add" and s[1] == "before"] == [
            ("add", "before", "1")]  # no duplicate add on resume
        inf.stop()
    finally:
        proc.stop()
