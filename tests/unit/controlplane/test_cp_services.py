"""core/v1 Services and Endpoints and discovery.k8s.io/v1 EndpointSlices served (issue 20,
item 1 and 2): defaults, validation as upstream's (422 naming the field, nothing written),
ClusterIP and node port allocation (taken, out of range, kept over an apply that leaves
them out, released on delete and on a type change), Tables, discovery."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Cluster

SVC = "/api/v1/namespaces/{ns}/services"
EP = "/api/v1/namespaces/{ns}/endpoints"
ES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def svc_body(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def create(cluster: Cluster, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    code, got = cluster.admin("POST", SVC.format(ns=ns), body)
    assert code == 201, got
    return got


def causes(got: dict[str, Any]) -> dict[str, str]:
    return {c["field"]: c["message"] for c in got["details"]["causes"]}


def test_defaults(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-defaults")
    got = create(cluster, ns, svc_body("web", selector={"app": "web"},
                                       ports=[{"name": "http", "port": 80,
                                               "targetPort": "http"},
                                              {"name": "metrics", "port": 9090}]))
    spec = got["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["ports"][0] == {"name": "http", "port": 80, "targetPort": "http",
                                "protocol": "TCP"}
    assert spec["ports"][1]["targetPort"] == 9090
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec
    ip = spec["clusterIP"]
    assert spec["clusterIPs"] == [ip]
    # dynamic addresses come from the upper band: 10.96.0.1 .. 10.96.1.0 stay for static use
    index = int(ipaddress.ip_address(ip)) - int(ipaddress.ip_address("10.96.0.1"))
    assert 256 <= index < (1 << 20) - 2, ip
    np = create(cluster, ns, svc_body("np", type="NodePort", ports=[{"port": 80}]))
    assert np["spec"]["externalTrafficPolicy"] == "Cluster"
    assert 30000 <= np["spec"]["ports"][0]["nodePort"] <= 32767
    ca = create(cluster, ns, svc_body("sticky", sessionAffinity="ClientIP"))
    assert ca["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_headless_and_selectorless(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-headless")
    got = create(cluster, ns, {"apiVersion": "v1", "kind": "Service",
                               "metadata": {"name": "db"},
                               "spec": {"clusterIP": "None", "selector": {"app": "db"}}})
    assert got["spec"]["clusterIP"] == "None"
    assert got["spec"]["clusterIPs"] == ["None"]
    plain = create(cluster, ns, svc_body("external-db"))  # no selector: user-managed endpoints
    assert "selector" not in plain["spec"]
    ext = create(cluster, ns, {"apiVersion": "v1", "kind": "Service",
                               "metadata": {"name": "ext"},
                               "spec": {"type": "ExternalName",
                                        "externalName": "db.example.com"}})
    assert "clusterIP" not in ext["spec"]
    assert "ipFamilies" not in ext["spec"]


@pytest.mark.parametrize(("mutate", "field", "message"), [
    (lambda b: b["spec"].update(ports=[{"port": 80}, {"port": 81}]), "spec.ports[0].name",
     "Required value"),
    (lambda b: b["spec"].update(ports=[{"name": "Web", "port": 80}]), "spec.ports[0].name",
     'Invalid value: "Web": a lowercase RFC 1123 label must consist of'),
    (lambda b: b["spec"].update(ports=[{"name": "a", "port": 80}, {"name": "b", "port": 80}]),
     "spec.ports[1]", "Duplicate value: "),
    (lambda b: b["spec"].update(ports=[{"name": "a", "port": 80}, {"name": "a", "port": 81}]),
     "spec.ports[1].name", 'Duplicate value: "a"'),
    (lambda b: b["spec"].update(ports=[{"port": 70000}]), "spec.ports[0].port",
     "Invalid value: 70000: must be between 1 and 65535, inclusive"),
    (lambda b: b["spec"].update(ports=[]), "spec.ports", "Required value"),
    (lambda b: b["spec"].update(clusterIP="10.96.0.300"), "spec.clusterIPs[0]",
     'Invalid value: "10.96.0.300": must be a valid IP address'),
    (lambda b: b["spec"].update(ports=[{"port": 80, "nodePort": 30001}]),
     "spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'"),
    (lambda b: b["spec"].update(type="Magic"), "spec.type", 'Unsupported value: "Magic"'),
    (lambda b: b["spec"].update(sessionAffinity="Sticky"), "spec.sessionAffinity",
     'Unsupported value: "Sticky"'),
    (lambda b: b["spec"].update(externalTrafficPolicy="Local"), "spec.externalTrafficPolicy",
     'Invalid value: "Local": may only be set for externally-accessible services'),
    (lambda b: b["metadata"].update(name="1web"), "metadata.name",
     'Invalid value: "1web": a DNS-1035 label must consist of'),
    (lambda b: b["spec"].update(selector={"app": "no way"}), "spec.selector",
     'Invalid value: "no way"'),
    (lambda b: b["spec"].update(type="NodePort", ports=[{"port": 80, "nodePort": 80}]),
     "spec.ports[0].nodePort", "Invalid value: 80: provided port is not in the valid range. "
     "The range of valid ports is 30000-32767"),
    (lambda b: b["spec"].update(clusterIP="10.0.0.5"), "spec.clusterIPs",
     'Invalid value: ["10.0.0.5"]: failed to allocate IP 10.0.0.5: the provided IP '
     "(10.0.0.5) is not in the valid range. The range of valid IPs is 10.96.0.0/12"),
])
def test_bad_service_is_422_naming_the_field_and_not_written(
        cluster: Cluster, mutate: Callable[[dict[str, Any]], Any], field: str,
        message: str) -> None:
    ns = cluster.namespace(f"svc-bad-{abs(hash((field, message))) % 100000}")
    body = svc_body("bad")
    mutate(body)
    name = body["metadata"]["name"]
    code, got = cluster.admin("POST", SVC.format(ns=ns), body)
    assert code == 422, got
    assert got["details"]["kind"] == "Service"
    found = causes(got)
    assert field in found, found
    assert found[field].startswith(message), found[field]
    code, _ = cluster.admin("GET", SVC.format(ns=ns) + "/" + name)
    assert code == 404


def test_taken_cluster_ip_is_422_and_nothing_written(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-taken")
    create(cluster, ns, svc_body("first", clusterIP="10.96.0.5"))
    code, got = cluster.admin("POST", SVC.format(ns=ns), svc_body("second", clusterIP="10.96.0.5"))
    assert code == 422, got
    assert got["message"] == ('Service "second" is invalid: spec.clusterIPs: Invalid value: '
                              '["10.96.0.5"]: failed to allocate IP 10.96.0.5: provided IP is '
                              'already allocated')
    assert cluster.admin("GET", SVC.format(ns=ns) + "/second")[0] == 404
    # a taken node port likewise
    np = create(cluster, ns, svc_body("np", type="NodePort", ports=[{"port": 80}]))
    port = np["spec"]["ports"][0]["nodePort"]
    code, got = cluster.admin("POST", SVC.format(ns=ns), svc_body(
        "np2", type="NodePort", ports=[{"port": 80, "nodePort": port}]))
    assert code == 422, got
    assert causes(got) == {"spec.ports[0].nodePort":
                           f"Invalid value: {port}: provided port is already allocated"}
    # the refused creates gave back what they took: the address is still the first's only,
    # and a free one asked for by the refused Service is free again
    code, got = cluster.admin("POST", SVC.format(ns=ns), svc_body(
        "third", clusterIP="10.96.0.6", type="NodePort", ports=[{"port": 80, "nodePort": port}]))
    assert code == 422, got
    create(cluster, ns, svc_body("fourth", clusterIP="10.96.0.6"))


def test_delete_releases_ip_and_node_port(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-release")
    got = create(cluster, ns, svc_body("a", clusterIP="10.96.0.7", type="NodePort",
                                       ports=[{"port": 80, "nodePort": 30007}]))
    assert got["spec"]["ports"][0]["nodePort"] == 30007
    code, _ = cluster.admin("DELETE", SVC.format(ns=ns) + "/a")
    assert code == 200
    create(cluster, ns, svc_body("b", clusterIP="10.96.0.7", type="NodePort",
                                 ports=[{"port": 80, "nodePort": 30007}]))


def test_cluster_ip_may_not_change_and_apply_keeps_allocations(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-update")
    got = create(cluster, ns, svc_body("web", type="NodePort", selector={"app": "web"}))
    ip, port = got["spec"]["clusterIP"], got["spec"]["ports"][0]["nodePort"]
    patch = {"spec": {"clusterIP": "10.96.0.8"}}
    code, got = cluster.admin("PATCH", SVC.format(ns=ns) + "/web", patch,
                              "application/merge-patch+json")
    assert code == 422, got
    assert causes(got) == {"spec.clusterIPs[0]":
                           'Invalid value: ["10.96.0.8"]: may not change once set'}
    # a replace without clusterIP and nodePort (kubectl apply/replace of the manifest)
    code, cur = cluster.admin("GET", SVC.format(ns=ns) + "/web")
    body = svc_body("web", type="NodePort", selector={"app": "web", "tier": "fe"})
    body["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
    code, got = cluster.admin("PUT", SVC.format(ns=ns) + "/web", body)
    assert code == 200, got
    assert got["spec"]["clusterIP"] == ip
    assert got["spec"]["ports"][0]["nodePort"] == port
    assert got["spec"]["selector"] == {"app": "web", "tier": "fe"}


def test_type_change_to_cluster_ip_releases_the_node_port(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-type")
    create(cluster, ns, svc_body("web", type="NodePort", ports=[{"port": 80, "nodePort": 30010}]))
    code, got = cluster.admin("PATCH", SVC.format(ns=ns) + "/web",
                              {"spec": {"type": "ClusterIP"}}, "application/merge-patch+json")
    assert code == 200, got
    assert "nodePort" not in got["spec"]["ports"][0]
    assert "externalTrafficPolicy" not in got["spec"]
    create(cluster, ns, svc_body("other", type="NodePort",
                                 ports=[{"port": 80, "nodePort": 30010}]))
    # and back: a node port is allocated again
    code, got = cluster.admin("PATCH", SVC.format(ns=ns) + "/web",
                              {"spec": {"type": "NodePort"}}, "application/merge-patch+json")
    assert code == 200, got
    assert 30000 <= got["spec"]["ports"][0]["nodePort"] <= 32767
    assert got["spec"]["ports"][0]["nodePort"] != 30010


def test_services_table_and_discovery(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-table")
    create(cluster, ns, svc_body("web", clusterIP="10.96.0.20", selector={"app": "web"},
                                 ports=[{"name": "http", "port": 80},
                                        {"name": "dns", "port": 53, "protocol": "UDP"}]))
    create(cluster, ns, svc_body("np", clusterIP="10.96.0.21", type="NodePort",
                                 ports=[{"port": 8080, "nodePort": 30080}]))
    code, table = cluster.admin("GET", SVC.format(ns=ns), headers=TABLE)
    assert code == 200, table
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    assert table["columnDefinitions"][-1]["priority"] == 1
    rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
    assert rows["web"][:5] == ["web", "ClusterIP", "10.96.0.20", "<none>", "80/TCP,53/UDP"]
    assert rows["web"][6] == "app=web"
    assert rows["np"][:5] == ["np", "NodePort", "10.96.0.21", "<none>", "8080:30080/TCP"]
    assert rows["np"][6] == "<none>"
    code, disc = cluster.admin("GET", "/api/v1")
    found = {r["name"]: r for r in disc["resources"]}
    assert found["services"]["shortNames"] == ["svc"]
    assert found["services"]["categories"] == ["all"]
    assert found["endpoints"]["shortNames"] == ["ep"]
    assert "services/status" in found
    code, disc = cluster.admin("GET", "/apis/discovery.k8s.io/v1")
    assert code == 200, disc
    assert [r["name"] for r in disc["resources"]] == ["endpointslices"]
    assert disc["resources"][0]["kind"] == "EndpointSlice"
    code, groups = cluster.admin("GET", "/apis")
    assert "discovery.k8s.io" in [g["name"] for g in groups["groups"]]


def test_endpoints_and_slices_written_by_users(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-ep")
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "external-db"},
          "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"},
                                     {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}],
                       "ports": [{"port": 5432}]}]}
    code, got = cluster.admin("POST", EP.format(ns=ns), ep)
    assert code == 201, got
    assert got["subsets"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    code, table = cluster.admin("GET", EP.format(ns=ns), headers=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Endpoints", "Age"]
    assert table["rows"][0]["cells"][1] == ("10.0.0.1:5432,10.0.0.2:5432,10.0.0.3:5432 "
                                            "+ 1 more...")
    bad = {**ep, "metadata": {"name": "bad"},
           "subsets": [{"addresses": [{"ip": "nope"}], "ports": [{"port": 1}, {"port": 2}]}]}
    code, got = cluster.admin("POST", EP.format(ns=ns), bad)
    assert code == 422, got
    assert set(causes(got)) == {"subsets[0].addresses[0].ip", "subsets[0].ports[0].name",
                                "subsets[0].ports[1].name"}
    es = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
          "metadata": {"name": "external-db-1",
                       "labels": {"kubernetes.io/service-name": "external-db"}},
          "addressType": "IPv4",
          "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
          "ports": [{"name": "pg", "port": 5432}]}
    code, got = cluster.admin("POST", ES.format(ns=ns), es)
    assert code == 201, got
    assert got["ports"] == [{"name": "pg", "port": 5432, "protocol": "TCP"}]
    code, table = cluster.admin("GET", ES.format(ns=ns), headers=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "AddressType", "Ports", "Endpoints", "Age"]
    assert table["rows"][0]["cells"][:4] == ["external-db-1", "IPv4", "5432", "10.0.0.1"]
    code, got = cluster.admin("PATCH", ES.format(ns=ns) + "/external-db-1",
                              {"addressType": "IPv6"}, "application/merge-patch+json")
    assert code == 422, got
    assert "addressType" in causes(got)
    code, got = cluster.admin("POST", ES.format(ns=ns), {
        **es, "metadata": {"name": "v6"}, "endpoints": [{"addresses": ["10.0.0.1"]}],
        "addressType": "IPv6"})
    assert code == 422, got
    assert causes(got) == {"endpoints[0].addresses[0]":
                           'Invalid value: "10.0.0.1": must be a valid IPv6 address'}


def test_type_change_to_external_name_releases_the_address(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-extname")
    create(cluster, ns, svc_body("web", clusterIP="10.96.0.30"))
    code, got = cluster.admin("PATCH", SVC.format(ns=ns) + "/web", {
        "spec": {"type": "ExternalName", "externalName": "web.example.com"}},
        "application/merge-patch+json")
    assert code == 200, got
    for fld in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        assert fld not in got["spec"], fld
    create(cluster, ns, svc_body("taker", clusterIP="10.96.0.30"))
    # and back to ClusterIP: a new address is allocated
    code, got = cluster.admin("PATCH", SVC.format(ns=ns) + "/web", {
        "spec": {"type": "ClusterIP", "externalName": None}}, "application/merge-patch+json")
    assert code == 200, got
    assert got["spec"]["clusterIP"] not in ("", "10.96.0.30")
    assert got["spec"]["ipFamilies"] == ["IPv4"]


def test_dry_run_takes_nothing(cluster: Cluster) -> None:
    ns = cluster.namespace("svc-dry")
    code, got = cluster.admin("POST", SVC.format(ns=ns) + "?dryRun=All",
                              svc_body("web", clusterIP="10.96.0.31", type="NodePort",
                                       ports=[{"port": 80, "nodePort": 30031}]))
    assert code == 201, got
    assert got["spec"]["clusterIP"] == "10.96.0.31"
    assert cluster.admin("GET", SVC.format(ns=ns) + "/web")[0] == 404
    create(cluster, ns, svc_body("real", clusterIP="10.96.0.31", type="NodePort",
                                 ports=[{"port": 80, "nodePort": 30031}]))
    code, got = cluster.admin("POST", SVC.format(ns=ns) + "?dryRun=All",
                              svc_body("again", clusterIP="10.96.0.31"))
    assert code == 422, got
    assert "provided IP is already allocated" in got["message"]


def test_a_node_reads_services_and_slices_and_writes_neither(cluster: Cluster) -> None:
    """system:node reads Services (kubelet's service environment variables), and the
    node's agent runs the service proxy, which system:node-proxier lets read
    EndpointSlices; neither is a node's to write."""
    ns = cluster.namespace("svc-node-authz")
    create(cluster, ns, svc_body("web", selector={"app": "web"}))
    node = cluster.node("svc-reader")
    for path in ("/api/v1/services", SVC.format(ns=ns) + "/web",
                 "/apis/discovery.k8s.io/v1/endpointslices", ES.format(ns=ns)):
        code, got = node("GET", path)
        assert code == 200, (path, got)
    code, got = node("POST", SVC.format(ns=ns), svc_body("mine"))
    assert code == 403, got
    code, got = node("DELETE", SVC.format(ns=ns) + "/web")
    assert code == 403, got
    code, got = node("POST", ES.format(ns=ns), {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "x"}, "addressType": "IPv4", "endpoints": []})
    assert code == 403, got


def test_a_service_held_by_a_finalizer_keeps_its_address_until_it_goes(
        cluster: Cluster) -> None:
    ns = cluster.namespace("svc-finalizer")
    body = svc_body("held", clusterIP="10.96.0.40")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    create(cluster, ns, body)
    code, got = cluster.admin("DELETE", SVC.format(ns=ns) + "/held")
    assert code == 200, got
    assert got["metadata"]["deletionTimestamp"]
    code, got = cluster.admin("POST", SVC.format(ns=ns), svc_body("next", clusterIP="10.96.0.40"))
    assert code == 422, got  # still the deleting Service's
    code, got = cluster.admin("PATCH", SVC.format(ns=ns) + "/held",
                              {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert code == 200, got
    assert cluster.admin("GET", SVC.format(ns=ns) + "/held")[0] == 404
    create(cluster, ns, svc_body("next", clusterIP="10.96.0.40"))
