"""Every Status carries upstream's fields (issue 27 item 4): NewNotFound's details even
for an unknown path (kubectl debug dereferences details.name and panicked without them),
and routes upstream does not have are 405 (issue 24 item 20)."""

from __future__ import annotations

from cp_live import LiveAPI

GENERIC_404 = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "the server could not find the requested resource",
               "reason": "NotFound", "details": {}, "code": 404}


def test_unknown_paths_and_resources_have_details(api: LiveAPI) -> None:
    for path in ("/api/v1/nopes", "/apis/unknown.example.com/v1/things",
                 "/api/v1/namespaces/default/pods/p/nosuchsubresource", "/nothing/here",
                 "/apis/nope.io/v1"):
        reply = api.call("GET", path)
        assert reply.status == 404, path
        assert reply.json() == GENERIC_404, path


def test_object_not_found_names_it(api: LiveAPI) -> None:
    status = api.call("GET", "/api/v1/namespaces/default/pods/ghost").json()
    assert status["details"] == {"name": "ghost", "kind": "pods"}
    status = api.call("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/x").json()
    assert status["details"] == {"name": "x", "group": "coordination.k8s.io", "kind": "leases"}


def test_post_to_a_named_object_is_not_a_route(api: LiveAPI) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "named"}}
    reply = api.call("POST", "/api/v1/namespaces/default/configmaps/named", cm)
    assert reply.status == 405, reply.body[:300]
    assert reply.json()["message"] == ("the server does not allow this method on the "
                                       "requested resource")
    assert reply.json()["details"] == {}
    assert api.call("GET", "/api/v1/namespaces/default/configmaps/named").status == 404
    reply = api.call("PUT", "/api/v1/namespaces/default/configmaps", cm)
    assert reply.status == 405
