"""The API pod source keeps no managedFields: its informer strips them (client-go's
TransformStripManagedFields) before caching a pod or decoding it, as the agent reads
neither the server side apply bookkeeping from its cache (status patches look at the
status) nor from its decoded pods (issue 23 item 3: a lean node)."""

from __future__ import annotations

from typing import Any

from pykubelet.kubelet.cluster.apisource import APIPodSource


def api_pod() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1",
                         "resourceVersion": "10",
                         "managedFields": [{"manager": "kubelet", "operation": "Update",
                                            "subresource": "status",
                                            "fieldsV1": {"f:status": {"f:phase": {}}}}]},
            "spec": {"nodeName": "n1",
                     "containers": [{"name": "c", "image": "busybox:1.36"}]},
            "status": {"phase": "Running"}}


class OneList:
    closed = False

    def list(self, resource: Any, namespace: str, **params: Any) -> dict[str, Any]:
        return {"items": [api_pod()], "metadata": {"resourceVersion": "10"}}


class PodManager:
    def has_pod(self, uid: str) -> bool:
        return False


class Agent:
    def __init__(self) -> None:
        self.pods: list[Any] = []
        self.pod_manager = PodManager()

    def set_source_pods(self, pods: list[Any], source: str) -> None:
        self.pods = pods

    def handle_pod_updates(self, pods: list[Any]) -> None:
        pass


def test_the_pod_source_caches_and_decodes_no_managed_fields() -> None:
    agent = Agent()
    source = APIPodSource(OneList(), "n1", agent)  # type: ignore[arg-type]
    source.informer._list()
    cached = source.api_pod("default", "p")
    assert cached is not None
    assert cached["status"] == {"phase": "Running"}
    assert "managedFields" not in cached["metadata"]
    assert [p.uid for p in agent.pods] == ["u1"]
    assert agent.pods[0].metadata.managed_fields == []
    assert agent.pods[0].spec.containers[0].image == "busybox:1.36"
