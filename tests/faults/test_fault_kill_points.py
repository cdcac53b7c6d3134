"""SIGKILL of the agent, its runtime or the control plane at seeded points of a pod's
create (the API's write, the scheduler's binding, the agent's SyncPod, the runtime's
sandbox and CNI ADD) and delete (the containers' stop, CNI DEL, the final delete), each
followed by a restart as a supervisor would do it. After each kill: nothing the API
acknowledged is lost, the node converges to the pods asked for, the CRI lists no
duplicate, and the client's request ended with an answer or an error, never a hang. At the
end, with every pod deleted, the census of kernel objects equals the one before the run.

``PYKUBE_FAULT_SEED`` replays a run; ``PYKUBE_FAULT_POINTS`` (default 10 per victim) sets
its length (fault_plan). The plan and the outcome of every point are printed."""

from __future__ import annotations

import time

import fault_census as census
import fault_plan
import pytest
from fault_cluster import REQUEST_TIMEOUT, FaultCluster
from node_process import node_cluster

# the census is the node's own (its namespace pins, bridge, subnet, pods' cgroups), so the
# run shares the host with the other groups of scripts/test.sh's parallel run
pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns,
              pytest.mark.slow, pytest.mark.timeout(120 + 45 * fault_plan.points_per_victim())]

INDEX = 20  # kcn20, 10.97.250.0/24: no other node_process test uses it


@pytest.mark.parametrize("victim", fault_plan.VICTIMS)
def test_sigkill_at_seeded_points_converges(tmp_path, victim):
    seed = fault_plan.seed()
    points = fault_plan.plan(victim, fault_plan.points_per_victim(), seed)
    print(f"\nseed {seed} ({fault_plan.SEED_ENV}), {len(points)} points of {victim}")
    with node_cluster(tmp_path, f"fault-{victim}", INDEX) as (cp, node):
        fc = FaultCluster(cp, node)
        fc.prepare()
        before = fc.census()
        held: set[str] = set()
        serial = 0
        report = []
        scope_seen = False
        try:
            for point in points:
                if point.operation == "delete" and not held:
                    serial += 1  # something to delete: a pod made before, without a fault
                    fc.ensure_created(f"p{serial}")
                    held.add(f"p{serial}")
                    fc.wait_converged(held)
                if point.operation == "create":
                    serial += 1
                    name = f"p{serial}"
                    outcome = fc.create(name)
                else:
                    name = sorted(held)[point.index % len(held)]
                    outcome = fc.delete(name)
                time.sleep(point.delay)
                fc.kill(point.victim)
                # the request ends with an answer or an error within the client's timeout
                assert outcome.done.wait(REQUEST_TIMEOUT + 5), f"{point}: the request hung"
                fc.restart(point.victim)
                if point.operation == "create":
                    if outcome.acknowledged:  # acknowledged: it must be there
                        assert name in fc.api_pods(), f"{point}: acknowledged {name} lost"
                    fc.ensure_created(name)  # the client's retry when it had no answer
                    held.add(name)
                else:
                    fc.ensure_deleted(name)
                    held.discard(name)
                took = fc.wait_converged(held)
                if held and not scope_seen:  # the node's census sees the node's pods
                    during = fc.census()
                    assert len(during["netns"]) == len(held), during
                    assert len(during["pod processes"]) >= len(held), during
                    scope_seen = True
                line = (f"{point}: {'ok' if outcome.acknowledged else outcome.error} "
                        f"in {outcome.seconds:.2f}s, converged in {took:.1f}s")
                report.append(line)
            assert scope_seen, "no point left a pod to take the node's census of"
            for name in sorted(held):
                fc.ensure_deleted(name)
            held.clear()
            fc.wait_converged(held)
            time.sleep(3)  # a housekeeping round: what is left to collect is collected
            leaks = census.leaked(before, fc.census())
            assert leaks == {}, f"leaked after the run: {leaks}"
        finally:
            print("\n".join(report))
            fc.close()
