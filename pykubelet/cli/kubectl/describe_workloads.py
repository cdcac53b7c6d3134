"""``pykubectl describe`` of the workload kinds in kubectl 1.32's layout (pkg/describe's
DeploymentDescriber, ReplicaSetDescriber, JobDescriber, CronJobDescriber,
DaemonSetDescriber, StatefulSetDescriber): the same
sections, labels and tab stops as the pod describer beside them, the pod template through
DescribePodTemplate, and the Events section queried as kubectl queries it (by the object's
kind, name, namespace and UID).

Each describer is a pure function of the objects (table-testable) plus a reader that
fetches what kubectl fetches: a Deployment's ReplicaSets (old ones oldest first, the new
one apart), a ReplicaSet's, DaemonSet's or StatefulSet's pods by phase."""

from __future__ import annotations

from typing import Any

from pykubelet.api.machinery.duration import human_duration
from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.cli.kubectl.describe import (
    Writer,
    describe_events,
    describe_pod_template,
    format_label_selector,
    print_annotations,
    print_labels,
    rfc1123z,
    search_events,
    selector_string,
)
from pykubelet.cli.kubectl.printers import format_labels
from pykubelet.cli.kubectl.resources import Target
from pykubelet.cli.kubectl.revisions import deployment_replicasets
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import PODS

Obj = dict[str, Any]


def _controller(meta: Obj) -> str:
    """printController: ``Kind/name`` of the controller owner, else ""."""
    ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    return f"{ref.get('kind', '')}/{ref.get('name', '')}" if ref else ""


def _owned_head(meta: Obj, selector: str) -> Writer:
    """The lines a ReplicaSet's and a Job's description open with: Name, Namespace,
    Selector, Labels, Annotations and, when it has one, Controlled By."""
    w = Writer()
    w.write(0, f"Name:\t{meta.get('name', '')}\n")
    w.write(0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(0, f"Selector:\t{selector}\n")
    print_labels(w, "Labels", meta.get("labels"))
    print_annotations(w, "Annotations", meta.get("annotations"))
    controller = _controller(meta)
    if controller:
        w.write(0, f"Controlled By:\t{controller}\n")
    return w


def _conditions(w: Writer, conditions: list[Obj]) -> None:
    if not conditions:
        return
    w.write(0, "Conditions:\n  Type\tStatus\tReason\n")
    w.write(1, "----\t------\t------\n")
    for c in conditions:
        w.write(1, f"{c.get('type', '')} \t{c.get('status', '')}\t{c.get('reason', '')}\n")


def _int_or_string(value: Any) -> str:
    """intstr.IntOrString's String()."""
    return "0" if value is None else str(value)


def _replica_sets(rss: list[Obj]) -> str:
    """printReplicaSetsByLabels."""
    text = ", ".join(f"{(rs.get('metadata') or {}).get('name', '')} "
                     f"({int((rs.get('status') or {}).get('replicas') or 0)}/"
                     f"{int((rs.get('spec') or {}).get('replicas') or 0)} replicas created)"
                     for rs in rss)
    return text or "<none>"


def describe_deployment(d: Obj, old: list[Obj], new: list[Obj], events: list[Obj] | None
                        ) -> str:
    """describeDeployment."""
    meta, spec, status = d.get("metadata") or {}, d.get("spec") or {}, d.get("status") or {}
    w = Writer()
    w.write(0, f"Name:\t{meta.get('name', '')}\n")
    w.write(0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    print_labels(w, "Labels", meta.get("labels"))
    print_annotations(w, "Annotations", meta.get("annotations"))
    w.write(0, f"Selector:\t{selector_string(spec.get('selector'))}\n")
    w.write(0, f"Replicas:\t{int(spec.get('replicas') or 0)} desired | "
               f"{int(status.get('updatedReplicas') or 0)} updated | "
               f"{int(status.get('replicas') or 0)} total | "
               f"{int(status.get('availableReplicas') or 0)} available | "
               f"{int(status.get('unavailableReplicas') or 0)} unavailable\n")
    strategy = spec.get("strategy") or {}
    w.write(0, f"StrategyType:\t{strategy.get('type', '')}\n")
    w.write(0, f"MinReadySeconds:\t{int(spec.get('minReadySeconds') or 0)}\n")
    ru = strategy.get("rollingUpdate")
    if ru is not None:
        w.write(0, f"RollingUpdateStrategy:\t{_int_or_string(ru.get('maxUnavailable'))} max "
                   f"unavailable, {_int_or_string(ru.get('maxSurge'))} max surge\n")
    describe_pod_template(w, spec.get("template") or {})
    _conditions(w, status.get("conditions") or [])
    if old or new:
        w.write(0, f"OldReplicaSets:\t{_replica_sets(old)}\n")
        w.write(0, f"NewReplicaSet:\t{_replica_sets(new)}\n")
    if events is not None:
        describe_events(w, events)
    return w.text()


def describe_replicaset(rs: Obj, pods: tuple[int, int, int, int] | str,
                        events: list[Obj] | None) -> str:
    """describeReplicaSet; ``pods`` is (running, waiting, succeeded, failed) or the error
    reading them."""
    meta, spec, status = rs.get("metadata") or {}, rs.get("spec") or {}, rs.get("status") or {}
    w = _owned_head(meta, format_label_selector(spec.get('selector') or {}))
    w.write(0, f"Replicas:\t{int(status.get('replicas') or 0)} current / "
               f"{int(spec.get('replicas') or 0)} desired\n")
    w.write(0, "Pods Status:\t")
    if isinstance(pods, str):
        w.write(0, f"error in fetching pods: {pods}\n")
    else:
        w.write(0, f"{pods[0]} Running / {pods[1]} Waiting / {pods[2]} Succeeded / {pods[3]} "
                   "Failed\n")
    describe_pod_template(w, spec.get("template") or {})
    _conditions(w, status.get("conditions") or [])
    if events is not None:
        describe_events(w, events)
    return w.text()


def _pods_status(w: Writer, pods: tuple[int, int, int, int]) -> None:
    w.write(0, f"Pods Status:\t{pods[0]} Running / {pods[1]} Waiting / {pods[2]} Succeeded / "
               f"{pods[3]} Failed\n")


def describe_daemonset(ds: Obj, pods: tuple[int, int, int, int], events: list[Obj] | None
                       ) -> str:
    """describeDaemonSet (kubectl 1.32's, without the Namespace line later ones have): the
    node counts of its status, its pods by phase."""
    meta, spec, status = ds.get("metadata") or {}, ds.get("spec") or {}, ds.get("status") or {}
    template = spec.get("template") or {}
    w = Writer()
    w.write(0, f"Name:\t{meta.get('name', '')}\n")  # 1.32: no Namespace line
    w.write(0, f"Selector:\t{selector_string(spec.get('selector'))}\n")
    node_selector = (template.get("spec") or {}).get("nodeSelector")
    w.write(0, f"Node-Selector:\t{format_labels(node_selector)}\n")
    print_labels(w, "Labels", meta.get("labels"))
    print_annotations(w, "Annotations", meta.get("annotations"))
    for title, key in (("Desired Number of Nodes Scheduled", "desiredNumberScheduled"),
                       ("Current Number of Nodes Scheduled", "currentNumberScheduled"),
                       ("Number of Nodes Scheduled with Up-to-date Pods",
                        "updatedNumberScheduled"),
                       ("Number of Nodes Scheduled with Available Pods", "numberAvailable"),
                       ("Number of Nodes Misscheduled", "numberMisscheduled")):
        w.write(0, f"{title}: {int(status.get(key) or 0)}\n")
    _pods_status(w, pods)
    describe_pod_template(w, template)
    if events is not None:
        describe_events(w, events)
    return w.text()


def describe_statefulset(sts: Obj, pods: tuple[int, int, int, int],
                         events: list[Obj] | None) -> str:
    """describeStatefulSet: replicas, the update strategy (a partition when one is set),
    its pods by phase, the pod and volume claim templates."""
    meta, spec, status = (sts.get("metadata") or {}, sts.get("spec") or {},
                          sts.get("status") or {})
    w = Writer()
    w.write(0, f"Name:\t{meta.get('name', '')}\n")
    w.write(0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    w.write(0, f"Selector:\t{selector_string(spec.get('selector'))}\n")
    print_labels(w, "Labels", meta.get("labels"))
    print_annotations(w, "Annotations", meta.get("annotations"))
    w.write(0, f"Replicas:\t{int(spec.get('replicas') or 0)} desired | "
               f"{int(status.get('replicas') or 0)} total\n")
    strategy = spec.get("updateStrategy") or {}
    w.write(0, f"Update Strategy:\t{strategy.get('type', '')}\n")
    ru = strategy.get("rollingUpdate")
    if ru is not None and ru.get("partition") is not None:
        w.write(1, f"Partition:\t{int(ru['partition'])}\n")
        if ru.get("maxUnavailable") is not None:
            w.write(1, f"MaxUnavailable:\t{_int_or_string(ru['maxUnavailable'])}\n")
    _pods_status(w, pods)
    describe_pod_template(w, spec.get("template") or {})
    claims = spec.get("volumeClaimTemplates") or []
    if not claims:
        w.write(0, "Volume Claims:\t<none>\n")
    else:  # the API refuses them (no storage here): their names at least
        w.write(0, "Volume Claims:\n")
        for pvc in claims:
            w.write(1, f"Name:\t{(pvc.get('metadata') or {}).get('name', '')}\n")
    if events is not None:
        describe_events(w, events)
    return w.text()


def _indexes(indexes: str, soft_limit: int = 50) -> str:
    """capIndexesListOrNone."""
    if not indexes:
        return "<none>"
    cut = indexes.find(",", soft_limit)
    return indexes if cut < 0 else indexes[:cut + 1] + "..."


def describe_job(job: Obj, events: list[Obj] | None) -> str:
    """describeJob."""
    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    w = _owned_head(meta, selector_string(spec.get('selector')))
    if spec.get("parallelism") is not None:
        w.write(0, f"Parallelism:\t{spec['parallelism']}\n")
    completions = spec.get("completions")
    w.write(0, f"Completions:\t{'<unset>' if completions is None else completions}\n")
    if spec.get("completionMode") is not None:
        w.write(0, f"Completion Mode:\t{spec['completionMode']}\n")
    if spec.get("suspend") is not None:
        w.write(0, f"Suspend:\t{'true' if spec['suspend'] else 'false'}\n")
    if spec.get("backoffLimit") is not None:
        w.write(0, f"Backoff Limit:\t{spec['backoffLimit']}\n")
    if spec.get("ttlSecondsAfterFinished") is not None:
        w.write(0, f"TTL Seconds After Finished:\t{spec['ttlSecondsAfterFinished']}\n")
    start = parse_time_or_none(status.get("startTime"))
    done = parse_time_or_none(status.get("completionTime"))
    if start is not None:
        w.write(0, f"Start Time:\t{rfc1123z(status['startTime'])}\n")
    if done is not None:
        w.write(0, f"Completed At:\t{rfc1123z(status['completionTime'])}\n")
    if start is not None and done is not None:
        w.write(0, f"Duration:\t{human_duration(done - start)}\n")
    if spec.get("activeDeadlineSeconds") is not None:
        w.write(0, f"Active Deadline Seconds:\t{spec['activeDeadlineSeconds']}s\n")
    counts = (f"{int(status.get('active') or 0)} Active", f"{int(status.get('succeeded') or 0)}"
              " Succeeded", f"{int(status.get('failed') or 0)} Failed")
    if status.get("ready") is None:
        w.write(0, f"Pods Statuses:\t{counts[0]} / {counts[1]} / {counts[2]}\n")
    else:
        w.write(0, f"Pods Statuses:\t{counts[0]} ({int(status['ready'])} Ready) / {counts[1]} / "
                   f"{counts[2]}\n")
    if spec.get("completionMode") == "Indexed":
        w.write(0, f"Completed Indexes:\t{_indexes(status.get('completedIndexes') or '')}\n")
    describe_pod_template(w, spec.get("template") or {})
    if events is not None:
        describe_events(w, events)
    return w.text()


def _unset(value: Any, suffix: str = "") -> str:
    return "<unset>" if value is None else f"{value}{suffix}"


def describe_cronjob(cj: Obj, events: list[Obj] | None) -> str:
    """describeCronJob (kubectl 1.32's: no Time Zone line)."""
    meta, spec, status = cj.get("metadata") or {}, cj.get("spec") or {}, cj.get("status") or {}
    w = Writer()
    w.write(0, f"Name:\t{meta.get('name', '')}\n")
    w.write(0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels(w, "Labels", meta.get("labels"))
    print_annotations(w, "Annotations", meta.get("annotations"))
    w.write(0, f"Schedule:\t{spec.get('schedule', '')}\n")
    w.write(0, f"Concurrency Policy:\t{spec.get('concurrencyPolicy', '')}\n")
    suspend = spec.get("suspend")
    w.write(0, f"Suspend:\t{'<unset>' if suspend is None else ('True' if suspend else 'False')}"
               "\n")
    w.write(0, "Successful Job History Limit:\t"
               f"{_unset(spec.get('successfulJobsHistoryLimit'))}\n")
    w.write(0, f"Failed Job History Limit:\t{_unset(spec.get('failedJobsHistoryLimit'))}\n")
    w.write(0, "Starting Deadline Seconds:\t"
               f"{_unset(spec.get('startingDeadlineSeconds'), 's')}\n")
    job = (spec.get("jobTemplate") or {}).get("spec") or {}
    selector = job.get("selector")
    w.write(0, f"Selector:\t{'<unset>' if selector is None else selector_string(selector)}\n")
    w.write(0, f"Parallelism:\t{_unset(job.get('parallelism'))}\n")
    w.write(0, f"Completions:\t{_unset(job.get('completions'))}\n")
    if job.get("activeDeadlineSeconds") is not None:
        w.write(0, f"Active Deadline Seconds:\t{job['activeDeadlineSeconds']}s\n")
    describe_pod_template(w, job.get("template") or {})
    last = status.get("lastScheduleTime")
    w.write(0, f"Last Schedule Time:\t{rfc1123z(last) if last else '<unset>'}\n")
    active = [str(j.get("name", "")) for j in status.get("active") or []]
    w.write(0, f"Active Jobs:\t{', '.join(active) if active else '<none>'}\n")
    if events is not None:
        describe_events(w, events)
    return w.text()


# ---------------------------------------------------------------------------- readers


def _events(session: Session, obj: Obj, kind: str, show: bool) -> list[Obj] | None:
    if not show:
        return None
    meta = obj.get("metadata") or {}
    return search_events(session, meta.get("namespace", ""), meta.get("name", ""), kind,
                         meta.get("uid", ""))


def describe_deployment_of(session: Session, t: Target, show_events: bool) -> str:
    d: Obj = session.client.request("GET", t.path)
    events = _events(session, d, "Deployment", show_events)
    old, new = deployment_replicasets(session, d)
    return describe_deployment(d, old, [new] if new else [], events)


def pod_counts(session: Session, owner: Obj) -> tuple[int, int, int, int]:
    """getPodStatusForController: the owner's pods (by its selector and controller
    reference) by phase: running, waiting (Pending), succeeded, failed."""
    meta = owner.get("metadata") or {}
    selector = selector_string((owner.get("spec") or {}).get("selector"))
    doc = session.client.request("GET", PODS.path(meta.get("namespace", "")),
                                 params={"labelSelector": selector})
    phases = {"Running": 0, "Pending": 0, "Succeeded": 0, "Failed": 0}
    for pod in (doc or {}).get("items") or []:
        refs = (pod.get("metadata") or {}).get("ownerReferences") or []
        ctrl = next((r for r in refs if r.get("controller")), None)
        if ctrl is None or ctrl.get("uid") != meta.get("uid"):
            continue
        phase = (pod.get("status") or {}).get("phase")
        if phase in phases:
            phases[phase] += 1
    return phases["Running"], phases["Pending"], phases["Succeeded"], phases["Failed"]


def describe_replicaset_of(session: Session, t: Target, show_events: bool) -> str:
    from pykubelet.client.rest import StatusError

    rs: Obj = session.client.request("GET", t.path)
    pods: tuple[int, int, int, int] | str
    try:
        pods = pod_counts(session, rs)
    except StatusError as exc:
        pods = exc.message
    return describe_replicaset(rs, pods, _events(session, rs, "ReplicaSet", show_events))


def describe_job_of(session: Session, t: Target, show_events: bool) -> str:
    job: Obj = session.client.request("GET", t.path)
    return describe_job(job, _events(session, job, "Job", show_events))


def describe_cronjob_of(session: Session, t: Target, show_events: bool) -> str:
    cj: Obj = session.client.request("GET", t.path)
    return describe_cronjob(cj, _events(session, cj, "CronJob", show_events))


def describe_daemonset_of(session: Session, t: Target, show_events: bool) -> str:
    ds: Obj = session.client.request("GET", t.path)
    pods = pod_counts(session, ds)
    return describe_daemonset(ds, pods, _events(session, ds, "DaemonSet", show_events))


def describe_statefulset_of(session: Session, t: Target, show_events: bool) -> str:
    sts: Obj = session.client.request("GET", t.path)
    pods = pod_counts(session, sts)
    return describe_statefulset(sts, pods, _events(session, sts, "StatefulSet", show_events))


DESCRIBERS = {
    ("apps", "Deployment"): describe_deployment_of,
    ("apps", "ReplicaSet"): describe_replicaset_of,
    ("batch", "Job"): describe_job_of,
    ("batch", "CronJob"): describe_cronjob_of,
    ("apps", "DaemonSet"): describe_daemonset_of,
    ("apps", "StatefulSet"): describe_statefulset_of,
}
