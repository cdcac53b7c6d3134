"""``pykubectl create``: ``-f`` files (``apply``'s create), or one object made from flags as
kubectl's generators make it (pkg/cmd/create: ``deployment``, ``job``, ``cronjob``, and
``role``, ``clusterrole``, ``rolebinding``, ``clusterrolebinding`` from :mod:`.rbacgen`).

The generated objects are kubectl's typed objects: labels ``app=NAME`` on a Deployment, its
selector and template; each container named after its image (``reg/my_img:1`` ->
``my-img-xxxxx``) or, for a Job and a CronJob, after the object; ``restartPolicy`` Never for
a Job, ``--restart`` (default OnFailure) for a CronJob; what follows ``--`` is the first
container's command. ``-o json`` of a client dry run prints the fields in the Go structs'
order (kubectl prints its typed object), ``-o yaml`` sorted. Errors read as kubectl's: a
missing required flag first, then ``exactly one NAME is required, got N``, then the command's
own checks; a refused create is ``error: failed to create KIND: MESSAGE``.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from pykubelet.cli.kubectl import create_serviceaccount
from pykubelet.cli.kubectl.create_options import add_create_flags, post, print_created
from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.printers import (
    require_output,
)
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import Resource, StatusError

Obj = dict[str, Any]

DEPLOYMENTS = Resource("apps", "v1", "deployments")
JOBS = Resource("batch", "v1", "jobs")
CRONJOBS = Resource("batch", "v1", "cronjobs")
# generator word (and its aliases) -> canonical name
GENERATORS = {"deployment": "deployment", "deploy": "deployment", "job": "job",
              "cronjob": "cronjob", "cj": "cronjob", "role": "role",
              "clusterrole": "clusterrole", "rolebinding": "rolebinding",
              "clusterrolebinding": "clusterrolebinding"}
# canonical name -> (resource, kind string, the flags cobra requires)
SPECS: dict[str, tuple[Resource, str, tuple[str, ...]]] = {
    "deployment": (DEPLOYMENTS, "deployment.apps", ("image",)),
    "job": (JOBS, "job.batch", ()),
    "cronjob": (CRONJOBS, "cronjob.batch", ("image", "schedule")),
    "role": (Resource("rbac.authorization.k8s.io", "v1", "roles"),
             "role.rbac.authorization.k8s.io", ()),
    "clusterrole": (Resource("rbac.authorization.k8s.io", "v1", "clusterroles", False),
                    "clusterrole.rbac.authorization.k8s.io", ()),
    "rolebinding": (Resource("rbac.authorization.k8s.io", "v1", "rolebindings"),
                    "rolebinding.rbac.authorization.k8s.io", ()),
    "clusterrolebinding": (Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                                    False),
                           "clusterrolebinding.rbac.authorization.k8s.io", ("clusterrole",)),
}
RBAC_GENERATORS = frozenset({"role", "clusterrole", "rolebinding", "clusterrolebinding"})
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.String's: no vowels, no 0, 1, 3


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = ("Create resources from files or stdin, or a deployment, job or cronjob "
                     "from flags (create deployment NAME --image=I [-- COMMAND...]).")
    p.add_argument("words", nargs="*", metavar="[deployment|job|cronjob|role|clusterrole|"
                   "rolebinding|clusterrolebinding NAME]")
    p.add_argument("-f", "--filename", action="append", default=[],
                   help="file, directory or - (stdin); repeatable")
    add_create_flags(p, "keep the object as apply's last-applied annotation")
    p.add_argument("--image", action="append", default=[],
                   help="image (a deployment takes several, comma-separated or repeated)")
    p.add_argument("-r", "--replicas", type=int, default=1, help="(deployment) replicas")
    p.add_argument("--port", type=int, default=-1, help="(deployment) the containerPort")
    p.add_argument("--schedule", default="", help="(cronjob) the cron schedule")
    p.add_argument("--restart", default="", help="(cronjob) OnFailure|Never")
    p.add_argument("--from", dest="from_", default="", help="(job) cronjob/NAME to copy")
    create_serviceaccount.add_flags(p)
    p.add_argument("--verb", action="append", default=[], help="(role, clusterrole) verbs")
    p.add_argument("--resource", action="append", default=[],
                   help="(role, clusterrole) resource[.group][/subresource]")
    p.add_argument("--resource-name", action="append", default=[],
                   help="(role, clusterrole) a resource name, repeatable")
    p.add_argument("--non-resource-url", action="append", default=[],
                   help="(clusterrole) a non-resource URL")
    p.add_argument("--aggregation-rule", action="append", default=[],
                   help="(clusterrole) key=value labels of the roles to aggregate")
    p.add_argument("--role", default="", help="(rolebinding) the Role to bind")
    p.add_argument("--clusterrole", default="", help="(rolebinding, clusterrolebinding) the "
                   "ClusterRole to bind")
    p.add_argument("--user", action="append", default=[], help="(bindings) a user")
    p.add_argument("--group", action="append", default=[], help="(bindings) a group")
    p.add_argument("--serviceaccount", action="append", default=[],
                   help="(bindings) a service account, NAMESPACE:NAME")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    words: list[str] = args.words
    if not words:
        if not args.filename:
            raise CommandError("error: must specify one of -f and -k")
        from pykubelet.cli.kubectl import apply

        return apply.run("create", args, session)
    if words[0] in create_serviceaccount.GENERATORS:
        return create_serviceaccount.run(words, args, session)
    gen = GENERATORS.get(words[0])
    if gen is None:
        raise CommandError(f'error: unknown command "{words[0]}" for "pykubectl create"')
    resource, kind_string, required = SPECS[gen]
    missing = [f for f in required if not getattr(args, f)]
    if missing:
        raise CommandError("error: required flag(s) " + ", ".join(f'"{f}"' for f in missing)
                           + " not set")
    names = words[1:]
    if len(names) != 1:
        raise CommandError(f"error: exactly one NAME is required, got {len(names)}\n"
                           f"See 'pykubectl create {words[0]} -h' for help and examples")
    require_output(args.output)
    ns = session.namespace
    explicit = ns if session.explicit_namespace else ""
    command: list[str] = args.after_dash
    if gen in RBAC_GENERATORS:
        return _create_rbac(gen, names[0], explicit, resource, kind_string, args, session)
    if gen == "deployment":
        obj = deployment_for(names[0], _images(args.image), args.replicas, args.port, command,
                             explicit)
    elif gen == "cronjob":
        obj = cronjob_for(names[0], args.image[-1], args.schedule, args.restart or "OnFailure",
                          command, explicit)
    else:
        image = args.image[-1] if args.image else ""
        if bool(image) == bool(args.from_):
            raise CommandError("error: either --image or --from must be specified")
        if command and args.from_:
            raise CommandError("error: cannot specify --from and command")
        obj = (job_for(names[0], image, command, explicit) if image
               else job_from_cronjob(names[0], _cronjob(session, args.from_), explicit))
    if args.save_config:
        _annotate(obj)
    try:
        obj = post(session, resource.path(ns), obj, args)
    except StatusError as exc:
        raise CommandError(f"error: failed to create {gen}: {exc.message}") from None
    print_created(args, kind_string, obj)
    return 0


def _create_rbac(gen: str, name: str, namespace: str, resource: Resource, kind_string: str,
                 args: argparse.Namespace, session: Session) -> int:
    """create role/clusterrole/rolebinding/clusterrolebinding: the server's refusal is
    printed as kubectl prints any (no "failed to create")."""
    from pykubelet.cli.kubectl import rbacgen

    def mapper(res: str, group: str) -> tuple[str, str] | None:
        try:
            m = session.discovery.resolve_one(f"{res}.{group}" if group else res)
        except CommandError:
            return None
        return m.group, m.resource

    if gen == "role":
        obj = rbacgen.role(name, namespace, args.verb, args.resource, args.resource_name,
                           mapper)
    elif gen == "clusterrole":
        obj = rbacgen.cluster_role(name, args.verb, args.resource, args.resource_name,
                                   args.non_resource_url, args.aggregation_rule, mapper)
    else:
        obj = rbacgen.binding("RoleBinding" if gen == "rolebinding" else "ClusterRoleBinding",
                              name, namespace, args.role, args.clusterrole, args.user,
                              args.group, args.serviceaccount)
    if args.save_config:
        _annotate(obj)
    print_created(args, kind_string, post(session, resource.path(session.namespace), obj, args))
    return 0


def _images(values: list[str]) -> list[str]:
    """--image is a string slice: repeated, or comma-separated."""
    return [part for v in values for part in v.split(",") if part]


def _annotate(obj: Obj) -> None:
    """--save-config: the object itself as apply's last-applied annotation."""
    import json

    from pykubelet.cli.kubectl.apply import LAST_APPLIED

    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"
    meta = obj["metadata"]
    annotations = dict(meta.get("annotations") or {})
    annotations[LAST_APPLIED] = text
    meta["annotations"] = annotations


# ---------------------------------------------------------------------------- the objects
# Built in the Go structs' field order (ObjectMeta: name, namespace, creationTimestamp,
# labels, annotations, ownerReferences; Container: name, image, command, ports, resources),
# with the zero values kubectl's typed objects print (creationTimestamp null, {} structs).


def _meta(name: str, namespace: str, **rest: Any) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["creationTimestamp"] = None
    meta.update({k: v for k, v in rest.items() if v})
    return meta


def _container(name: str, image: str, command: list[str]) -> Obj:
    c: Obj = {"name": name, "image": image}
    if command:
        c["command"] = list(command)
    c["resources"] = {}
    return c


def container_name(image: str) -> str:
    """The container name kubectl derives from an image: its last path part without tag
    or digest; ``_`` and ``.`` become ``-`` plus a random five-letter suffix."""
    name = image.split("/")[-1].split(":")[0].split("@")[0]
    if "_" in name or "." in name:
        suffix = "".join(random.choices(ALPHANUMS, k=5))
        name = name.replace("_", "-").replace(".", "-") + "-" + suffix
    return name


def deployment_for(name: str, images: list[str], replicas: int, port: int,
                   command: list[str], namespace: str = "") -> Obj:
    """kubectl create deployment's object (createDeployment)."""
    if len(images) > 1 and command:
        raise CommandError("error: cannot specify multiple --image options and command")
    labels = {"app": name}
    containers = [_container(container_name(i), i, command) for i in images]
    if port >= 0 and containers:
        resources = containers[0].pop("resources")
        containers[0]["ports"] = [{"containerPort": port}]
        containers[0]["resources"] = resources
    return {"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": _meta(name, namespace, labels=labels),
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"creationTimestamp": None,
                                               "labels": dict(labels)},
                                  "spec": {"containers": containers}},
                     "strategy": {}},
            "status": {}}


def job_for(name: str, image: str, command: list[str], namespace: str = "") -> Obj:
    """kubectl create job's object (createJob)."""
    return {"kind": "Job", "apiVersion": "batch/v1", "metadata": _meta(name, namespace),
            "spec": {"template": {"metadata": {"creationTimestamp": None},
                                  "spec": {"containers": [_container(name, image, command)],
                                           "restartPolicy": "Never"}}},
            "status": {}}


def cronjob_for(name: str, image: str, schedule: str, restart: str, command: list[str],
                namespace: str = "") -> Obj:
    """kubectl create cronjob's object (createCronJob)."""
    pod = {"containers": [_container(name, image, command)], "restartPolicy": restart}
    return {"kind": "CronJob", "apiVersion": "batch/v1", "metadata": _meta(name, namespace),
            "spec": {"schedule": schedule,
                     "jobTemplate": {"metadata": {"name": name, "creationTimestamp": None},
                                     "spec": {"template": {
                                         "metadata": {"creationTimestamp": None},
                                         "spec": pod}}}},
            "status": {}}


def job_from_cronjob(name: str, cronjob: Obj, namespace: str = "") -> Obj:
    """kubectl create job --from=cronjob/X (createJobFromCronJob): the template's spec,
    labels and annotations, ``cronjob.kubernetes.io/instantiate: manual``, the CronJob as
    controller (without blockOwnerDeletion, as kubectl leaves it)."""
    template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    annotations = {"cronjob.kubernetes.io/instantiate": "manual",
                   **(tmeta.get("annotations") or {})}
    cmeta = cronjob.get("metadata") or {}
    owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": cmeta.get("name", ""),
             "uid": cmeta.get("uid", ""), "controller": True}
    return {"kind": "Job", "apiVersion": "batch/v1",
            "metadata": _meta(name, namespace, labels=tmeta.get("labels"),
                              annotations=annotations, ownerReferences=[owner]),
            "spec": _typed_job_spec(template.get("spec") or {}), "status": {}}


# Container fields before ``resources`` in the Go struct
_BEFORE_RESOURCES = ("name", "image", "command", "args", "workingDir", "ports", "envFrom", "env")


def _typed_job_spec(spec: Obj) -> Obj:
    """A JobSpec as a Go value prints it: the pod template's metadata (with its null
    creationTimestamp) and every container's ``resources`` struct are never omitted."""
    out = dict(spec)
    template = dict(out.get("template") or {})
    meta = {"creationTimestamp": None, **(template.get("metadata") or {})}
    pod = dict(template.get("spec") or {})
    for key in ("initContainers", "containers"):
        if key in pod:
            pod[key] = [_typed_container(c) for c in pod[key]]
    rest = {k: v for k, v in template.items() if k not in ("metadata", "spec")}
    out["template"] = {"metadata": meta, "spec": pod, **rest}
    return out


def _typed_container(c: Obj) -> Obj:
    if "resources" in c:
        return c
    out: Obj = {}
    placed = False
    for k, v in c.items():
        if not placed and k not in _BEFORE_RESOURCES:
            out["resources"] = {}
            placed = True
        out[k] = v
    if not placed:
        out["resources"] = {}
    return out


def _cronjob(session: Session, source: str) -> Obj:
    """The object --from names (resource/name, as kubectl's builder reads it)."""
    from pykubelet.cli.kubectl.resources import targets

    found = targets(session, [source], need_names=True, verb="get")
    if len(found) != 1:
        raise CommandError("error: from must be an existing cronjob")
    t = found[0]
    try:
        obj: Obj = session.client.request("GET", t.path)
    except StatusError as exc:
        raise CommandError(status_text(exc)) from None
    if (t.mapping.group, t.mapping.kind) != ("batch", "CronJob"):
        raise CommandError(f"error: unknown object type *{t.mapping.version}.{t.mapping.kind}")
    return obj

