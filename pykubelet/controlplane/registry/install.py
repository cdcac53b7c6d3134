"""The served resources' storage, installed in one place (as kube-apiserver's
controlplane instance installs each group's REST storage): one strategy per resource of
:data:`~pykubelet.controlplane.registry.resources.ALL`, over one store and one watch
cache, with the default admission chain. The control plane and the registry's own tests
build the same registry here."""

from __future__ import annotations

from pykubelet.controlplane.apiextensions.crds import CRDStrategy
from pykubelet.controlplane.registry.admission import DEFAULT_PLUGINS, NAMESPACE_LIFECYCLE
from pykubelet.controlplane.registry.configdata import ConfigMapStrategy, SecretStrategy
from pykubelet.controlplane.registry.controllerrevisions import ControllerRevisionStrategy
from pykubelet.controlplane.registry.cronjobs import CronJobStrategy
from pykubelet.controlplane.registry.daemonsets import DaemonSetStrategy
from pykubelet.controlplane.registry.events import EventStrategy
from pykubelet.controlplane.registry.jobs import JobStrategy
from pykubelet.controlplane.registry.leases import LeaseStrategy
from pykubelet.controlplane.registry.namespaces import NamespaceStrategy
from pykubelet.controlplane.registry.nodes import NodeStrategy
from pykubelet.controlplane.registry.pdbs import PDBStrategy
from pykubelet.controlplane.registry.pods import PodStrategy
from pykubelet.controlplane.registry.priorityclasses import PriorityClassStrategy
from pykubelet.controlplane.registry.rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
    rbac_escalation,
)
from pykubelet.controlplane.registry.replicasets import DeploymentStrategy, ReplicaSetStrategy
from pykubelet.controlplane.registry.serviceaccountadmission import SERVICE_ACCOUNT_ADMISSION
from pykubelet.controlplane.registry.serviceaccounts import ServiceAccountStrategy
from pykubelet.controlplane.registry.services import (
    EndpointSliceStrategy,
    EndpointsStrategy,
    ServiceStrategy,
)
from pykubelet.controlplane.registry.statefulsets import StatefulSetStrategy
from pykubelet.controlplane.registry.store import Registry
from pykubelet.controlplane.registry.strategy import Strategy
from pykubelet.controlplane.storage import Storage
from pykubelet.controlplane.storage.cacher import DEFAULT_RING, Cacher

STRATEGIES: tuple[type[Strategy], ...] = (
    PodStrategy, NodeStrategy, NamespaceStrategy, EventStrategy, ConfigMapStrategy,
    SecretStrategy, LeaseStrategy, PriorityClassStrategy, PDBStrategy, ReplicaSetStrategy,
    DeploymentStrategy, JobStrategy, CronJobStrategy,
    StatefulSetStrategy, ControllerRevisionStrategy, DaemonSetStrategy,
    ServiceStrategy, EndpointsStrategy, EndpointSliceStrategy,
    RoleStrategy, ClusterRoleStrategy, RoleBindingStrategy, ClusterRoleBindingStrategy,
    ServiceAccountStrategy,
)


def new_registry(storage: Storage, cacher: Cacher, watch_cache_size: int = DEFAULT_RING,
                 service_ranges: tuple[str, str] | None = None) -> Registry:
    """Every served resource's store over ``storage`` and ``cacher`` (start the cacher
    after this: it loads the resources registered here). ``service_ranges``: the
    service CIDR and node port range (kube-apiserver's --service-cluster-ip-range and
    --service-node-port-range), upstream's defaults when None."""
    registry = Registry(storage, cacher)
    for strategy in STRATEGIES:
        if strategy is ServiceStrategy and service_ranges is not None:
            registry.add(ServiceStrategy(*service_ranges), watch_cache_size)
            continue
        registry.add(strategy(), watch_cache_size)
    # CustomResourceDefinitions: apiextensions-apiserver's, served beside the built-in
    # resources (pykubelet.controlplane.apiextensions), stored and cached as they are
    registry.add(CRDStrategy(), watch_cache_size)
    registry.admission = [*DEFAULT_PLUGINS, rbac_escalation]
    # ServiceAccount right after NamespaceLifecycle, as kube-apiserver orders them
    registry.admission.insert(registry.admission.index(NAMESPACE_LIFECYCLE) + 1,
                              SERVICE_ACCOUNT_ADMISSION)
    return registry
