"""The control loops that run beside the API: the scheduler, node lifecycle, pod GC,
namespace deletion, disruption budgets, garbage collection by ownerReferences, ReplicaSets,
Deployments, Jobs and their TTL after finishing, CronJobs, StatefulSets, DaemonSets,
EndpointSlices and Endpoints, ClusterRole aggregation, ServiceAccounts (``default``
and ``kube-root-ca.crt`` in every namespace), event expiry and store compaction,
and (on every API server) the ``kubernetes`` Service and the cluster DNS with its
``kube-dns`` Service. Each is a coroutine over the control plane, run (and restarted if it
fails) by the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

Controller = Callable[["ControlPlane"], Awaitable[Any]]


def default_controllers(scheduler: bool = True) -> list[Controller]:
    """The scheduler under Lease kube-system/kube-scheduler and the controllers under
    kube-system/kube-controller-manager (each on one control plane at a time when the
    control plane elects leaders); compaction on every API server, as kube-apiserver's
    (coordinated in the store)."""
    from pykubelet.controlplane.controllers.clusterroleaggregation import (
        run_clusterrole_aggregation,
    )
    from pykubelet.controlplane.controllers.cronjob import run_cronjob_controller
    from pykubelet.controlplane.controllers.daemonset import run_daemonset_controller
    from pykubelet.controlplane.controllers.deployment import run_deployment_controller
    from pykubelet.controlplane.controllers.disruption import run_disruption_controller
    from pykubelet.controlplane.controllers.endpointslice import (
        run_endpoints_controller,
        run_endpointslice_controller,
        run_endpointslice_mirroring_controller,
    )
    from pykubelet.controlplane.controllers.garbagecollector.collector import (
        run_garbage_collector,
    )
    from pykubelet.controlplane.controllers.job import run_job_controller
    from pykubelet.controlplane.controllers.kubedns import run_cluster_dns
    from pykubelet.controlplane.controllers.kubernetesservice import run_kubernetes_service
    from pykubelet.controlplane.controllers.leaderelection import (
        CONTROLLERS_LEASE,
        SCHEDULER_LEASE,
        leader_elected,
    )
    from pykubelet.controlplane.controllers.maintenance import run_compaction, run_event_expiry
    from pykubelet.controlplane.controllers.namespace import run_namespace_controller
    from pykubelet.controlplane.controllers.nodelifecycle import run_node_lifecycle
    from pykubelet.controlplane.controllers.podgc import run_pod_gc
    from pykubelet.controlplane.controllers.replicaset import run_replicaset_controller
    from pykubelet.controlplane.controllers.serviceaccounts import (
        run_root_ca_cert_publisher,
        run_serviceaccounts_controller,
    )
    from pykubelet.controlplane.controllers.statefulset import run_statefulset_controller
    from pykubelet.controlplane.controllers.ttlafterfinished import run_ttl_after_finished

    managed: list[Controller] = [run_node_lifecycle, run_pod_gc, run_namespace_controller,
                                 run_disruption_controller, run_garbage_collector,
                                 run_event_expiry, run_replicaset_controller,
                                 run_deployment_controller, run_job_controller,
                                 run_cronjob_controller, run_ttl_after_finished,
                                 run_statefulset_controller, run_daemonset_controller,
                                 run_endpointslice_controller, run_endpoints_controller,
                                 run_endpointslice_mirroring_controller,
                                 run_clusterrole_aggregation]
    managed += [run_serviceaccounts_controller, run_root_ca_cert_publisher]
    out: list[Controller] = [leader_elected(CONTROLLERS_LEASE, managed), run_compaction,
                             run_kubernetes_service, run_cluster_dns]
    if scheduler:
        from pykubelet.controlplane.controllers.scheduler import run_scheduler

        out.insert(0, leader_elected(SCHEDULER_LEASE, [run_scheduler]))
    return out
