"""``pykubectl describe pod|node`` in kubectl's layout (pkg/describe: the same sections,
labels, tab stops and column blocks, for the fields this cluster has), with the Events
section queried as kubectl queries it: events whose ``involvedObject`` names the object
(for a node, by its UID and again by its name, across namespaces). The writers and section
printers here (labels, containers, volumes, pod templates, events) are shared with the
workload describers (describe_workloads.py); the command is describing.py."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

from pykubelet.api import qos, resourcehelper
from pykubelet.api.machinery.duration import human_duration
from pykubelet.api.machinery.quantity import ZERO, Quantity
from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.cli.kubectl.printers import escape_terminal
from pykubelet.cli.kubectl.resources import Target
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.client.rest import EVENTS, LEASES, PODS, StatusError

Obj = dict[str, Any]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MIRROR = "kubernetes.io/config.mirror"
MAX_ANNOTATION_LEN = 140
ROLE_PREFIX = "node-role.kubernetes.io/"
STANDARD_RESOURCES = {"cpu", "memory", "ephemeral-storage", "storage"}


# ---------------------------------------------------------------------------- text helpers


class Writer:
    """kubectl's PrefixWriter over a tabwriter with its describe settings (no minimum
    width, padding 2): levels indent by two spaces, ``flush`` closes the column blocks."""

    def __init__(self) -> None:
        self.buf = io.StringIO()
        self.tw = TabWriter(self.buf, minwidth=0, padding=2, remember_widths=False)

    def write(self, level: int, text: str) -> None:
        self.tw.write(escape_terminal("  " * level + text))

    def line(self, text: str = "") -> None:
        self.tw.write(escape_terminal(text + "\n"))

    def flush(self) -> None:
        self.tw.flush()

    def text(self) -> str:
        self.tw.flush()
        return self.buf.getvalue()


class RawWriter(Writer):
    """kubectl's PrefixWriter straight onto a buffer, without the tabwriter (what
    ``rollout history --revision`` and ``undo --dry-run`` print: tabs stay tabs)."""

    def __init__(self) -> None:
        self.buf = io.StringIO()
        self.tw = _Passthrough(self.buf)


class _Passthrough(TabWriter):
    def __init__(self, out: io.StringIO) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.write(text)

    def flush(self) -> None:
        pass


def rfc1123z(ts: Any) -> str:
    """Go's time.RFC1123Z in the local zone (metav1.Time decodes to local time); the zero
    time for a missing one, as Go prints it."""
    t = parse_time_or_none(ts)
    if t is None:
        return "Mon, 01 Jan 0001 00:00:00 +0000"
    return t.astimezone().strftime("%a, %d %b %Y %H:%M:%S %z")


def since(ts: Any) -> str:
    t = parse_time_or_none(ts)
    if t is None:
        return "<unknown>"
    return human_duration(dt.datetime.now(dt.UTC) - t)


def print_labels(w: Writer, title: str, labels: dict[str, str] | None) -> None:
    w.write(0, f"{title}:\t")
    if not labels:
        w.line("<none>")
        return
    for i, key in enumerate(sorted(labels)):
        if i:
            w.write(0, "\t")
        w.write(0, f"{key}={labels[key]}\n")


def print_annotations(w: Writer, title: str, annotations: dict[str, str] | None) -> None:
    w.write(0, f"{title}:\t")
    keys = sorted(k for k in annotations or {} if k != LAST_APPLIED)
    if not keys:
        w.line("<none>")
        return
    assert annotations is not None
    for i, key in enumerate(keys):
        if i:
            w.write(0, "\t")
        value = str(annotations[key]).removesuffix("\n")
        if len(value) + len(key) + 2 > MAX_ANNOTATION_LEN or "\n" in value:
            w.write(0, f"{key}:\n")
            for s in value.split("\n"):
                short = s if len(s) <= MAX_ANNOTATION_LEN - 2 else (
                    s[:MAX_ANNOTATION_LEN - 2] + "...")
                w.write(0, f"\t  {short}\n")
        else:
            w.write(0, f"{key}: {value}\n")


def print_tolerations(w: Writer, title: str, tolerations: list[Obj] | None) -> None:
    w.write(0, f"{title}:\t")
    if not tolerations:
        w.line("<none>")
        return
    for i, t in enumerate(sorted(tolerations, key=lambda t: t.get("key", ""))):
        if i:
            w.write(0, "\t")
        key, value, effect = t.get("key", ""), t.get("value", ""), t.get("effect", "")
        text = key + (f"={value}" if value else "") + (f":{effect}" if effect else "")
        if t.get("operator") == "Exists" and not value:
            text += " op=Exists" if key or effect else "op=Exists"
        if t.get("tolerationSeconds") is not None:
            text += f" for {t['tolerationSeconds']}s"
        w.write(0, text + "\n")


def taint_string(t: Obj) -> str:
    key, value, effect = t.get("key", ""), t.get("value", ""), t.get("effect", "")
    if not effect:
        return f"{key}={value}:" if value else key
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def print_taints(w: Writer, title: str, taints: list[Obj] | None) -> None:
    w.write(0, f"{title}:\t")
    if not taints:
        w.line("<none>")
        return
    ordered = sorted(taints, key=lambda t: f"{t.get('effect', '')},{t.get('key', '')}")
    for i, t in enumerate(ordered):
        if i:
            w.write(0, "\t")
        w.write(0, taint_string(t) + "\n")


# ---------------------------------------------------------------------------- events


def search_events(session: Session, namespace: str, name: str, kind: str | None,
                  uid: str | None) -> list[Obj]:
    """Events about one object, by the field selector kubectl builds (sorted keys; an empty
    namespace is a real term: cluster-scoped objects' events)."""
    terms = {"involvedObject.name": name, "involvedObject.namespace": namespace}
    if kind:
        terms["involvedObject.kind"] = kind
    if uid:
        terms["involvedObject.uid"] = uid
    selector = ",".join(f"{k}={terms[k]}" for k in sorted(terms))
    params: dict[str, Any] = {"fieldSelector": selector, "limit": 500}
    items: list[Obj] = []
    while True:
        doc = session.client.request("GET", EVENTS.path(namespace), params=params) or {}
        items += doc.get("items") or []
        cont = (doc.get("metadata") or {}).get("continue")
        if not cont:
            return items
        params["continue"] = cont


def _event_time(e: Obj) -> dt.datetime:
    return parse_time_or_none(e.get("lastTimestamp")) or dt.datetime.min.replace(tzinfo=dt.UTC)


def _event_order(e: Obj) -> tuple[dt.datetime, dt.datetime, int, str]:
    """By lastTimestamp (kubectl's SortableEvents), then, since it has whole seconds, by
    when the event began: its first time, then the nanoseconds its name carries
    (``<object>.<UnixNano in hex>``, as client-go names events)."""
    first = (parse_time_or_none(e.get("eventTime")) or parse_time_or_none(e.get("firstTimestamp"))
             or dt.datetime.min.replace(tzinfo=dt.UTC))
    name = str((e.get("metadata") or {}).get("name") or "")
    suffix = name.rpartition(".")[2]
    try:
        ns = int(suffix, 16)
    except ValueError:
        ns = 0
    return _event_time(e), first, ns, name


def describe_events(w: Writer, events: list[Obj]) -> None:
    if not events:
        w.write(0, "Events:\t<none>\n")
        return
    w.flush()
    w.write(0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
    w.write(1, "----\t------\t----\t----\t-------\n")
    for e in sorted(events, key=_event_order):
        first = since(e.get("eventTime")) if e.get("eventTime") else since(
            e.get("firstTimestamp"))
        series = e.get("series")
        count = int(e.get("count") or 0)
        if series:
            interval = (f"{since(series.get('lastObservedTime'))} (x{series.get('count', 0)} "
                        f"over {first})")
        elif count > 1:
            interval = f"{since(e.get('lastTimestamp'))} (x{count} over {first})"
        else:
            interval = first
        source = (e.get("source") or {}).get("component") or e.get("reportingComponent") or ""
        w.write(1, f"{e.get('type', '')}\t{e.get('reason', '')}\t{interval}\t{source}\t"
                   f"{str(e.get('message', '')).strip()}\n")


# ---------------------------------------------------------------------------- pods


def _q(resources: Obj | None, kind: str, name: str) -> Quantity | None:
    value = ((resources or {}).get(kind) or {}).get(name)
    return None if value is None else Quantity.canonical_of(value)


def _sorted_resource_names(rl: Obj) -> list[str]:
    """kubectl's SortableResourceNames: plain name order."""
    return sorted(rl)


def describe_resources(w: Writer, resources: Obj | None, level: int) -> None:
    if not resources:
        return
    for kind, title in (("limits", "Limits"), ("requests", "Requests")):
        rl = resources.get(kind) or {}
        if rl:
            w.write(level, f"{title}:\n")
        for name in _sorted_resource_names(rl):
            w.write(level + 1, f"{name}:\t{Quantity.canonical_of(rl[name])}\n")


def _container_state(w: Writer, title: str, state: Obj) -> None:
    if "running" in state and state["running"] is not None:
        w.write(2, f"{title}:\tRunning\n")
        w.write(3, f"Started:\t{rfc1123z(state['running'].get('startedAt'))}\n")
    elif state.get("waiting") is not None and "waiting" in state:
        w.write(2, f"{title}:\tWaiting\n")
        if state["waiting"].get("reason"):
            w.write(3, f"Reason:\t{state['waiting']['reason']}\n")
    elif state.get("terminated") is not None:
        t = state["terminated"]
        w.write(2, f"{title}:\tTerminated\n")
        if t.get("reason"):
            w.write(3, f"Reason:\t{t['reason']}\n")
        if t.get("message"):
            w.write(3, f"Message:\t{t['message']}\n")
        w.write(3, f"Exit Code:\t{t.get('exitCode', 0)}\n")
        if int(t.get("signal") or 0) > 0:
            w.write(3, f"Signal:\t{t['signal']}\n")
        w.write(3, f"Started:\t{rfc1123z(t.get('startedAt'))}\n")
        w.write(3, f"Finished:\t{rfc1123z(t.get('finishedAt'))}\n")
    else:
        w.write(2, f"{title}:\tWaiting\n")


def _probe(p: Obj) -> str:
    attrs = (f"delay={p.get('initialDelaySeconds', 0)}s timeout={p.get('timeoutSeconds', 1)}s "
             f"period={p.get('periodSeconds', 10)}s #success={p.get('successThreshold', 1)} "
             f"#failure={p.get('failureThreshold', 3)}")
    if p.get("exec"):
        return f"exec [{' '.join(p['exec'].get('command') or [])}] {attrs}"
    if p.get("httpGet"):
        h = p["httpGet"]
        scheme = str(h.get("scheme") or "HTTP").lower()
        port = h.get("port", "")
        host = h.get("host", "")
        hostport = f"{host}:{port}" if str(port) else host
        return f"http-get {scheme}://{hostport}{h.get('path', '')} {attrs}"
    if p.get("tcpSocket"):
        t = p["tcpSocket"]
        return f"tcp-socket {t.get('host', '')}:{t.get('port', '')} {attrs}"
    if p.get("grpc"):
        g = p["grpc"]
        return f"grpc <pod>:{g.get('port', '')} {g.get('service', '')} {attrs}"
    return f"unknown {attrs}"


def _env_field(pod: Obj, path: str) -> str:
    meta = pod.get("metadata") or {}
    simple = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": (pod.get("spec") or {}).get(
                  "nodeName"), "spec.serviceAccountName": (pod.get("spec") or {}).get(
                  "serviceAccountName"), "status.hostIP": (pod.get("status") or {}).get(
                  "hostIP"), "status.podIP": (pod.get("status") or {}).get("podIP")}
    if path in simple:
        return str(simple[path] or "")
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((meta.get(key) or {}).get(path[len(prefix) + 2:-2], ""))
    return ""


def describe_containers(w: Writer, label: str, containers: list[Obj], statuses: list[Obj],
                        pod: Obj, space: str = "") -> None:
    """describeContainers; ``space`` indents the block (a pod template's is two spaces,
    its container names one more)."""
    by_name = {s.get("name"): s for s in statuses or []}
    w.write(0, f"{space}{label}:{' <none>' if not containers else ''}\n")
    for c in containers:
        status = by_name.get(c.get("name"))
        w.write(1, f"{' ' if space else ''}{c.get('name', '')}:\n")
        if status is not None:
            w.write(2, f"Container ID:\t{status.get('containerID', '')}\n")
        w.write(2, f"Image:\t{c.get('image', '')}\n")
        if status is not None:
            w.write(2, f"Image ID:\t{status.get('imageID', '')}\n")
        ports = c.get("ports") or []
        cp = ", ".join(f"{p.get('containerPort', 0)}/{p.get('protocol', 'TCP')}" for p in ports)
        hp = ", ".join(f"{p.get('hostPort', 0)}/{p.get('protocol', 'TCP')}" for p in ports)
        w.write(2, f"Ports:\t{cp}\n" if "," in cp else f"Port:\t{cp or '<none>'}\n")
        w.write(2, f"Host Ports:\t{hp}\n" if "," in hp else f"Host Port:\t{hp or '<none>'}\n")
        for key, title in (("command", "Command"), ("args", "Args")):
            if c.get(key):
                w.write(2, f"{title}:\n")
                for item in c[key]:
                    for s in str(item).split("\n"):
                        w.write(3, f"{s}\n")
        if status is not None:
            _container_state(w, "State", status.get("state") or {})
            if (status.get("lastState") or {}).get("terminated"):
                _container_state(w, "Last State", status["lastState"])
            w.write(2, f"Ready:\t{'True' if status.get('ready') else 'False'}\n")
            w.write(2, f"Restart Count:\t{status.get('restartCount', 0)}\n")
        describe_resources(w, c.get("resources"), 2)
        for key, title in (("livenessProbe", "Liveness"), ("readinessProbe", "Readiness"),
                           ("startupProbe", "Startup")):
            if c.get(key):
                w.write(2, f"{title}:\t{_probe(c[key])}\n")
        if c.get("envFrom"):
            w.write(2, "Environment Variables from:\n")
            for e in c["envFrom"]:
                ref, src = (e.get("configMapRef"), "ConfigMap") if e.get("configMapRef") else (
                    e.get("secretRef") or {}, "Secret")
                optional = "true" if (ref or {}).get("optional") else "false"
                prefix = f" with prefix '{e['prefix']}'" if e.get("prefix") else ""
                w.write(3, f"{(ref or {}).get('name', '')}\t{src}{prefix}\tOptional: "
                           f"{optional}\n")
        env = c.get("env") or []
        w.write(2, f"Environment:{'' if env else chr(9) + '<none>'}\n")
        for e in env:
            vf = e.get("valueFrom")
            if not vf:
                for i, s in enumerate(str(e.get("value", "")).split("\n")):
                    w.write(3, f"{e.get('name', '')}:\t{s}\n" if i == 0 else f"\t{s}\n")
            elif vf.get("fieldRef"):
                f = vf["fieldRef"]
                w.write(3, f"{e.get('name', '')}:\t{_env_field(pod, f.get('fieldPath', ''))} "
                           f"({f.get('apiVersion', 'v1')}:{f.get('fieldPath', '')})\n")
            elif vf.get("resourceFieldRef"):
                r = vf["resourceFieldRef"]
                w.write(3, f"{e.get('name', '')}:\t ({r.get('resource', '')})\n")
            elif vf.get("secretKeyRef"):
                r = vf["secretKeyRef"]
                w.write(3, f"{e.get('name', '')}:\t<set to the key '{r.get('key', '')}' in "
                           f"secret '{r.get('name', '')}'>\tOptional: "
                           f"{'true' if r.get('optional') else 'false'}\n")
            elif vf.get("configMapKeyRef"):
                r = vf["configMapKeyRef"]
                w.write(3, f"{e.get('name', '')}:\t<set to the key '{r.get('key', '')}' of "
                           f"config map '{r.get('name', '')}'>\tOptional: "
                           f"{'true' if r.get('optional') else 'false'}\n")
        mounts = sorted(c.get("volumeMounts") or [], key=lambda m: m.get("mountPath", ""))
        w.write(2, f"Mounts:{'' if mounts else chr(9) + '<none>'}\n")
        for m in mounts:
            flags = ["ro" if m.get("readOnly") else "rw"]
            if m.get("subPath"):
                flags.append(f'path="{m["subPath"]}"')
            w.write(3, f"{m.get('mountPath', '')} from {m.get('name', '')} ({','.join(flags)})\n")


def describe_volumes(w: Writer, volumes: list[Obj], space: str = "") -> None:
    if not volumes:
        w.write(0, f"{space}Volumes:\t<none>\n")
        return
    w.write(0, f"{space}Volumes:\n")
    for v in volumes:
        w.write(1, f"{' ' if space else ''}{v.get('name', '')}:\n")
        if v.get("hostPath") is not None:
            h = v["hostPath"]
            w.write(2, "Type:\tHostPath (bare host directory volume)\n"
                       f"    Path:\t{h.get('path', '')}\n"
                       f"    HostPathType:\t{h.get('type') or '<none>'}\n")
        elif v.get("emptyDir") is not None:
            e = v["emptyDir"]
            limit = e.get("sizeLimit")
            size_q = Quantity.canonical_of(limit) if limit else ZERO
            size = str(size_q) if size_q.exact > 0 else "<unset>"
            w.write(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n"
                       f"    Medium:\t{e.get('medium', '')}\n"
                       f"    SizeLimit:\t{size}\n")
        elif v.get("secret") is not None:
            s = v["secret"]
            w.write(2, "Type:\tSecret (a volume populated by a Secret)\n"
                       f"    SecretName:\t{s.get('secretName', '')}\n"
                       f"    Optional:\t{'true' if s.get('optional') else 'false'}\n")
        elif v.get("configMap") is not None:
            c = v["configMap"]
            w.write(2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n"
                       f"    Name:\t{c.get('name', '')}\n"
                       f"    Optional:\t{'true' if c.get('optional') else 'false'}\n")
        elif v.get("downwardAPI") is not None:
            w.write(2, "Type:\tDownwardAPI (a volume populated by information about the pod)\n"
                       "    Items:\n")
            for item in v["downwardAPI"].get("items") or []:
                ref = item.get("fieldRef") or {}
                if ref:
                    w.write(3, f"{ref.get('fieldPath', '')} -> {item.get('path', '')}\n")
                rref = item.get("resourceFieldRef") or {}
                if rref:
                    w.write(3, f"{rref.get('resource', '')} -> {item.get('path', '')}\n")
        elif v.get("projected") is not None:
            w.write(2, "Type:\tProjected (a volume that contains injected data from multiple "
                       "sources)\n")
            for src in v["projected"].get("sources") or []:
                if src.get("secret") is not None:
                    w.write(2, f"SecretName:\t{src['secret'].get('name', '')}\n"
                               f"    SecretOptionalName:\t{_go_ptr(src['secret'], 'optional')}\n")
                elif src.get("downwardAPI") is not None:
                    w.write(2, "DownwardAPI:\ttrue\n")
                elif src.get("configMap") is not None:
                    w.write(2, f"ConfigMapName:\t{src['configMap'].get('name', '')}\n"
                               f"    ConfigMapOptional:\t{_go_ptr(src['configMap'], 'optional')}\n")
                elif src.get("serviceAccountToken") is not None:
                    w.write(2, "TokenExpirationSeconds:\t"
                               f"{src['serviceAccountToken'].get('expirationSeconds', 3600)}\n")
        else:
            w.write(1, "<unknown>\n")


def _go_ptr(obj: Obj, key: str) -> str:
    """A *bool as Go's %v prints it: <nil> when unset."""
    if obj.get(key) is None:
        return "<nil>"
    return "true" if obj[key] else "false"


def _qos(pod: Obj) -> str:
    """status.qosClass, else the ground floor's rule (v1qos.GetPodQOS) over the spec."""
    q = (pod.get("status") or {}).get("qosClass")
    if q:
        return str(q)
    spec = pod.get("spec") or {}
    return qos.qos_class_of(
        (_quantities(r.get("requests")), _quantities(r.get("limits")))
        for r in ((c.get("resources") or {})
                  for c in (*(spec.get("initContainers") or []), *(spec.get("containers") or [])))
    )


def describe_pod(pod: Obj, events: list[Obj] | None) -> str:
    w = Writer()
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    w.write(0, f"Name:\t{meta.get('name', '')}\n")
    w.write(0, f"Namespace:\t{meta.get('namespace', '')}\n")
    if spec.get("priority") is not None:
        w.write(0, f"Priority:\t{spec['priority']}\n")
    if spec.get("priorityClassName"):
        w.write(0, f"Priority Class Name:\t{spec['priorityClassName']}\n")
    if spec.get("runtimeClassName"):
        w.write(0, f"Runtime Class Name:\t{spec['runtimeClassName']}\n")
    if spec.get("serviceAccountName"):
        w.write(0, f"Service Account:\t{spec['serviceAccountName']}\n")
    if spec.get("nodeName"):
        w.write(0, f"Node:\t{spec['nodeName']}/{status.get('hostIP', '')}\n")
    else:
        w.write(0, "Node:\t<none>\n")
    if status.get("startTime"):
        w.write(0, f"Start Time:\t{rfc1123z(status['startTime'])}\n")
    print_labels(w, "Labels", meta.get("labels"))
    print_annotations(w, "Annotations", meta.get("annotations"))
    phase = status.get("phase", "")
    if meta.get("deletionTimestamp") and phase not in ("Failed", "Succeeded"):
        w.write(0, f"Status:\tTerminating (lasts {since(meta['deletionTimestamp'])})\n")
        w.write(0, f"Termination Grace Period:\t{meta.get('deletionGracePeriodSeconds', 0)}s\n")
    else:
        w.write(0, f"Status:\t{phase}\n")
    if status.get("reason"):
        w.write(0, f"Reason:\t{status['reason']}\n")
    if status.get("message"):
        w.write(0, f"Message:\t{status['message']}\n")
    seccomp = (spec.get("securityContext") or {}).get("seccompProfile")
    if seccomp:
        w.write(0, f"SeccompProfile:\t{seccomp.get('type', '')}\n")
        if seccomp.get("type") == "Localhost":
            w.write(0, f"LocalhostProfile:\t{seccomp.get('localhostProfile', '')}\n")
    w.write(0, f"IP:\t{status.get('podIP', '')}\n")
    ips = status.get("podIPs") or []
    if not ips:
        w.write(0, "IPs:\t<none>\n")
    else:
        w.write(0, "IPs:\n")
        for ip in ips:
            w.write(1, f"IP:\t{ip.get('ip', '')}\n")
    ctrl = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    if ctrl:
        w.write(0, f"Controlled By:\t{ctrl.get('kind', '')}/{ctrl.get('name', '')}\n")
    if status.get("nominatedNodeName"):
        w.write(0, f"NominatedNodeName:\t{status['nominatedNodeName']}\n")
    if spec.get("resources"):
        w.write(0, "Resources:\n")
        describe_resources(w, spec["resources"], 1)
    if spec.get("initContainers"):
        describe_containers(w, "Init Containers", spec["initContainers"],
                            status.get("initContainerStatuses") or [], pod)
    describe_containers(w, "Containers", spec.get("containers") or [],
                        status.get("containerStatuses") or [], pod)
    if spec.get("ephemeralContainers"):
        describe_containers(w, "Ephemeral Containers", spec["ephemeralContainers"],
                            status.get("ephemeralContainerStatuses") or [], pod)
    conditions = status.get("conditions") or []
    if spec.get("readinessGates"):
        w.write(0, "Readiness Gates:\n  Type\tStatus\n")
        for g in spec["readinessGates"]:
            value = next((str(c.get("status")) for c in conditions
                          if c.get("type") == g.get("conditionType")), "<none>")
            w.write(1, f"{g.get('conditionType', '')} \t{value} \n")
    if conditions:
        w.write(0, "Conditions:\n  Type\tStatus\n")
        for c in conditions:
            w.write(1, f"{c.get('type', '')} \t{c.get('status', '')} \n")
    describe_volumes(w, spec.get("volumes") or [])
    w.write(0, f"QoS Class:\t{_qos(pod)}\n")
    print_labels(w, "Node-Selectors", spec.get("nodeSelector"))
    print_tolerations(w, "Tolerations", spec.get("tolerations"))
    tscs = sorted(spec.get("topologySpreadConstraints") or [],
                  key=lambda t: t.get("topologyKey", ""))
    if tscs:
        w.write(0, "Topology Spread Constraints:\t")
        for i, t in enumerate(tscs):
            if i:
                w.write(0, "\t")
            text = (f"{t.get('topologyKey', '')}:{t.get('whenUnsatisfiable', '')} when max "
                    f"skew {t.get('maxSkew', 0)} is exceeded")
            if t.get("labelSelector") is not None:
                text += f" for selector {format_label_selector(t['labelSelector'])}"
            w.write(0, text + "\n")
    if events is not None:
        describe_events(w, events)
    return w.text()


def describe_pod_template(w: Writer, template: Obj | None) -> None:
    """DescribePodTemplate: a workload's pod template, indented under its title."""
    w.write(0, "Pod Template:\n")
    if template is None:
        w.write(1, "<unset>")
        return
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    print_labels(w, "  Labels", meta.get("labels"))
    if meta.get("annotations"):
        print_annotations(w, "  Annotations", meta["annotations"])
    if spec.get("serviceAccountName"):
        w.write(1, f"Service Account:\t{spec['serviceAccountName']}\n")
    if spec.get("initContainers"):
        describe_containers(w, "Init Containers", spec["initContainers"], [], {}, "  ")
    describe_containers(w, "Containers", spec.get("containers") or [], [], {}, "  ")
    describe_volumes(w, spec.get("volumes") or [], "  ")
    describe_topology_spread(w, spec.get("topologySpreadConstraints") or [], "  ")
    if spec.get("priorityClassName"):
        w.write(1, f"Priority Class Name:\t{spec['priorityClassName']}\n")
    print_labels(w, "  Node-Selectors", spec.get("nodeSelector"))
    print_tolerations(w, "  Tolerations", spec.get("tolerations"))


def describe_topology_spread(w: Writer, constraints: list[Obj], space: str) -> None:
    """describeTopologySpreadConstraints (sorted by topology key)."""
    for i, c in enumerate(sorted(constraints, key=lambda c: c.get("topologyKey", ""))):
        if i == 0:
            w.write(0, f"{space}Topology Spread Constraints:\t")
        else:
            w.write(0, f"{space}\t")
        text = (f"{c.get('topologyKey', '')}:{c.get('whenUnsatisfiable', '')} when max skew "
                f"{c.get('maxSkew', 0)} is exceeded")
        if c.get("labelSelector") is not None:
            text += f" for selector {format_label_selector(c['labelSelector'])}"
        w.write(0, text + "\n")


def selector_string(sel: Obj | None) -> str:
    """metav1.LabelSelectorAsSelector(sel).String(): requirements sorted by key, values of
    a set sorted; an empty selector is "" (everything), a missing one "<none>"."""
    if sel is None:
        return "<none>"
    reqs: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in
                                   (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        key, op = e.get("key", ""), e.get("operator", "")
        values = ",".join(sorted(e.get("values") or []))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op, "")
        reqs.append((key, text))
    return ",".join(t for _, t in sorted(reqs, key=lambda r: r[0]))


def format_label_selector(sel: Obj) -> str:
    """metav1.FormatLabelSelector."""
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op = {"In": "in", "NotIn": "notin"}.get(e.get("operator", ""))
        if op:
            parts.append(f"{e.get('key', '')} {op} ({','.join(e.get('values') or [])})")
        elif e.get("operator") == "Exists":
            parts.append(str(e.get("key", "")))
        elif e.get("operator") == "DoesNotExist":
            parts.append(f"!{e.get('key', '')}")
    text = ",".join(parts)
    return text or "<none>"


# ---------------------------------------------------------------------------- nodes


def _quantities(rl: Obj | None) -> dict[str, Quantity]:
    return {name: Quantity.canonical_of(value) for name, value in (rl or {}).items()}


def _containers(spec: Obj, kind: str) -> list[dict[str, Quantity]]:
    return [_quantities((c.get("resources") or {}).get(kind)) for c in spec.get("containers") or []]


def _init_containers(spec: Obj, kind: str) -> list[tuple[dict[str, Quantity], bool]]:
    return [(_quantities((c.get("resources") or {}).get(kind)), c.get("restartPolicy") == "Always")
            for c in spec.get("initContainers") or []]


def pod_requests_and_limits(pod: Obj) -> tuple[dict[str, Quantity], dict[str, Quantity]]:
    """resourcehelper.PodRequestsAndLimits: the ground floor's one rule (PodRequests,
    PodLimits) over the pod's quantities as JSON has them."""
    spec = pod.get("spec") or {}
    pod_level = spec.get("resources") or {}
    overhead = _quantities(spec.get("overhead"))
    reqs = resourcehelper.pod_requests(
        _containers(spec, "requests"), _init_containers(spec, "requests"),
        pod_level=_quantities(pod_level.get("requests")), overhead=overhead)
    limits = resourcehelper.pod_requests(
        _containers(spec, "limits"), _init_containers(spec, "limits"),
        pod_level=_quantities(pod_level.get("limits")), overhead=overhead, limits=True)
    return reqs, limits


def _pct(part: Quantity, whole: Quantity, milli: bool) -> int:
    w = whole.milli_value() if milli else whole.value()
    if w == 0:
        return 0
    p = part.milli_value() if milli else part.value()
    return int(p / w * 100)


def describe_node_resources(w: Writer, pods: list[Obj], node: Obj) -> None:
    status = node.get("status") or {}
    alloc = {k: Quantity.canonical_of(v) for k, v in (status.get("allocatable") or
                                              status.get("capacity") or {}).items()}
    cpu_a, mem_a = alloc.get("cpu", ZERO), alloc.get("memory", ZERO)
    w.write(0, f"Non-terminated Pods:\t({len(pods)} in total)\n")
    w.write(1, "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits"
               "\tAge\n")
    w.write(1, "---------\t----\t\t------------\t----------\t---------------\t-------------"
               "\t---\n")
    for pod in pods:
        req, lim = pod_requests_and_limits(pod)
        cr, cl = req.get("cpu", ZERO), lim.get("cpu", ZERO)
        mr, ml = req.get("memory", ZERO), lim.get("memory", ZERO)
        meta = pod.get("metadata") or {}
        w.write(1, f"{meta.get('namespace', '')}\t{meta.get('name', '')}\t\t"
                   f"{cr} ({_pct(cr, cpu_a, True)}%)\t{cl} ({_pct(cl, cpu_a, True)}%)\t"
                   f"{mr} ({_pct(mr, mem_a, False)}%)\t{ml} ({_pct(ml, mem_a, False)}%)\t"
                   f"{since(meta.get('creationTimestamp'))}\n")
    w.write(0, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., "
               "overcommitted.)\n")
    w.write(1, "Resource\tRequests\tLimits\n")
    w.write(1, "--------\t--------\t------\n")
    reqs: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    for pod in pods:
        pod_reqs, pod_limits = pod_requests_and_limits(pod)
        for name, q in pod_reqs.items():
            reqs[name] = reqs[name] + q if name in reqs else q
        for name, q in pod_limits.items():
            limits[name] = limits[name] + q if name in limits else q
    for name, milli in (("cpu", True), ("memory", False), ("ephemeral-storage", False)):
        whole = alloc.get(name, ZERO)
        used, cap = reqs.get(name, ZERO), limits.get(name, ZERO)
        w.write(1, f"{name}\t{used} ({_pct(used, whole, milli)}%)\t{cap} "
                   f"({_pct(cap, whole, milli)}%)\n")
    huge = sorted(n for n in alloc if n.startswith("hugepages-"))
    ext = sorted(n for n in alloc if not n.startswith("hugepages-") and n != "pods"
                 and n not in STANDARD_RESOURCES and "/" in n)
    for name in huge:
        whole = alloc[name]
        used, cap = reqs.get(name, ZERO), limits.get(name, ZERO)
        w.write(1, f"{name}\t{used} ({_pct(used, whole, False)}%)\t{cap} "
                   f"({_pct(cap, whole, False)}%)\n")
    for name in ext:
        w.write(1, f"{name}\t{reqs.get(name, ZERO)}\t{limits.get(name, ZERO)}\n")


def node_roles(labels: dict[str, str]) -> list[str]:
    roles = set()
    for k, v in labels.items():
        if k.startswith(ROLE_PREFIX) and k[len(ROLE_PREFIX):]:
            roles.add(k[len(ROLE_PREFIX):])
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return sorted(roles)


def describe_node(node: Obj, pods: list[Obj] | None, events: list[Obj] | None,
                  lease: Obj | None, lease_error: str) -> str:
    w = Writer()
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    w.write(0, f"Name:\t{meta.get('name', '')}\n")
    roles = node_roles(meta.get("labels") or {})
    w.write(0, f"Roles:\t{','.join(roles) if roles else '<none>'}\n")
    print_labels(w, "Labels", meta.get("labels"))
    print_annotations(w, "Annotations", meta.get("annotations"))
    w.write(0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    print_taints(w, "Taints", spec.get("taints"))
    w.write(0, f"Unschedulable:\t{'true' if spec.get('unschedulable') else 'false'}\n")
    if lease is not None:
        lspec = lease.get("spec") or {}
        w.write(0, "Lease:\n")
        w.write(1, f"HolderIdentity:\t{lspec.get('holderIdentity') or '<unset>'}\n")
        w.write(1, "AcquireTime:\t" + (rfc1123z(lspec['acquireTime'])
                                       if lspec.get("acquireTime") else "<unset>") + "\n")
        w.write(1, "RenewTime:\t" + (rfc1123z(lspec['renewTime'])
                                     if lspec.get("renewTime") else "<unset>") + "\n")
    else:
        w.write(0, f"Lease:\tFailed to get lease: {lease_error}\n")
    conditions = status.get("conditions") or []
    if conditions:
        w.write(0, "Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason"
                   "\tMessage\n")
        w.write(1, "----\t------\t-----------------\t------------------\t------\t-------\n")
        for c in conditions:
            w.write(1, f"{c.get('type', '')} \t{c.get('status', '')} \t"
                       f"{rfc1123z(c.get('lastHeartbeatTime'))} \t"
                       f"{rfc1123z(c.get('lastTransitionTime'))} \t{c.get('reason', '')} \t"
                       f"{c.get('message', '')}\n")
    w.write(0, "Addresses:\n")
    for a in status.get("addresses") or []:
        w.write(1, f"{a.get('type', '')}:\t{a.get('address', '')}\n")
    for key, title in (("capacity", "Capacity"), ("allocatable", "Allocatable")):
        rl = status.get(key) or {}
        if rl:
            w.write(0, f"{title}:\n")
            for name in sorted(rl):
                w.write(0, f"  {name}:\t{Quantity.canonical_of(rl[name])}\n")
    info = status.get("nodeInfo") or {}
    w.write(0, "System Info:\n")
    for key, title in (("machineID", "Machine ID"), ("systemUUID", "System UUID"),
                       ("bootID", "Boot ID"), ("kernelVersion", "Kernel Version"),
                       ("osImage", "OS Image"), ("operatingSystem", "Operating System"),
                       ("architecture", "Architecture"),
                       ("containerRuntimeVersion", "Container Runtime Version"),
                       ("kubeletVersion", "Kubelet Version"),
                       ("kubeProxyVersion", "Kube-Proxy Version")):
        w.write(0, f"  {title}:\t{info.get(key, '')}\n")
    if spec.get("podCIDR"):
        w.write(0, f"PodCIDR:\t{spec['podCIDR']}\n")
    if spec.get("podCIDRs"):
        w.write(0, f"PodCIDRs:\t{','.join(spec['podCIDRs'])}\n")
    if spec.get("providerID"):
        w.write(0, f"ProviderID:\t{spec['providerID']}\n")
    if pods is not None:
        describe_node_resources(w, pods, node)
    else:
        w.write(0, "Pods:\tnot authorized\n")
    if events is not None:
        describe_events(w, events)
    return w.text()


# ---------------------------------------------------------------------------- command


def describe_pod_of(session: Session, t: Target, show_events: bool) -> str:
    pod = session.client.request("GET", t.path)
    events = None
    if show_events:
        meta = pod.get("metadata") or {}
        uid = (meta.get("annotations") or {}).get(MIRROR) or meta.get("uid", "")
        events = search_events(session, meta.get("namespace", ""), meta.get("name", ""),
                               None, uid)
    return describe_pod(pod, events)


def describe_node_of(session: Session, t: Target, show_events: bool) -> str:
    client = session.client
    node = client.request("GET", t.path)
    name = node["metadata"]["name"]
    selector = f"spec.nodeName={name},status.phase!=Succeeded,status.phase!=Failed"
    pods: list[Obj] | None = []
    try:
        params: dict[str, Any] = {"fieldSelector": selector, "limit": 500}
        while True:
            doc = client.request("GET", PODS.path(), params=params) or {}
            assert pods is not None
            pods += doc.get("items") or []
            cont = (doc.get("metadata") or {}).get("continue")
            if not cont:
                break
            params["continue"] = cont
    except StatusError as exc:
        if exc.code != 403:
            raise
        pods = None
    events = None
    if show_events:
        uid = node["metadata"].get("uid", "")
        events = search_events(session, "", name, "Node", uid)
        events += search_events(session, "", name, "Node", name)
    lease, lease_error = None, ""
    try:
        lease = client.request("GET", LEASES.path("kube-node-lease", name))
    except StatusError as exc:
        lease_error = exc.message
    return describe_node(node, pods, events, lease, lease_error)
