"""Shared pieces of the property-based fuzz tests (issue 29 item 3): a deterministic
hypothesis profile, JSON-like values with Kubernetes' field names among the keys, and
valid documents mutated at a random place (deep inputs reach deep code).

Every fuzz test states the same property: the code under test either answers or raises
one of its module's declared errors, whose message names where the problem is, within the
deadline. Run more examples with ``HYPOTHESIS_PROFILE=fuzz-long``."""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# deadline: a hang fails the example; 10 s, not less, so a loaded CI machine (the suite on
# two workers) cannot turn a slow example into hypothesis' Flaky error
settings.register_profile(
    "fuzz", max_examples=200, derandomize=True, deadline=10_000, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "fuzz-long", max_examples=5000, derandomize=False, deadline=5000, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "fuzz"))

FIELD_NAMES = (
    "apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "spec",
    "status", "containers", "image", "command", "args", "env", "value", "valueFrom",
    "resources", "limits", "requests", "cpu", "memory", "ports", "containerPort",
    "protocol", "volumes", "volumeMounts", "mountPath", "securityContext", "capabilities",
    "add", "drop", "selector", "matchLabels", "matchExpressions", "key", "operator",
    "values", "replicas", "template", "type", "data", "items", "profiles", "plugins",
    "pluginConfig", "enabled", "disabled", "weight", "schedulerName", "score", "filter",
    "cniVersion", "plugins", "ipam", "ranges", "subnet", "routes", "dst", "gw", "dns",
    "prevResult", "runtimeConfig", "$patch", "$setElementOrder/containers",
    "$retainKeys", "$deleteFromPrimitiveList/finalizers", "finalizers", "ownerReferences",
    "uid", "nodeName", "tolerations", "affinity", "nodeSelector", "initContainers",
)
KEYS = st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=8))
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=24),
    st.sampled_from(["", "0", "-1", "1e400", "1Ki", "100m", "TCP", "Always", "IfNotPresent",
                     "RuntimeDefault", "In", "Exists", "10.0.0.0/8", "::1", "a/b", "x=y",
                     "$(VAR)", "\x00", "é", "0.0.0.0", "1.0.0", "0.4.0"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=16)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, seed: Any, rounds: int = 3) -> Any:
    """``seed`` with 1..rounds places replaced by a random value, deleted, or given a
    random extra key."""
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, rounds))):
        path = draw(st.sampled_from(_paths(doc)))
        if not path:
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(KEYS)] = draw(JSON)
        else:
            parent[path[-1]] = draw(JSON)
    return doc


def check_message(exc: BaseException) -> None:
    """A declared error says something (an empty message helps nobody)."""
    assert str(exc).strip(), f"{type(exc).__name__} without a message"
