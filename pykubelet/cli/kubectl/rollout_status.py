"""How far a rollout is (kubectl's polymorphichelpers/rollout_status.go): one status
viewer per kind, a pure function from the object to kubectl's line and whether the rollout
is done, and the watch that feeds it each version of one object until it is."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from pykubelet.cli.kubectl.resources import Target
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import StatusError

Obj = dict[str, Any]
REVISION = "deployment.kubernetes.io/revision"


class RolloutError(Exception):
    """A polymorphic helper's error: its message is printed as kubectl prints it."""


def group_kind(t: Target) -> str:
    """schema.GroupKind's String(): ``Deployment.apps``, ``Pod``."""
    return f"{t.mapping.kind}.{t.mapping.group}" if t.mapping.group else t.mapping.kind


def kind_of(t: Target) -> str:
    return t.mapping.kind if t.mapping.group == "apps" else ""


def int_of(value: Any) -> int:
    return int(value or 0)


def revision_of(obj: Obj) -> int:
    """deploymentutil.Revision: the revision annotation, 0 without one."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    if text is None:
        return 0
    try:
        return int(text)
    except ValueError:
        raise RolloutError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


def deployment_status(d: Obj, revision: int = 0) -> tuple[str, bool]:
    """DeploymentStatusViewer.Status: the line to print and whether it is rolled out."""
    meta, spec, status = d.get("metadata") or {}, d.get("spec") or {}, d.get("status") or {}
    name = meta.get("name", "")
    if revision > 0:
        try:
            have = revision_of(d)
        except RolloutError as exc:
            raise RolloutError(f'cannot get the revision of deployment "{name}": {exc}') from None
        if revision != have:
            raise RolloutError(f"desired revision ({revision}) is different from the running "
                               f"revision ({have})")
    if int_of(meta.get("generation")) > int_of(status.get("observedGeneration")):
        return "Waiting for deployment spec update to be observed...\n", False
    progressing = next((c for c in status.get("conditions") or []
                        if c.get("type") == "Progressing"), None)
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded":
        raise RolloutError(f'deployment "{name}" exceeded its progress deadline')
    updated, replicas = int_of(status.get("updatedReplicas")), int_of(status.get("replicas"))
    available = int_of(status.get("availableReplicas"))
    if spec.get("replicas") is not None and updated < int_of(spec["replicas"]):
        return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of '
                f"{spec['replicas']} new replicas have been updated...\n", False)
    if replicas > updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {replicas - updated} old '
                "replicas are pending termination...\n", False)
    if available < updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {available} of {updated} '
                "updated replicas are available...\n", False)
    return f'deployment "{name}" successfully rolled out\n', True


def daemonset_status(ds: Obj, revision: int = 0) -> tuple[str, bool]:
    """DaemonSetStatusViewer.Status."""
    meta, spec, status = ds.get("metadata") or {}, ds.get("spec") or {}, ds.get("status") or {}
    name = meta.get("name", "")
    if (spec.get("updateStrategy") or {}).get("type") != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    if int_of(meta.get("generation")) > int_of(status.get("observedGeneration")):
        return "Waiting for daemon set spec update to be observed...\n", False
    desired = int_of(status.get("desiredNumberScheduled"))
    updated = int_of(status.get("updatedNumberScheduled"))
    available = int_of(status.get("numberAvailable"))
    if updated < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: {updated} out of {desired} '
                "new pods have been updated...\n", False)
    if available < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: {available} of {desired} '
                "updated pods are available...\n", False)
    return f'daemon set "{name}" successfully rolled out\n', True


def statefulset_status(sts: Obj, revision: int = 0) -> tuple[str, bool]:
    """StatefulSetStatusViewer.Status."""
    meta = sts.get("metadata") or {}
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    observed = int_of(status.get("observedGeneration"))
    if observed == 0 or int_of(meta.get("generation")) > observed:
        return "Waiting for statefulset spec update to be observed...\n", False
    replicas = spec.get("replicas")
    ready, updated = int_of(status.get("readyReplicas")), int_of(status.get("updatedReplicas"))
    if replicas is not None and ready < int_of(replicas):
        return f"Waiting for {int_of(replicas) - ready} pods to be ready...\n", False
    rolling = strategy.get("rollingUpdate")
    if rolling is not None:
        partition = rolling.get("partition")
        if replicas is not None and partition is not None and (
                updated < int_of(replicas) - int_of(partition)):
            return ("Waiting for partitioned roll out to finish: "
                    f"{updated} out of {int_of(replicas) - int_of(partition)} new pods have been "
                    "updated...\n", False)
        return f"partitioned roll out complete: {updated} new pods have been updated...\n", True
    if status.get("updateRevision") != status.get("currentRevision"):
        return ("waiting for statefulset rolling update to complete "
                f"{updated} pods at revision {status.get('updateRevision', '')}...\n", False)
    return ("statefulset rolling update complete "
            f"{int_of(status.get('currentReplicas'))} pods at revision "
            f"{status.get('currentRevision', '')}...\n", True)


STATUS_VIEWERS: dict[str, Callable[[Obj, int], tuple[str, bool]]] = {
    "Deployment": deployment_status, "DaemonSet": daemonset_status,
    "StatefulSet": statefulset_status}


def watch_status(session: Session, t: Target, obj: Obj, revision: int, watch: bool,
                 timeout: float) -> None:
    """The object's status line for its current version and each change, until done
    (UntilWithSync over a watch by name); kubectl's timeout error."""
    viewer = STATUS_VIEWERS.get(kind_of(t))
    if viewer is None:
        raise RolloutError(f"no status viewer has been implemented for {group_kind(t)}")
    deadline = time.monotonic() + timeout if timeout else float("inf")
    text, done = viewer(obj, revision)
    sys.stdout.write(text)
    sys.stdout.flush()
    if done or not watch:
        return
    rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RolloutError("timed out waiting for the condition")
        try:
            for ev in session.client.watch_events(
                    t.mapping.rest, t.namespace, resource_version=rv,
                    timeout_seconds=max(1, int(min(left, 300) + 0.999)),
                    params={"fieldSelector": f"metadata.name={t.name}"}):
                current = ev.get("object") or {}
                rv = str((current.get("metadata") or {}).get("resourceVersion") or rv)
                if ev.get("type") == "DELETED":
                    raise RolloutError("object has been deleted")
                if ev.get("type") not in ("ADDED", "MODIFIED"):
                    continue
                text, done = viewer(current, revision)
                sys.stdout.write(text)
                sys.stdout.flush()
                if done:
                    return
                if time.monotonic() >= deadline:
                    raise RolloutError("timed out waiting for the condition")
        except StatusError as exc:
            if not exc.gone:
                raise
            rv = ""  # too old: start again from the current state (a relist)
            current = session.client.request("GET", t.path)
            rv = str((current.get("metadata") or {}).get("resourceVersion") or "")
            text, done = viewer(current, revision)
            sys.stdout.write(text)
            sys.stdout.flush()
            if done:
                return
