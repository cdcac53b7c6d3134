"""DefaultBinder binds through the handle's binder; the volume/DRA plugins are no-ops for
volume-less nodes, except DynamicResources' PostFilter message; DefaultPreemption is built
from its args."""

from __future__ import annotations

from builders import make_node, make_pod, plugin_for

from pysched.config import load_config
from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


class _Binder:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail = fail

    def bind(self, pod, node_name: str) -> None:  # type: ignore[no-untyped-def]
        if self.fail:
            raise RuntimeError("conflict: pod already bound")
        self.calls.append((pod.key, node_name))


def test_default_binder() -> None:
    b = _Binder()
    pl = plugin_for("DefaultBinder", [], binder=b)
    assert pl.bind(CycleState(), make_pod("p").obj(), "n1") is None
    assert b.calls == [("default/p", "n1")]
    s = plugin_for("DefaultBinder", [], binder=_Binder(fail=True)).bind(
        CycleState(), make_pod().obj(), "n1"
    )
    assert s is not None
    assert s.code == Code.ERROR
    assert "conflict" in s.message()
    s = plugin_for("DefaultBinder", []).bind(CycleState(), make_pod().obj(), "n1")
    assert s is not None
    assert s.code == Code.ERROR


def test_volume_plugins_skip_and_dra_reports_no_claims() -> None:
    nodes = [make_node().obj()]
    for name in (
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "DynamicResources",
    ):
        pl = plugin_for(name, nodes)
        assert pl.name() == name
        _, s = pl.pre_filter(CycleState(), make_pod().obj(), [])
        assert s is not None
        assert s.code == Code.SKIP
    dra = plugin_for("DynamicResources", nodes)
    _, s = dra.post_filter(CycleState(), make_pod().obj(), {})
    assert (s.code, s.reasons) == (Code.UNSCHEDULABLE, ["no new claims to deallocate"])


def test_default_preemption_gets_its_args() -> None:
    cfg = load_config(
        {
            **CFG,
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "DefaultPreemption",
                            "args": {
                                "minCandidateNodesPercentage": 20,
                                "minCandidateNodesAbsolute": 5,
                            },
                        }
                    ]
                }
            ],
        }
    )
    pl = plugin_for(
        "DefaultPreemption", [], args=cfg.profiles[0].plugin_config["DefaultPreemption"]
    )
    assert pl.name() == "DefaultPreemption"
    assert (pl.pct, pl.abs) == (20, 5)
    assert hasattr(pl, "post_filter")
