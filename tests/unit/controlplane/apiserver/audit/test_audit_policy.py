"""The audit policy checker as upstream's (audit/policy/checker.go): the first rule that
matches gives the level and the omitted stages, each field narrows (users, userGroups,
verbs, namespaces, resources with subresources and names, nonResourceURLs); Secrets and
tokens are never recorded above Metadata; a bad policy file is refused naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubelet.controlplane.apiserver.audit.policy import (
    PolicyError,
    decode_policy,
    load_policy,
)
from pykubelet.controlplane.apiserver.requestinfo import parse_request_info
from pykubelet.controlplane.registry.store import User

ALICE = User("alice", ("devs", "system:authenticated"))
BOB = User("bob", ("system:authenticated",))
POLICY = decode_policy({
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "users": ["system:kube-proxy"], "verbs": ["watch"]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/version"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["secrets"]}]},
        {"level": "Metadata", "resources": [{"group": "", "resources": ["pods/log",
                                                                        "pods/status"]}]},
        {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"],
                                            "resourceNames": ["controller-leader"]}],
         "namespaces": ["kube-system"], "omitStages": ["ResponseStarted"]},
        {"level": "RequestResponse", "userGroups": ["devs"],
         "resources": [{"group": "apps"}]},
        {"level": "Request", "resources": [{"group": "", "resources": ["*/exec"]},
                                           {"group": "batch", "resources": ["jobs/*"]}]},
        {"level": "Metadata", "verbs": ["get", "list", "watch"], "namespaces": [""]},
        {"level": "Metadata", "nonResourceURLs": ["*"]},
        {"level": "Request", "userGroups": ["devs"]},
    ]})

TABLE = [
    # (user, method, path, watch) -> (level, omitted stages besides RequestReceived)
    (User("system:kube-proxy"), "GET", "/api/v1/services", True, "None", ()),
    # not a watch: the cluster-scoped reads' rule
    (User("system:kube-proxy"), "GET", "/api/v1/services", False, "Metadata", ()),
    (ALICE, "GET", "/healthz/etcd", False, "None", ()),
    (ALICE, "GET", "/version", False, "None", ()),
    (ALICE, "GET", "/versions", False, "Metadata", ()),
    # Secrets: Metadata whatever the policy says
    (ALICE, "POST", "/api/v1/namespaces/a/secrets", False, "Metadata", ()),
    (ALICE, "GET", "/api/v1/namespaces/a/pods/p/log", False, "Metadata", ()),
    (ALICE, "GET", "/api/v1/namespaces/a/pods/p", False, "Request", ()),  # the devs rule
    (BOB, "GET", "/api/v1/namespaces/a/pods/p", False, "None", ()),
    (BOB, "PUT", "/api/v1/namespaces/kube-system/configmaps/controller-leader", False,
     "Request", ("ResponseStarted",)),
    (BOB, "PUT", "/api/v1/namespaces/default/configmaps/controller-leader", False, "None", ()),
    (BOB, "PUT", "/api/v1/namespaces/kube-system/configmaps/other", False, "None", ()),
    (ALICE, "DELETE", "/apis/apps/v1/namespaces/a/deployments/d", False, "RequestResponse",
     ()),
    (BOB, "DELETE", "/apis/apps/v1/namespaces/a/deployments/d", False, "None", ()),
    (BOB, "POST", "/api/v1/namespaces/a/pods/p/exec", False, "Request", ()),
    (BOB, "PUT", "/apis/batch/v1/namespaces/a/jobs/j/status", False, "Request", ()),
    # "jobs/*" matches the resource itself too (unlike RBAC's), as upstream's checker
    (BOB, "PUT", "/apis/batch/v1/namespaces/a/jobs/j", False, "Request", ()),
    (BOB, "PUT", "/apis/batch/v1/namespaces/a/cronjobs/j", False, "None", ()),
    (BOB, "GET", "/api/v1/nodes", False, "Metadata", ()),  # cluster-scoped: namespace ""
    (BOB, "GET", "/api/v1/namespaces/a/pods", False, "None", ()),
    (None, "GET", "/api/v1/nodes", False, "Metadata", ()),  # no user: only user-free rules
    (None, "GET", "/apis", False, "Metadata", ()),
]


@pytest.mark.parametrize(("user", "method", "path", "watch", "level", "omitted"), TABLE)
def test_policy_matching(user: User | None, method: str, path: str, watch: bool, level: str,
                         omitted: tuple[str, ...]) -> None:
    info = parse_request_info(method, path, watch)
    got_level, got_omit = POLICY.level_and_stages(user, info)
    assert got_level == level
    if level != "None":
        assert got_omit == {"RequestReceived", *omitted}


def test_tokens_are_metadata_at_most() -> None:
    everything = decode_policy({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                "rules": [{"level": "RequestResponse"}]})
    for path in ("/api/v1/namespaces/a/serviceaccounts/default/token",
                 "/apis/authentication.k8s.io/v1/tokenreviews",
                 "/api/v1/namespaces/a/secrets/s"):
        assert everything.level_and_stages(ALICE, parse_request_info("POST", path))[0] == (
            "Metadata"), path
    assert everything.level_and_stages(
        ALICE, parse_request_info("GET", "/api/v1/namespaces/a/serviceaccounts/default"))[0] == (
        "RequestResponse")


@pytest.mark.parametrize(("policy", "message"), [
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []},
     "loaded illegal policy with 0 rules"),
    ({"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy", "rules": [{"level": "None"}]},
     "expected apiVersion audit.k8s.io/v1"),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Everything"}]},
     'rules[0].level: Unsupported value: "Everything"'),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
      "rules": [{"level": "None", "omitStages": ["Done"]}]},
     'rules[0].omitStages[0]: Unsupported value: "Done"'),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
      "rules": [{"level": "None", "user": ["x"]}]}, 'rules[0]: unknown field "user"'),
    ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
      "rules": [{"level": "None", "nonResourceURLs": ["/x"], "namespaces": ["a"]}]},
     "rules cannot apply to both regular resources and non-resource URLs"),
])
def test_bad_policies_are_refused(policy: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError, match=None) as exc:
        decode_policy(policy)
    assert message in str(exc.value)


def test_a_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    policy = load_policy(path)
    assert policy.level_and_stages(BOB, parse_request_info("GET", "/api/v1/pods"))[0] == (
        "Metadata")
    path.write_text("rules: [")
    with pytest.raises(PolicyError, match="failed to read file path"):
        load_policy(path)
