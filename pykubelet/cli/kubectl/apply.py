"""``pykubectl apply -f`` and ``create -f`` (kubectl's client-side apply and create).

``create`` POSTs each object (``pod/web created``). ``apply`` keeps the manifest it applied
in the ``kubectl.kubernetes.io/last-applied-configuration`` annotation: an object that does
not exist is created with it; one that does is patched with the three-way strategic merge
patch from that annotation, the new manifest and the live object (``configured``), or left
alone when the patch is empty (``unchanged``). Conflicts re-read and retry, as kubectl does.
Errors name the file the object came from, and the other objects are still tried.

``apply --server-side`` sends each manifest whole as an apply patch (the server merges it
and keeps who owns which field in managedFields), under the field manager ``kubectl``;
a conflict with another manager is kubectl's error with its advice, and
``--force-conflicts`` takes the fields over.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from typing import Any

from pykubelet.cli.kubectl.create_options import add_create_flags, post, write_params
from pykubelet.cli.kubectl.discovery import Mapping
from pykubelet.cli.kubectl.errors import CommandError, status_text, with_source
from pykubelet.cli.kubectl.manifests import Manifest, read_all
from pykubelet.cli.kubectl.printers import (
    compact_json,
    dry_run_suffix,
    print_objects,
    require_output,
)
from pykubelet.cli.kubectl.session import Session
from pykubelet.client.rest import STRATEGIC_MERGE_PATCH, StatusError

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_PATCH_RETRY = 5
APPLY_PATCH = "application/apply-patch+yaml"
SERVER_SIDE_MANAGER = "kubectl"  # FieldManagerServerSideApply
CONFLICT_HELP = """Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts"""
# the kinds whose patch strategies the client knows (the rest get JSON merge patches)
BUILTIN_GROUPS = ("", "coordination.k8s.io", "scheduling.k8s.io", "policy", "apps", "batch",
                  "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io")
NO_LAST_APPLIED = (
    "Warning: resource {res} is missing the " + LAST_APPLIED + " annotation which is "
    "required by pykubectl apply. pykubectl apply should only be used on resources created "
    "declaratively by either pykubectl create --save-config or pykubectl apply. The missing "
    "annotation will be patched automatically.")


def register(name: str, p: argparse.ArgumentParser) -> None:
    if name == "apply":
        p.description = ("Apply a configuration to resources: create what is missing, patch "
                         "what changed since the last apply.")
    else:
        p.description = "Create resources from files or stdin."
    p.add_argument("-f", "--filename", action="append", default=[], required=True,
                   help="file, directory or - (stdin); repeatable")
    add_create_flags(p, "(create) keep the manifest as apply's last-applied annotation")
    if name == "apply":
        p.add_argument("--server-side", action="store_true",
                       help="let the server merge the manifest and track field owners")
        p.add_argument("--force-conflicts", action="store_true",
                       help="(--server-side) take fields other managers own")


def _check_server_side_flags(args: argparse.Namespace) -> None:
    """kubectl apply's Validate for the server-side flags."""
    if args.force_conflicts and not args.server_side:
        raise CommandError("error: --force-conflicts only works with --server-side")
    if args.server_side and args.dry_run == "client":
        raise CommandError("error: --dry-run=client doesn't work with --server-side (did "
                           "you mean --dry-run=server instead?)")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    require_output(args.output)
    server_side = name == "apply" and args.server_side
    if name == "apply":
        _check_server_side_flags(args)
    manifests = read_all(args.filename, args.recursive)
    if not manifests:
        raise CommandError(f"error: no objects passed to {name}")
    failed = False
    for m in manifests:
        try:
            mapping = session.discovery.for_kind(m.api_version, m.kind)
            namespace = _namespace(session, m, mapping)
            if server_side:
                obj, verb = _server_side_apply_one(session, args, m, mapping, namespace)
            elif name == "apply":
                obj, verb = _apply_one(session, args, m, mapping, namespace)
            else:
                obj, verb = _create_one(session, args, m, mapping, namespace)
        except StatusError as exc:
            _report(status_text(exc))
            failed = True
            continue
        except CommandError as exc:
            _report(str(exc))
            failed = True
            continue
        _print(args, mapping, obj, verb)
    return 1 if failed else 0


def _report(line: str) -> None:
    sys.stdout.flush()
    print(line, file=sys.stderr)


def _print(args: argparse.Namespace, mapping: Mapping, obj: dict[str, Any], verb: str) -> None:
    dry = dry_run_suffix(args.dry_run)
    if args.output in ("json", "yaml"):
        print_objects(sys.stdout, args.output, obj)
    elif args.output == "name":
        print(f"{mapping.kind_string}/{(obj.get('metadata') or {}).get('name', '')}")
    else:
        print(f"{mapping.kind_string}/{(obj.get('metadata') or {}).get('name', '')} "
              f"{verb}{dry}")
    sys.stdout.flush()


def _namespace(session: Session, m: Manifest, mapping: Mapping) -> str:
    """The object's namespace: its own, else -n, else the context's; both and different is
    an error (kubectl's rule for an explicit -n)."""
    if not mapping.namespaced:
        return ""
    own = m.namespace
    if own and session.explicit_namespace and own != session.namespace:
        raise CommandError(
            f'error: the namespace from the provided object "{own}" does not match the '
            f'namespace "{session.namespace}". You must pass \'--namespace={own}\' to perform '
            "this operation.")
    ns = own or session.namespace
    m.obj.setdefault("metadata", {})["namespace"] = ns
    return ns


# ---------------------------------------------------------------------------- create


def _create_one(session: Session, args: argparse.Namespace, m: Manifest, mapping: Mapping,
                namespace: str) -> tuple[dict[str, Any], str]:
    obj = copy.deepcopy(m.obj)
    meta = obj.setdefault("metadata", {})
    meta.pop("resourceVersion", None)
    if args.save_config:
        _set_annotation(obj, _serialized(m.obj))
    try:
        created = post(session, mapping.rest.path(namespace), obj, args)
    except StatusError as exc:
        raise with_source(exc, "creating", m.source) from None
    return created, "created"


# ---------------------------------------------------------------------------- apply


def _serialized(obj: dict[str, Any]) -> str:
    """The manifest as the annotation keeps it: compact JSON, sorted keys, without the
    annotation itself (an empty annotations map stays, as kubectl leaves it)."""
    clean = copy.deepcopy(obj)
    annotations = clean.setdefault("metadata", {}).get("annotations") or {}
    annotations = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    clean["metadata"]["annotations"] = annotations
    return compact_json(clean) + "\n"


def _set_annotation(obj: dict[str, Any], value: str) -> None:
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations[LAST_APPLIED] = value
    meta["annotations"] = annotations


def _modified(obj: dict[str, Any]) -> dict[str, Any]:
    """The manifest with its last-applied annotation set (what the patch aims at)."""
    out = copy.deepcopy(obj)
    _set_annotation(out, _serialized(obj))
    return out


def _prune_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value


def _apply_one(session: Session, args: argparse.Namespace, m: Manifest, mapping: Mapping,
               namespace: str) -> tuple[dict[str, Any], str]:
    if not m.name:
        generate = (m.obj.get("metadata") or {}).get("generateName")
        if generate:
            raise CommandError(f"error: from {generate}: cannot use generate name with apply")
        raise CommandError(f'error: error when retrieving current configuration of "{m.source}":'
                           " resource name may not be empty")
    client = session.client
    path = mapping.rest.path(namespace, m.name)
    modified = _modified(m.obj)
    try:
        current = client.request("GET", path)
    except StatusError as exc:
        if not exc.not_found:
            raise with_source(exc, "retrieving current configuration of", m.source) from None
        created = _prune_nulls(modified)
        if args.dry_run == "client":
            return created, "created"
        try:
            obj = client.request("POST", mapping.rest.path(namespace),
                                 params=write_params(args, "kubectl-client-side-apply"),
                                 body=created)
        except StatusError as exc2:
            raise with_source(exc2, "creating", m.source) from None
        return obj, "created"
    if args.dry_run == "client":
        return modified, "configured"
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED not in annotations:
        _report(NO_LAST_APPLIED.format(res=f"{mapping.resource_string}/{m.name}"))
    from pykubelet.cli.kubectl.threeway import three_way_patch

    strategic = mapping.group in BUILTIN_GROUPS
    content_type = STRATEGIC_MERGE_PATCH if strategic else "application/merge-patch+json"
    for attempt in range(MAX_PATCH_RETRY + 1):
        original = _original(current)
        patch = three_way_patch(original, modified, current, strategic=strategic)
        if not patch:
            return current, "unchanged"
        try:
            params = write_params(args, "kubectl-client-side-apply")
            obj = client.request("PATCH", path, params=params, body=patch,
                                 content_type=content_type)
            return obj, "configured"
        except StatusError as exc:
            if not exc.conflict or attempt == MAX_PATCH_RETRY:
                raise with_source(exc, "applying patch to", m.source) from None
            if attempt >= 3:
                time.sleep(1.0)
            current = client.request("GET", path)
    raise AssertionError("unreachable")


def _server_side_apply_one(session: Session, args: argparse.Namespace, m: Manifest,
                           mapping: Mapping, namespace: str) -> tuple[dict[str, Any], str]:
    """The manifest as an apply patch (it creates what is missing): the server's merge."""
    if not m.name:
        raise CommandError(f'error: error when retrieving current configuration of "{m.source}":'
                           " resource name may not be empty")
    params = write_params(args, SERVER_SIDE_MANAGER)
    params["force"] = "true" if args.force_conflicts else "false"
    try:
        obj = session.client.request("PATCH", mapping.rest.path(namespace, m.name),
                                     params=params, body=m.obj, content_type=APPLY_PATCH)
    except StatusError as exc:
        if exc.conflict:
            raise CommandError(f"error: {exc.message}\n{CONFLICT_HELP}") from None
        raise
    return obj, "serverside-applied"


def _original(current: dict[str, Any]) -> dict[str, Any] | None:
    import json

    text = ((current.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
