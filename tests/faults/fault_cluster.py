"""A one-node cluster (control plane process + ``pykubelet run`` with its embedded runtime)
that a fault run kills pieces of, and the checks made after each kill: what the API
acknowledged is still there, the node converges to the pods asked for, and the CRI lists
no duplicate container and no second sandbox of a pod."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import fault_census as census
from cp_process import ControlPlaneProcess
from node_process import IMAGE, NodeProcess

from pykubelet import state_lock
from pykubelet.kubelet.kuberuntime.labels import (
    CONTAINER_NAME_LABEL,
    CONTAINER_RESTART_COUNT_ANNOTATION,
    POD_UID_LABEL,
)
from pykubelet.runtime.service import default_netns_prefix

NAMESPACE = "faults"
REQUEST_TIMEOUT = 10.0  # the client's; a request still unanswered after it is a hang
CONVERGE_TIMEOUT = 120.0
CONTAINER_RUNNING = 1
SANDBOX_READY = 0


def pod_body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "app", "image": IMAGE,
                                     "imagePullPolicy": "IfNotPresent",
                                     "command": ["sleep", "3600"]}]}}


@dataclass
class Outcome:
    """What the client saw of one request made while a kill was under way."""
    acknowledged: bool = False
    error: str = ""
    seconds: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class FaultCluster:
    cp: ControlPlaneProcess
    node: NodeProcess
    killed_runtime: int | None = None
    _client: Any = None
    _client_pid: int = 0
    log: list[str] = field(default_factory=list)
    # every UID the run's pods had, in the API's or the node's view: the census counts the
    # pod cgroups of these only (other tests' pods run beside it)
    pod_uids: set[str] = field(default_factory=set)

    # ------------------------------------------------------------------ clients
    def core(self) -> Any:
        """A client of the control plane as it runs now (a new one after each restart, the
        last one closed)."""
        from kubernetes import client, config

        pid = self.cp.proc.pid if self.cp.proc is not None else 0
        if self._client is None or self._client_pid != pid:
            if self._client is not None:
                self._client.close()
            self._client = config.new_client_from_config(str(self.cp.kubeconfig))
            self._client_pid = pid
        return client.CoreV1Api(self._client)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def prepare(self) -> None:
        """The run's namespace, once its default ServiceAccount exists (pods name it)."""
        self.cp.kubectl("create", "namespace", NAMESPACE)
        self._retrying(lambda: self.core().read_namespaced_service_account(
            "default", NAMESPACE, _request_timeout=10) and None, timeout=30)

    def in_background(self, call: Callable[[], object]) -> Outcome:
        out = Outcome()

        def run() -> None:
            t0 = time.monotonic()
            try:
                call()
                out.acknowledged = True
            except Exception as exc:  # what the client saw, kept for the report
                out.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            out.seconds = time.monotonic() - t0
            out.done.set()

        threading.Thread(target=run, daemon=True).start()
        return out

    def create(self, name: str) -> Outcome:
        core = self.core()
        return self.in_background(lambda: core.create_namespaced_pod(
            NAMESPACE, pod_body(name), _request_timeout=REQUEST_TIMEOUT))

    def delete(self, name: str) -> Outcome:
        core = self.core()
        return self.in_background(lambda: core.delete_namespaced_pod(
            name, NAMESPACE, _request_timeout=REQUEST_TIMEOUT))

    def ensure_created(self, name: str) -> None:
        """Create ``name`` unless it exists: a client's retry after an unanswered create."""
        from kubernetes.client import ApiException

        self._retrying(lambda: self._ignore(ApiException, 409, lambda: self.core()
                                            .create_namespaced_pod(NAMESPACE, pod_body(name),
                                                                   _request_timeout=10)))

    def ensure_deleted(self, name: str) -> None:
        from kubernetes.client import ApiException

        self._retrying(lambda: self._ignore(ApiException, 404, lambda: self.core()
                                            .delete_namespaced_pod(name, NAMESPACE,
                                                                   _request_timeout=10)))

    @staticmethod
    def _ignore(exc_type: type[Exception], status: int, call: Callable[[], object]) -> None:
        try:
            call()
        except exc_type as exc:
            if getattr(exc, "status", None) != status:
                raise

    @staticmethod
    def _retrying(call: Callable[[], None], timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while True:
            try:
                call()
                return
            except Exception:
                if time.monotonic() > end:
                    raise
                time.sleep(0.5)

    def api_pods(self) -> dict[str, Any]:
        pods = self.core().list_namespaced_pod(NAMESPACE, _request_timeout=10).items
        self.pod_uids.update(p.metadata.uid for p in pods)
        return {p.metadata.name: p for p in pods}

    # ------------------------------------------------------------------ the victims
    def runtime_pid(self) -> int | None:
        return state_lock.holder(self.node.base / "root" / state_lock.RUNTIME_LOCK)

    def kill(self, victim: str) -> None:
        if victim == "agent":
            self.node.kill()
        elif victim == "control-plane":
            self.cp.kill()
        elif victim == "runtime":
            import os
            import signal

            pid = self.runtime_pid()
            assert pid, "no runtime holds the node's root"
            self.killed_runtime = pid
            os.kill(pid, signal.SIGKILL)
            end = time.monotonic() + 10
            while self.runtime_pid() == pid and time.monotonic() < end:
                time.sleep(0.05)
        else:
            raise ValueError(victim)

    def restart(self, victim: str) -> None:
        """Start ``victim`` again as its supervisor would: systemd for the agent and the
        control plane; for the runtime, the agent itself (its embedded runtime's
        supervisor, as containerd's unit is containerd's), so here it is only awaited."""
        if victim == "agent":
            self.node.start()
        elif victim == "control-plane":
            self.cp.start()
        elif victim == "runtime":
            end = time.monotonic() + 30
            while self.runtime_pid() in (None, self.killed_runtime):
                assert time.monotonic() < end, \
                    "the agent did not start its runtime again:\n" + self.tail()
                time.sleep(0.1)

    def tail(self, name: str = "agent.log", size: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return (self.node.base / name).read_text(errors="replace")[-size:]
        return ""

    # ------------------------------------------------------------------ the node's view
    def cri_view(self) -> tuple[list[Any], list[Any]]:
        with self.node.cri() as cri:
            sandboxes, containers = cri.list_pod_sandbox(), cri.list_containers()
        self.pod_uids.update(s.metadata.uid for s in sandboxes)
        return sandboxes, containers

    def duplicates(self, sandboxes: list[Any], containers: list[Any]) -> list[str]:
        """Two ready sandboxes of one pod, two running containers of one pod's container,
        or two containers of the same attempt: what a crash between a CRI call and the
        agent recording it would leave."""
        found = []
        ready = Counter(s.metadata.uid for s in sandboxes if s.state == SANDBOX_READY)
        found += [f"pod {uid}: {n} ready sandboxes" for uid, n in ready.items() if n > 1]
        running = Counter((c.labels.get(POD_UID_LABEL), c.labels.get(CONTAINER_NAME_LABEL))
                          for c in containers if c.state == CONTAINER_RUNNING)
        found += [f"{key}: {n} running" for key, n in running.items() if n > 1]
        attempts = Counter((c.labels.get(POD_UID_LABEL), c.labels.get(CONTAINER_NAME_LABEL),
                            c.annotations.get(CONTAINER_RESTART_COUNT_ANNOTATION))
                           for c in containers)
        found += [f"{key}: {n} containers" for key, n in attempts.items() if n > 1]
        return found

    def converged(self, held: set[str]) -> str:
        """"" once the API holds exactly ``held``, each Running with its container running,
        and the node runs exactly those pods (one ready sandbox and one running container
        each, no duplicate, one bridge port per sandbox); else what is still off."""
        try:
            pods = self.api_pods()
            sandboxes, containers = self.cri_view()
        except Exception as exc:
            return f"unreachable: {type(exc).__name__}"
        if set(pods) != held:
            return f"API pods {sorted(pods)} != {sorted(held)}"
        for name, p in pods.items():
            statuses = p.status.container_statuses or []
            if p.status.phase != "Running" or not statuses or not statuses[0].state.running:
                return f"{name} is {p.status.phase}"
        uids = {p.metadata.uid for p in pods.values()}
        ready = [s for s in sandboxes if s.state == SANDBOX_READY]
        if {s.metadata.uid for s in ready} != uids or len(ready) != len(uids):
            return f"{len(ready)} ready sandboxes for {len(uids)} pods"
        running = [c for c in containers if c.state == CONTAINER_RUNNING]
        if {c.labels.get(POD_UID_LABEL) for c in running} != uids or len(running) != len(uids):
            return f"{len(running)} running containers for {len(uids)} pods"
        dup = self.duplicates(sandboxes, containers)
        if dup:
            return f"duplicates: {dup}"
        ports = census.bridge_ports(self.node.bridge)
        if len(ports) != len(ready):
            return f"{len(ports)} bridge ports for {len(ready)} sandboxes"
        return ""

    def wait_converged(self, held: set[str], timeout: float = CONVERGE_TIMEOUT) -> float:
        t0 = time.monotonic()
        why = ""
        while time.monotonic() - t0 < timeout:
            why = self.converged(held)
            if not why:
                return time.monotonic() - t0
            time.sleep(0.3)
        raise AssertionError(f"not converged after {timeout}s: {why}\n" + self.tail())

    def census(self) -> dict[str, list[str]]:
        root = self.node.base / "root"
        return census.take(self.node.base, self.node.bridge, self.node.subnet,
                           f"kcn{self.node.index}", self.node.base / "ipam",
                           [root / "runc"], default_netns_prefix(root), self.pod_uids)
