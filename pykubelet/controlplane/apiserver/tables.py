"""``meta.k8s.io/v1`` Tables: the columns and cells kube-apiserver's printers produce
(pkg/printers/internalversion/printers.go), so ``kubectl get`` prints our objects as it
prints a real cluster's, including the pod STATUS the server computes (``Init:0/1``,
``CrashLoopBackOff``, ``Terminating``, ``Completed``).

Cells that do not depend on the clock are cached per object revision; ages are computed
per request.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from pykubelet.api.machinery.duration import human_duration
from pykubelet.api.machinery.swaggerdoc import OBJECT_META, swagger_doc
from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.controlplane.apiserver import tables_apps
from pykubelet.controlplane.apiserver.tables_apps import (
    deployment_printer,
    replica_set_printer,
    stateful_set_printer,
)
from pykubelet.controlplane.apiserver.tables_daemonsets import daemon_set_printer
from pykubelet.controlplane.apiserver.tables_rbac import binding_printer
from pykubelet.controlplane.apiserver.tables_revisions import controller_revision_printer
from pykubelet.controlplane.apiserver.tables_services import (
    endpoint_slice_printer,
    endpoints_printer,
    service_printer,
)
from pykubelet.controlplane.registry.store import Entry

Obj = dict[str, Any]


def col(name: str, typ: str = "string", desc: str = "", fmt: str = "", priority: int = 0) -> Obj:
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


NAME_DESC = swagger_doc(OBJECT_META, "name")
AGE_DESC = swagger_doc(OBJECT_META, "creationTimestamp")
NAME = col("Name", fmt="name", desc=NAME_DESC)
AGE = col("Age", desc=AGE_DESC)


# ---------------------------------------------------------------------------- durations


def age(ts: str | None, now: dt.datetime) -> str:
    t = parse_time_or_none(ts)
    return "<unknown>" if t is None else human_duration(now - t)


# ---------------------------------------------------------------------------- pods

POD_COLUMNS = [
    NAME,
    col("Ready", desc="The aggregate readiness state of this pod for accepting traffic."),
    col("Status", desc="The aggregate status of the containers in this pod."),
    col("Restarts", desc="The number of times the containers in this pod have been restarted "
        "and when the last container in this pod has restarted."),
    AGE,
    col("IP", desc="IP address allocated to the pod. Routable at least within the cluster. "
        "Empty if not yet allocated.", priority=1),
    col("Node", desc="NodeName indicates in which node this pod is scheduled.", priority=1),
    col("Nominated Node", desc="nominatedNodeName is set only when this pod preempts other "
        "pods on the node, but it cannot be scheduled right away as preemption victims "
        "receive their graceful termination periods.", priority=1),
    col("Readiness Gates", desc="If specified, all readiness gates will be evaluated for pod "
        "readiness.", priority=1),
]


def _restartable(c: Obj) -> bool:
    return c.get("restartPolicy") == "Always"


def pod_cells(pod: Obj, now: dt.datetime) -> list[Any]:
    """printPod: READY, STATUS, RESTARTS as upstream computes them."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    restarts = 0
    restartable_init = 0
    total = len(spec.get("containers") or [])
    ready = 0
    last_restart: dt.datetime | None = None
    reason = status.get("reason") or status.get("phase") or ""
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    for c in spec.get("initContainers") or []:
        if _restartable(c):
            total += 1
            restartable_init += 1

    def note_restart(cs: Obj) -> None:
        nonlocal last_restart
        term = (cs.get("lastState") or {}).get("terminated") or {}
        t = parse_time_or_none(term.get("finishedAt"))
        if t is not None and (last_restart is None or t > last_restart):
            last_restart = t

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    n_init = len(spec.get("initContainers") or [])
    sidecar_restarts = 0
    for i, cs in enumerate(init_statuses):
        restarts += int(cs.get("restartCount") or 0)
        if cs.get("restartCount"):
            note_restart(cs)
        state = cs.get("state") or {}
        term = state.get("terminated")
        waiting = state.get("waiting")
        is_sidecar = _restartable(init_specs.get(cs.get("name"), {}))
        if is_sidecar and cs.get("started"):
            sidecar_restarts += int(cs.get("restartCount") or 0)
        if term is not None and term.get("exitCode") == 0:
            continue
        if is_sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            if term.get("reason"):
                reason = f"Init:{term['reason']}"
            elif term.get("signal"):
                reason = f"Init:Signal:{term['signal']}"
            else:
                reason = f"Init:ExitCode:{term.get('exitCode', 0)}"
        elif waiting is not None and waiting.get("reason") and (
                waiting.get("reason") != "PodInitializing"):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{n_init}"
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in status.get("conditions") or [])
    if not initializing or initialized:
        restarts = sidecar_restarts
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            if cs.get("restartCount"):
                note_restart(cs)
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                reason = (f"Signal:{term['signal']}" if term.get("signal")
                          else f"ExitCode:{term.get('exitCode', 0)}")
            elif state.get("running") is not None and cs.get("ready"):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            ready_cond = any(c.get("type") == "Ready" and c.get("status") == "True"
                             for c in status.get("conditions") or [])
            reason = "Running" if ready_cond else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_cell = str(restarts)
    if last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last_restart)} ago)"
    ips = status.get("podIPs") or []
    ip = ips[0].get("ip") if ips else (status.get("podIP") or "")
    gates = spec.get("readinessGates") or []
    gates_cell = "<none>"
    if gates:
        true_types = {c.get("type") for c in status.get("conditions") or []
                      if c.get("status") == "True"}
        gates_cell = f"{sum(1 for g in gates if g.get('conditionType') in true_types)}/{len(gates)}"
    return [
        meta.get("name", ""), f"{ready}/{total}", reason, restarts_cell,
        age(meta.get("creationTimestamp"), now), ip or "<none>",
        spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
        gates_cell,
    ]


# ---------------------------------------------------------------------------- nodes

NODE_COLUMNS = [
    NAME,
    col("Status", desc="The status of the node"),
    col("Roles", desc="The roles of the node"),
    AGE,
    col("Version", desc="Kubelet Version reported by the node."),
    col("Internal-IP", desc="List of internal IPs of the node.", priority=1),
    col("External-IP", desc="List of external IPs of the node.", priority=1),
    col("OS-Image", desc="OS Image reported by the node from /etc/os-release (e.g. Debian "
        "GNU/Linux 7 (wheezy)).", priority=1),
    col("Kernel-Version", desc="Kernel Version reported by the node from 'uname -r' (e.g. "
        "3.16.0-0.bpo.4-amd64).", priority=1),
    col("Container-Runtime", desc="Container runtime version reported by the node through "
        "runtime remote API (e.g. containerd://1.4.2).", priority=1),
]


def node_cells(node: Obj, now: dt.datetime) -> list[Any]:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    ready = "Unknown"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = "Ready" if cond.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        ready += ",SchedulingDisabled"
    roles = set()
    for k, v in (meta.get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = status.get("nodeInfo") or {}

    def addr(kind: str) -> str:
        found = [a.get("address", "") for a in status.get("addresses") or []
                 if a.get("type") == kind]
        return found[0] if found else "<none>"

    return [
        meta.get("name", ""), ready, ",".join(sorted(roles)) or "<none>",
        age(meta.get("creationTimestamp"), now), info.get("kubeletVersion") or "",
        addr("InternalIP"), addr("ExternalIP"), info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


# ---------------------------------------------------------------------------- events

EVENT_COLUMNS = [
    col("Last Seen", desc="Time when this Event was last seen"),
    col("Type", desc="Type of this event (Normal, Warning), new types could be added in the "
        "future."),
    col("Reason", desc="This should be a short, machine understandable string that gives the "
        "reason for this event being generated."),
    col("Object", desc="The object that this event is about."),
    col("Subobject", desc="The subobject of the object that this event is about.", priority=1),
    col("Source", desc="The component reporting this event. Should be a short machine "
        "understandable string.", priority=1),
    col("Message", desc="A human-readable description of the status of this operation."),
    col("First Seen", desc="The time at which the event was first recorded. (Time of server "
        "receipt is in TypeMeta.)", priority=1),
    col("Count", desc="The number of times this event has occurred.", priority=1),
    col("Name", fmt="name", desc=NAME_DESC, priority=1),
]


def event_cells(ev: Obj, now: dt.datetime) -> list[Any]:
    io = ev.get("involvedObject") or {}
    series = ev.get("series") or {}
    first = ev.get("firstTimestamp") or ev.get("eventTime")
    last = ev.get("lastTimestamp") or first
    count = int(ev.get("count") or 0)
    if series:
        last = series.get("lastObservedTime") or last
        count = int(series.get("count") or count)
    count = count or 1
    source = ev.get("source") or {}
    src = source.get("component") or ev.get("reportingComponent") or ""
    if source.get("host"):
        src = f"{src}, {source['host']}"
    return [
        age(last, now), ev.get("type", ""), ev.get("reason", ""),
        f"{str(io.get('kind', '')).lower()}/{io.get('name', '')}", io.get("fieldPath", ""),
        src, (ev.get("message") or "").strip(), age(first, now), count,
        (ev.get("metadata") or {}).get("name", ""),
    ]


# ---------------------------------------------------------------------------- the rest


def _simple(columns: list[Obj], cells: Callable[[Obj], list[Any]]) -> tuple[
        list[Obj], Callable[[Obj, dt.datetime], list[Any]]]:
    def make(obj: Obj, now: dt.datetime) -> list[Any]:
        out = cells(obj)
        idx = next(i for i, c in enumerate(columns) if c["name"] == "Age")
        out.insert(idx, age((obj.get("metadata") or {}).get("creationTimestamp"), now))
        return out

    return columns, make


def _name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def _pdb_value(spec: Obj, key: str) -> str:
    return str(spec[key]) if key in spec else "N/A"


# ---------------------------------------------------------------------------- jobs

# batch/v1 JobSpec's selector, as the Job's and the CronJob's SELECTOR column describe it
JOB_SELECTOR_DESC = (
    "A label query over pods that should match the pod count. Normally, the system sets this "
    "field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-"
    "objects/labels/#label-selectors")

JOB_COLUMNS = [
    NAME,
    col("Status", desc="Status of the job."),
    col("Completions", desc="The number of pods which reached phase Succeeded. The value "
        "increases monotonically for a given spec. However, it may decrease in reaction to "
        "scale down of elastic indexed jobs."),
    col("Duration", desc="Time required to complete the job."),
    AGE,
    *tables_apps.template_columns(col, JOB_SELECTOR_DESC),
]


def format_label_selector(sel: Obj | None) -> str:
    """metav1.FormatLabelSelector."""
    if sel is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op = e.get("operator", "")
        key, values = e.get("key", ""), ",".join(e.get("values") or [])
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(op, ""))
    return ",".join(p for p in parts if p) or "<none>"


def _has_condition(status: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


def job_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    """printJob: the status word, completions, duration, age; the wide cells."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    meta = obj.get("metadata") or {}
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif (spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start = parse_time_or_none(status.get("startTime"))
    end = parse_time_or_none(status.get("completionTime"))
    duration = "" if start is None else human_duration((end or now) - start)
    word = "Running"
    for cond in ("Complete", "Failed", "Terminating", "Suspended", "FailureTarget",
                 "SuccessCriteriaMet"):
        if cond == "Terminating":
            if meta.get("deletionTimestamp"):
                word = cond
                break
        elif _has_condition(status, cond):
            word = cond
            break
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [_name(obj), word, completions, duration, age(meta.get("creationTimestamp"), now),
            ",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            format_label_selector(spec.get("selector"))]


CRONJOB_COLUMNS = [
    NAME,
    col("Schedule", desc="The schedule in Cron format, see "
        "https://en.wikipedia.org/wiki/Cron."),
    col("Timezone", desc="The time zone name for the given schedule, see "
        "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this "
        "will default to the time zone of the kube-controller-manager process. The set of "
        "valid time zone names and the time zone offset is loaded from the system-wide time "
        "zone database by the API server during CronJob validation and the controller "
        "manager during execution. If no system-wide time zone database can be found a "
        "bundled version of the database is used instead. If the time zone name becomes "
        "invalid during the lifetime of a CronJob or due to a change in host configuration, "
        "the controller will stop creating new new Jobs and will create a system event with "
        "the reason UnknownTimeZone. More information can be found in "
        "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
    col("Suspend", "boolean", "This flag tells the controller to suspend subsequent "
        "executions, it does not apply to already started executions.  Defaults to false."),
    col("Active", "integer", "A list of pointers to currently running jobs."),
    col("Last Schedule", desc="Information when was the last time the job was successfully "
        "scheduled."),
    AGE,
    *tables_apps.template_columns(col, JOB_SELECTOR_DESC),
]


def _bool_ptr(value: bool | None) -> str:
    """printBoolPtr."""
    return "<unset>" if value is None else ("True" if value else "False")


def cronjob_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    """printCronJob: schedule, time zone (<none>), suspend, active, last schedule (<none>)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    last = status.get("lastScheduleTime")
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    containers = ((job_spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [_name(obj), spec.get("schedule", ""), spec.get("timeZone") or "<none>",
            _bool_ptr(spec.get("suspend")), len(status.get("active") or []),
            age(last, now) if last else "<none>",
            age((obj.get("metadata") or {}).get("creationTimestamp"), now),
            ",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            format_label_selector(job_spec.get("selector"))]


PRINTERS: dict[str, tuple[list[Obj], Callable[[Obj, dt.datetime], list[Any]]]] = {
    "Pod": (POD_COLUMNS, pod_cells),
    "Node": (NODE_COLUMNS, node_cells),
    "Event": (EVENT_COLUMNS, event_cells),
    "Namespace": _simple(
        [NAME, col("Status", desc="The status of the namespace"), AGE],
        lambda o: [_name(o), (o.get("status") or {}).get("phase", "")]),
    "ConfigMap": _simple(
        [NAME, col("Data", "integer", "Number of data in the configmap"), AGE],
        lambda o: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {})]),
    "Secret": _simple(
        [NAME, col("Type", desc="The type of the secret"),
         col("Data", "integer", "The number of data in the secret"), AGE],
        lambda o: [_name(o), o.get("type", ""), len(o.get("data") or {})]),
    "ServiceAccount": _simple(
        [NAME, col("Secrets", desc="Secrets is a list of the secrets in the same namespace "
                   "that pods running using this ServiceAccount are allowed to use."), AGE],
        lambda o: [_name(o), len(o.get("secrets") or [])]),
    "Lease": _simple(
        [NAME, col("Holder", desc="The holder of the lease"), AGE],
        lambda o: [_name(o), (o.get("spec") or {}).get("holderIdentity") or ""]),
    "PriorityClass": _simple(
        [NAME, col("Value", "integer", "The value of this priority class."),
         col("Global-Default", "boolean", "globalDefault specifies whether this "
             "PriorityClass should be considered as the default priority."), AGE,
         col("PreemptionPolicy", desc="PreemptionPolicy is the Policy for preempting pods "
             "with lower priority.")],
        lambda o: [_name(o), o.get("value", 0), bool(o.get("globalDefault")),
                   o.get("preemptionPolicy", "")]),
    "PodDisruptionBudget": _simple(
        [NAME, col("Min Available", desc="The minimum number of pods that must be available"),
         col("Max Unavailable", desc="The maximum number of pods that may be unavailable"),
         col("Allowed Disruptions", "integer", "Calculated number of pods that may be "
             "disrupted at this time"), AGE],
        lambda o: [_name(o), _pdb_value(o.get("spec") or {}, "minAvailable"),
                   _pdb_value(o.get("spec") or {}, "maxUnavailable"),
                   (o.get("status") or {}).get("disruptionsAllowed", 0)]),
    "ReplicaSet": replica_set_printer(col, NAME, AGE, age),
    "Deployment": deployment_printer(col, NAME, AGE, age),
    "StatefulSet": stateful_set_printer(col, NAME, AGE, age),
    "Job": (JOB_COLUMNS, job_cells),
    "CronJob": (CRONJOB_COLUMNS, cronjob_cells),
    "ControllerRevision": controller_revision_printer(col, NAME, AGE, age),
    "DaemonSet": daemon_set_printer(col, NAME, AGE, age),
    "Service": service_printer(col, NAME, AGE, age),
    "Endpoints": endpoints_printer(col, NAME, AGE, age),
    "EndpointSlice": endpoint_slice_printer(col, NAME, AGE, age),
    "RoleBinding": binding_printer(col, NAME, AGE, age),
    "ClusterRoleBinding": binding_printer(col, NAME, AGE, age),
}

DEFAULT_COLUMNS = [NAME, col("Created At", "date", "CreationTimestamp is a timestamp "
                             "representing the server time when this object was created.")]


def columns_for(kind: str) -> list[Obj]:
    return PRINTERS[kind][0] if kind in PRINTERS else DEFAULT_COLUMNS


def cells_for(kind: str, obj: Obj, now: dt.datetime) -> list[Any]:
    if kind in PRINTERS:
        return PRINTERS[kind][1](obj, now)
    return [_name(obj), (obj.get("metadata") or {}).get("creationTimestamp")]


# a resource's own columns and cells (custom resources' additionalPrinterColumns)
Printer = tuple[list[Obj], Callable[[Obj, dt.datetime], list[Any]]]


def row(kind: str, entry: Entry, now: dt.datetime, include_object: str,
        printer: Printer | None = None) -> Obj:
    obj = entry.obj()
    cells = printer[1](obj, now) if printer is not None else cells_for(kind, obj, now)
    out: Obj = {"cells": cells}
    if include_object == "Object":
        out["object"] = obj
    elif include_object != "None":
        out["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": obj.get("metadata") or {}}
    return out


def table(
    kind: str, entries: Iterable[Entry], revision: int, include_object: str = "Metadata",
    *, headers: bool = True, continue_token: str = "", remaining: int | None = None,
    printer: Printer | None = None,
) -> Obj:
    now = dt.datetime.now(dt.UTC)
    meta: Obj = {"resourceVersion": str(revision)}
    if continue_token:
        meta["continue"] = continue_token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    out: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
    if headers:
        out["columnDefinitions"] = printer[0] if printer is not None else columns_for(kind)
    out["rows"] = [row(kind, e, now, include_object, printer) for e in entries]
    return out
