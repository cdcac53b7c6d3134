"""A node that belongs to a cluster: everything the agent does with a control plane, wired
onto a running ``Kubelet``.

Join (the node's credentials), then: register and report the Node and renew its Lease
(``NodeStatusReporter``), run the pods bound to it (``APIPodSource``), write their
statuses (``APIStatusPatcher`` as the status manager's patcher) and finish their graceful
deletion (``FinalDeleter``), send its events, keep mirror pods for its static pods, and
serve container logs and exec/attach/port-forward streams to the control plane on port
10250 (``NodeServer``), and, where the config enables it, proxy Services (``ServiceProxy``).
When the control plane is away all of it retries while the pods keep running; the pod watch
resumes from its last resourceVersion.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from pykubelet.api.node_labels import node_may_set
from pykubelet.client.bootstrap import NodeCredentials
from pykubelet.client.rest import RESTClient
from pykubelet.kubelet.cluster import node_status
from pykubelet.kubelet.cluster.apisource import APIPodSource
from pykubelet.kubelet.cluster.apistatus import APIEventSink, APIStatusPatcher, FinalDeleter
from pykubelet.kubelet.cluster.mirror_pods import MirrorPods
from pykubelet.kubelet.cluster.object_refs import APIObjectRefs
from pykubelet.kubelet.cri.runtime_service import CRICallError, StreamFlags
from pykubelet.kubelet.kuberuntime.labels import CONTAINER_NAME_LABEL, POD_UID_LABEL
from pykubelet.kubelet.logs.container_logs import ContainerLogError, log_container_id
from pykubelet.kubelet.pod.pod_manager import FILE_SOURCE, pod_source
from pykubelet.kubelet.server.node_server import LogError, LogTarget, NodeServer
from pykubelet.proxy.service_proxy import ServiceProxy

if TYPE_CHECKING:
    from pykubelet.api.types import Pod
    from pykubelet.kubelet.agent import Kubelet

log = logging.getLogger(__name__)

MIRROR_SYNC_PERIOD_S = 2.0
CONTAINER_RUNNING = 1  # runtime.v1 ContainerState.CONTAINER_RUNNING


class APINode:
    def __init__(self, kubelet: Kubelet, creds: NodeCredentials, *, address: str,
                 kubelet_version: str, control_plane: bool = False,
                 server_port: int = node_status.KUBELET_PORT) -> None:
        self.server_port = server_port
        self.kubelet = kubelet
        cfg = kubelet.config
        self.node_name = kubelet.node_name
        self.client = RESTClient(creds.server, token=creds.token, ca_pem=creds.ca_pem,
                                 user_agent=f"pykubelet/{self.node_name}")
        wanted = node_status.node_labels(self.node_name, dict(cfg.nodeLabels), control_plane)
        # labels such as node-role.kubernetes.io/* are an admin's to set (NodeRestriction
        # refuses a node that sets them on itself): whoever runs the agent applies them
        self.admin_labels = {k: v for k, v in wanted.items() if not node_may_set(k)}
        self.reporter = node_status.NodeStatusReporter(
            self.client, self.node_name,
            labels={k: v for k, v in wanted.items() if node_may_set(k)},
            taints=[dict(t) for t in cfg.registerWithTaints],
            pod_cidr=cfg.podCIDR,
            facts=self._facts(address, kubelet_version),
            readings=self._readings,
            images=self._images,
        )
        # pods are listed once the Node is read (kubelet's nodeHasSynced gate)
        self.source = APIPodSource(self.client, self.node_name, kubelet,
                                   node_synced=self.reporter.registered)
        self.mirrors = MirrorPods(self.client, self.source.informer, self._static_pods,
                                  lambda: self.reporter.node_uid)
        patcher = APIStatusPatcher(
            self.client, self.source.api_pod, self.mirrors.mirror_of,
            lambda uid: any(p.uid == uid for p in self._static_pods()))
        kubelet.status_manager.patcher = patcher
        self.deleter = FinalDeleter(self.client, before=self._flush_status)
        kubelet.on_pod_terminated = self.deleter.pod_terminated
        kubelet.node_labels = self.reporter.current_labels
        self.events = APIEventSink(self.client)
        kubelet.recorder.sink = self.events
        self.object_refs = APIObjectRefs(self.client)
        kubelet.manager.object_refs = self.object_refs
        self.server = NodeServer(address if address != "127.0.0.1" else "0.0.0.0",
                                 server_port, creds.cert_path, creds.key_path, creds.ca_pem,
                                 self._log_target, self,
                                 resource_metrics=kubelet.render_resource_metrics)
        # the service proxy (kube-proxy's iptables or nftables mode), where the config enables it
        self.proxy = (ServiceProxy(self.client, self.node_name, cfg.serviceProxy,
                                   kubelet.metrics.registry)
                      if cfg.serviceProxy.enabled else None)
        self._stop = threading.Event()
        self._mirror_thread = threading.Thread(target=self._mirror_loop, name="mirror-pods",
                                               daemon=True)

    # ------------------------------------------------------------------ readings
    def _facts(self, address: str, kubelet_version: str) -> node_status.Facts:
        try:
            version = self.kubelet.cri.version()
            runtime = f"{version.runtime_name}://{version.runtime_version}"
        except Exception:
            runtime = "unknown://"
        try:
            disk = psutil.disk_usage(self.kubelet.config.rootDir).total
        except OSError:
            disk = 0
        addresses = [{"type": "InternalIP", "address": address},
                     {"type": "Hostname", "address": self.node_name}]
        return node_status.Facts(
            cpu=self.kubelet.cpu_capacity, memory=self.kubelet.memory_capacity,
            ephemeral_storage=disk,
            node_info=node_status.node_info(runtime, kubelet_version),
            addresses=addresses,
            allocatable_overrides=dict(self.kubelet.config.allocatable),
            kubelet_port=self.server_port,
        )

    def _readings(self) -> node_status.Readings:
        r = node_status.read_signals(self.kubelet.config.rootDir)
        try:
            r.runtime_errors = node_status.runtime_errors(
                list(self.kubelet.cri.status().status.conditions))
        except Exception as exc:
            log.debug("runtime status: %s", exc)
            r.runtime_errors = node_status.runtime_errors(None)
        r.pleg_healthy = self.kubelet.pleg.healthy()
        if not r.pleg_healthy:
            r.pleg_message = self.kubelet.pleg.health_message()
        return r

    def _images(self) -> list[dict[str, object]]:
        try:
            images = self.kubelet.cri.list_images()
        except Exception:
            return []
        out = [{"names": [*im.repo_tags, *im.repo_digests], "sizeBytes": int(im.size)}
               for im in images]
        out.sort(key=lambda i: -int(i["sizeBytes"]))  # type: ignore[call-overload]
        return out[:node_status.MAX_IMAGES]

    def _static_pods(self) -> list:  # type: ignore[type-arg]
        return [p for p in self.kubelet.pod_manager.all_pods() if pod_source(p) == FILE_SOURCE]

    def _flush_status(self, pod: object) -> None:
        self.kubelet.status_manager.sync_batch()

    # ------------------------------------------------------------------ logs
    def _log_target(self, namespace: str, name: str, container: str,
                    previous: bool) -> LogTarget:
        pod = self._pod(namespace, name)
        # any container of the pod, ephemeral ones included (validateContainerLogStatus)
        if container not in {c.name for c in (*pod.all_containers(),
                                               *pod.spec.ephemeral_containers)}:
            raise LogError(f'container "{container}" in pod "{name}" is not valid')
        cri = self.kubelet.cri
        found = cri.list_containers(label_selector={POD_UID_LABEL: pod.uid,
                                                    CONTAINER_NAME_LABEL: container})
        found.sort(key=lambda c: (c.metadata.attempt, c.created_at), reverse=True)
        status = self.kubelet.status_manager.get_pod_status(pod.uid)
        cstatus = next((cs for cs in ((status.init_container_statuses
                                       + status.container_statuses
                                       + status.ephemeral_container_statuses)
                                      if status else [])
                        if cs.name == container), None)
        if cstatus is not None:  # kubelet's validateContainerLogStatus
            try:
                wanted = log_container_id(cstatus, name, previous)
            except ContainerLogError as exc:
                raise LogError(str(exc)) from None
            chosen = next((c for c in found if c.id == wanted), None)
            if chosen is None:
                what = "previous terminated container" if previous else "container"
                raise LogError(f'{what} "{container}" in pod "{name}" not found')
        elif previous:  # no status yet: nothing ran before
            raise LogError(f'previous terminated container "{container}" in pod "{name}" '
                           "not found")
        elif not found:
            raise LogError(f'container "{container}" in pod "{name}" is waiting to start: '
                           "ContainerCreating")
        else:
            chosen = found[0]
        st = cri.container_status(chosen.id)
        if not st.log_path:
            raise LogError(f'container "{container}" in pod "{name}" has no log')
        cid = chosen.id

        def running() -> bool:
            try:
                return int(cri.container_status(cid).state) == CONTAINER_RUNNING
            except Exception:
                return False

        return LogTarget(st.log_path, running)

    # ------------------------------------------------------------------ streams
    def _pod(self, namespace: str, name: str, uid: str = "") -> Pod:
        pod = next((p for p in self.kubelet.pod_manager.all_pods()
                    if p.namespace == namespace and p.name == name), None)
        if pod is None or (uid and pod.uid != uid):
            raise LogError(f'pod "{name}" not found', 404)
        return pod

    def _running_container(self, namespace: str, name: str, uid: str, container: str) -> str:
        pod = self._pod(namespace, name, uid)
        found = self.kubelet.cri.list_containers(label_selector={
            POD_UID_LABEL: pod.uid, CONTAINER_NAME_LABEL: container})
        running = [c for c in found if int(c.state) == CONTAINER_RUNNING]
        if not running:
            raise LogError(f'container not found ("{container}")', 404)
        return str(running[0].id)

    def exec_url(self, namespace: str, pod: str, uid: str, container: str, cmd: list[str],
                 streams: StreamFlags) -> str:
        cid = self._running_container(namespace, pod, uid, container)
        return self._cri_url(lambda: self.kubelet.cri.exec(cid, cmd, streams))

    def attach_url(self, namespace: str, pod: str, uid: str, container: str,
                   streams: StreamFlags) -> str:
        cid = self._running_container(namespace, pod, uid, container)
        return self._cri_url(lambda: self.kubelet.cri.attach(cid, streams))

    def port_forward_url(self, namespace: str, pod: str, uid: str, ports: list[int]) -> str:
        p = self._pod(namespace, pod, uid)
        ready = self.kubelet.cri.list_pod_sandbox({POD_UID_LABEL: p.uid}, ready_only=True)
        if not ready:
            raise LogError(f'pod "{pod}" has no running sandbox', 404)
        sandbox = max(ready, key=lambda s: s.created_at).id
        return self._cri_url(lambda: self.kubelet.cri.port_forward(sandbox, ports))

    @staticmethod
    def _cri_url(call: Callable[[], str]) -> str:
        try:
            return call()
        except CRICallError as exc:
            raise LogError(exc.details, 404 if exc.not_found else 500) from None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start after the agent: the status manager gets its sync thread now."""
        self.kubelet.status_manager.start()
        self.events.start()
        self.deleter.start()
        self.reporter.start()
        self.source.start()
        self.object_refs.watch_services()
        self.server.start()
        if self.proxy is not None:
            self.proxy.start()
        self._mirror_thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.deleter.stop()  # they send what they hold first
        self.events.stop()
        self.reporter.stop()
        self.client.close()  # its watches end now, so the informers return at once
        self.source.stop()
        self.object_refs.stop()
        self.server.stop()
        if self.proxy is not None:
            self.proxy.stop()  # a clean stop: its rules go with it
        self._mirror_thread.join(2)

    def _mirror_loop(self) -> None:
        while not self._stop.wait(MIRROR_SYNC_PERIOD_S):
            if self.reporter.registered.is_set():
                try:
                    self.mirrors.sync()
                except Exception:
                    log.exception("mirror pods")


def state_dir(root_dir: str) -> Path:
    """Where the node keeps its cluster credentials."""
    return Path(root_dir) / "pki"
