"""A Node deleted from the API (``kubectl delete node``) while its agent runs is registered
again by the agent's next status update, as kubelet's node status loop recreates it on
NotFound, so the node comes back Ready without a restart."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from pykubelet.client.rest import LEASES, Resource, StatusError
from pykubelet.kubelet.cluster import node_status


class FakeAPI:
    """Nodes and Leases in memory, with the API's NotFound and AlreadyExists."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}

    def _missing(self, res: Resource, name: str) -> StatusError:
        return StatusError({"reason": "NotFound", "code": 404,
                            "message": f'{res.plural} "{name}" not found'}, 404)

    def create(self, res: Resource, body: dict[str, Any], namespace: str = "") -> Any:
        key = (res.plural, body["metadata"]["name"])
        if key in self.objects:
            raise StatusError({"reason": "AlreadyExists", "code": 409}, 409)
        obj = copy.deepcopy(body)
        obj["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1")
        self.objects[key] = obj
        return copy.deepcopy(obj)

    def get(self, res: Resource, name: str, namespace: str = "") -> Any:
        if (res.plural, name) not in self.objects:
            raise self._missing(res, name)
        return copy.deepcopy(self.objects[(res.plural, name)])

    def patch(self, res: Resource, name: str, patch: dict[str, Any], namespace: str = "",
              **kw: Any) -> Any:
        obj = self.objects.get((res.plural, name))
        if obj is None:
            raise self._missing(res, name)
        for k, v in patch.items():
            obj[k] = {**obj.get(k, {}), **v}
        return copy.deepcopy(obj)

    def replace(self, res: Resource, name: str, body: dict[str, Any],
                namespace: str = "") -> Any:
        self.objects[(res.plural, name)] = copy.deepcopy(body)
        return body


def reporter(api: FakeAPI) -> node_status.NodeStatusReporter:
    facts = node_status.Facts(cpu=2, memory=1 << 30, ephemeral_storage=1 << 30,
                              node_info={}, addresses=[])
    return node_status.NodeStatusReporter(
        api, "n1", labels={"kubernetes.io/hostname": "n1"}, taints=[], pod_cidr="",  # type: ignore[arg-type]
        facts=facts, readings=node_status.Readings, images=list)


def test_a_deleted_node_is_registered_again_by_the_status_update() -> None:
    api = FakeAPI()
    r = reporter(api)
    r.register()
    r.renew_lease()
    first_uid = api.objects[("nodes", "n1")]["metadata"]["uid"]
    del api.objects[("nodes", "n1")]  # kubectl delete node n1
    r.update_status()
    node = api.objects.get(("nodes", "n1"))
    assert node is not None, "the deleted Node was not registered again"
    assert node["metadata"]["uid"] != first_uid
    assert node["status"]["conditions"][-1]["type"] == "Ready"
    assert r.node_uid == node["metadata"]["uid"]
    r.renew_lease()  # the Lease now names the new Node as its owner
    owner = api.objects[(LEASES.plural, "n1")]["metadata"]["ownerReferences"][0]
    assert owner["uid"] == node["metadata"]["uid"]


def test_status_names_the_port_the_node_serves_on() -> None:
    """daemonEndpoints.kubeletEndpoint.Port is where the API server reaches the node's
    server (logs, exec): the config's `port`, 10250 unless moved."""
    import datetime as dt

    def facts(**kw: Any) -> node_status.Facts:
        return node_status.Facts(cpu=1, memory=1 << 30, ephemeral_storage=1 << 30,
                                 node_info={}, addresses=[], **kw)

    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    readings = node_status.Readings()
    for f, port in ((facts(), 10250), (facts(kubelet_port=10260), 10260)):
        status = node_status.build_status(f, readings, [], [], at)
        assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": port}}
