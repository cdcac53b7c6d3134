"""The one rule for a pod's totals (component-helpers' PodRequests/PodLimits) and its users:
the scheduler, kubectl describe and the dashboard total the same pod the same way."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.resourcehelper import pod_requests
from pykubelet.cli.kubectl.dashboard.view import pod_requests as dashboard_requests
from pykubelet.cli.kubectl.describe import pod_requests_and_limits
from pysched import decode as sched_decode
from pysched.resources import pod_requests as sched_requests

# (init containers as (cpu millicores, sidecar)), app cpu millicores, expected total
SIDECARS = [
    ([], 100, 100),
    ([(500, False)], 100, 500),
    ([(50, True)], 100, 150),
    ([(50, True), (500, False)], 100, 550),  # the init container runs beside the sidecar
    ([(500, False), (50, True)], 100, 500),
    ([(50, True), (60, True), (10, False)], 100, 210),
]


@pytest.mark.parametrize(("inits", "app", "expect"), SIDECARS)
def test_requests_with_sidecars_and_init_containers(
    inits: list[tuple[int, bool]], app: int, expect: int
) -> None:
    total = pod_requests([{"cpu": app}], [({"cpu": m}, side) for m, side in inits])
    assert total == {"cpu": expect}


def test_pod_level_requests_replace_what_they_name_and_overhead_adds() -> None:
    total = pod_requests(
        [{"cpu": 100, "memory": 10, "example.com/gpu": 1}], [],
        pod_level={"cpu": 2000, "ephemeral-storage": 5}, overhead={"cpu": 10, "memory": 1},
    )
    assert total == {"cpu": 2010, "memory": 11, "example.com/gpu": 1}


def test_overhead_adds_only_to_limits_the_pod_has() -> None:
    assert pod_requests([{"cpu": 100}], [], overhead={"cpu": 10, "memory": 1},
                        limits=True) == {"cpu": 110}
    assert pod_requests([{}], [], overhead={"cpu": 10}, limits=True) == {}


def test_quantities_total_in_their_format() -> None:
    q = Quantity.parse
    total = pod_requests([{"memory": q("64Mi")}, {"memory": q("64Mi")}],
                         [({"memory": q("100Mi")}, False)])
    assert total["memory"].canonical() == "128Mi"


def wire_pod(inits: list[tuple[int, bool]], app: int) -> dict[str, Any]:
    def c(name: str, milli: int, **kw: Any) -> dict[str, Any]:
        return {"name": name, "image": "busybox",
                "resources": {"requests": {"cpu": f"{milli}m", "memory": f"{milli}Mi"},
                              "limits": {"cpu": f"{milli}m"}}, **kw}

    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [c("app", app)],
            "initContainers": [c(f"i{i}", m, **({"restartPolicy": "Always"} if side else {}))
                               for i, (m, side) in enumerate(inits)],
            "overhead": {"cpu": "5m"},
        },
    }


@pytest.mark.parametrize(("inits", "app", "expect"), SIDECARS)
def test_every_user_totals_alike(inits: list[tuple[int, bool]], app: int, expect: int) -> None:
    doc = wire_pod(inits, app)
    reqs, limits = pod_requests_and_limits(doc)
    assert reqs["cpu"].milli_value() == expect + 5
    assert limits["cpu"].milli_value() == expect + 5
    assert dashboard_requests(doc) == (expect + 5, expect * 2**20)
    assert sched_requests(sched_decode.pod(doc))["cpu"] == expect + 5


def test_the_rule_stands_on_the_standard_library() -> None:
    """pykubectl imports it: nothing third-party, no codec or schema comes with it."""
    code = ("import json, sys; before = set(sys.modules); "
            "import pykubelet.api.resourcehelper; "
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    new = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True).stdout)
    ours = {"pykubelet", "pykubelet.api", "pykubelet.api.resourcehelper"}
    assert [m for m in new if m.split(".")[0] not in sys.stdlib_module_names
            and m not in ours] == []


def test_every_user_reads_pod_level_requests_and_limits_overhead_alike() -> None:
    """describe and the dashboard had their own totals: they ignored spec.resources (the
    scheduler honoured it), and describe added every overhead to the limits."""
    doc = wire_pod([], 100)
    doc["spec"]["resources"] = {"requests": {"cpu": "2", "memory": "1Gi"}}
    doc["spec"]["overhead"] = {"cpu": "5m", "memory": "1Mi"}
    reqs, limits = pod_requests_and_limits(doc)
    assert (reqs["cpu"].milli_value(), reqs["memory"].value()) == (2005, 2**30 + 2**20)
    assert {k: v.milli_value() for k, v in limits.items()} == {"cpu": 105}
    assert dashboard_requests(doc) == (2005, 2**30 + 2**20)
    assert sched_requests(sched_decode.pod(doc))["cpu"] == 2005
