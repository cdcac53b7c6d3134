"""``pykubectl cordon|uncordon|drain NODE`` (kubectl's drain package).

Cordon patches ``spec.unschedulable`` (strategic merge, ``null`` to uncordon) unless it is
already so. Drain cordons, then lists the node's pods and sorts them as kubectl's filters
do (mirror pods skipped; DaemonSet pods refused unless ``--ignore-daemonsets``; pods with
emptyDir refused unless ``--delete-emptydir-data``; pods without a controller refused unless
``--force``; finished pods always go), evicts each through ``pods/eviction`` (retrying
every 5 s while a PodDisruptionBudget answers 429), waits until each is gone and prints
``node/N drained``; ``--timeout`` bounds the whole drain.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.timeouts import parse_duration
from pykubelet.client.rest import NODES, PODS, STRATEGIC_MERGE_PATCH, StatusError

Obj = dict[str, Any]
MIRROR = "kubernetes.io/config.mirror"
DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "cannot delete Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
RETRY_429 = 5.0


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = {"cordon": "Mark node as unschedulable.",
                     "uncordon": "Mark node as schedulable.",
                     "drain": "Drain node in preparation for maintenance."}[name]
    p.add_argument("nodes", nargs="*", metavar="NODE")
    p.add_argument("-l", "--selector", default="", help="nodes by label selector")
    if name != "drain":
        return
    p.add_argument("--force", action="store_true",
                   help="also evict pods that declare no controller")
    p.add_argument("--ignore-daemonsets", action="store_true",
                   help="leave DaemonSet-managed pods alone")
    p.add_argument("--delete-emptydir-data", action="store_true",
                   help="also evict pods using emptyDir (their data is lost)")
    p.add_argument("--grace-period", type=int, default=-1,
                   help="seconds each pod gets to stop (-1: its own)")
    p.add_argument("--timeout", default="0s", help="give up after this long (0: never)")
    p.add_argument("--pod-selector", default="", help="only pods matching this selector")
    p.add_argument("--disable-eviction", action="store_true",
                   help="delete pods instead of evicting them (ignores disruption budgets)")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    nodes = _nodes(session, args)
    desired = name != "uncordon"
    failed = False
    for node in nodes:
        try:
            cordon(session, node, desired)
        except StatusError as exc:
            print(f'error: unable to {"cordon" if desired else "uncordon"} node '
                  f'"{node["metadata"]["name"]}": {exc.message}', file=sys.stderr)
            failed = True
    if name != "drain":
        return 1 if failed else 0
    drainer = Drainer(session, args)
    remaining: list[str] = []
    errors: list[str] = []
    for node in nodes:
        n = node["metadata"]["name"]
        errs = drainer.drain(n)
        if not errs:
            print(f"node/{n} drained", flush=True)
            continue
        print(f'error: unable to drain node "{n}" due to error: {_aggregate(errs)}, '
              "continuing command...", file=sys.stderr)
        remaining.append(n)
        errors += errs
    if remaining:
        print("There are pending nodes to be drained:", file=sys.stderr)
        for n in remaining:
            print(f" {n}", file=sys.stderr)
    if errors:
        # kubectl prints an aggregate's errors one a line, without the "error: " prefix
        raise CommandError("\n".join(errors))
    return 0


def _aggregate(errs: list[str]) -> str:
    """Go's utilerrors.Aggregate text."""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


def _nodes(session: Session, args: argparse.Namespace) -> list[Obj]:
    client = session.client
    if args.selector:
        if args.nodes:
            raise CommandError("error: cannot specify both a node name and a --selector "
                               "option")
        items = client.request("GET", NODES.path(),
                               params={"labelSelector": args.selector}).get("items") or []
        if not items:
            raise CommandError("error: No resources found")
        return list(items)
    if not args.nodes:
        raise CommandError("error: USAGE: a node name is required (see 'pykubectl "
                           "drain --help')")
    return [client.request("GET", NODES.path(name=n)) for n in args.nodes]


def cordon(session: Session, node: Obj, desired: bool) -> None:
    """Set spec.unschedulable as kubectl's CordonHelper does; prints what happened."""
    name = node["metadata"]["name"]
    now = bool((node.get("spec") or {}).get("unschedulable"))
    word = "cordoned" if desired else "uncordoned"
    if now == desired:
        print(f"node/{name} already {word}", flush=True)
        return
    patch = {"spec": {"unschedulable": True if desired else None}}
    session.client.request("PATCH", NODES.path(name=name), body=patch,
                           content_type=STRATEGIC_MERGE_PATCH)
    print(f"node/{name} {word}", flush=True)


@dataclass
class Verdict:
    delete: bool
    kind: str = "Okay"  # Okay | Skip | Warning | Error
    message: str = ""


def _controller(pod: Obj) -> Obj | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class Drainer:
    """One drain's options and its pod filters (kubectl's drain.Helper)."""

    def __init__(self, session: Session, args: argparse.Namespace) -> None:
        self.session = session
        self.args = args
        self.timeout = parse_duration(args.timeout, "--timeout")
        self.out_lock = threading.Lock()

    # ------------------------------------------------------------------ filters
    def _daemonset(self, pod: Obj) -> Verdict:
        ref = _controller(pod)
        if ref is None or ref.get("kind") != "DaemonSet" or _finished(pod):
            return Verdict(True)
        if not self.args.ignore_daemonsets:
            return Verdict(False, "Error", DAEMONSET_FATAL)
        return Verdict(False, "Warning", DAEMONSET_WARNING)

    def _mirror(self, pod: Obj) -> Verdict:
        if MIRROR in ((pod.get("metadata") or {}).get("annotations") or {}):
            return Verdict(False, "Skip")
        return Verdict(True)

    def _local_storage(self, pod: Obj) -> Verdict:
        volumes = (pod.get("spec") or {}).get("volumes") or []
        if not any("emptyDir" in v for v in volumes) or _finished(pod):
            return Verdict(True)
        if not self.args.delete_emptydir_data:
            return Verdict(False, "Error", LOCAL_STORAGE_FATAL)
        return Verdict(True, "Warning", LOCAL_STORAGE_WARNING)

    def _unreplicated(self, pod: Obj) -> Verdict:
        if _finished(pod) or _controller(pod) is not None:
            return Verdict(True)
        if self.args.force:
            return Verdict(True, "Warning", UNMANAGED_WARNING)
        return Verdict(False, "Error", UNMANAGED_FATAL)

    def pods_for_deletion(self, node: str) -> tuple[list[Obj], list[str], list[str]]:
        """(pods to evict, warnings, errors) as kubectl's GetPodsForDeletion."""
        params: dict[str, Any] = {"fieldSelector": f"spec.nodeName={node}"}
        if self.args.pod_selector:
            params["labelSelector"] = self.args.pod_selector
        items = self.session.client.request("GET", PODS.path(), params=params).get("items") or []
        filters: list[Callable[[Obj], Verdict]] = [self._daemonset, self._mirror,
                                                   self._local_storage, self._unreplicated]
        keep: list[Obj] = []
        warnings: dict[str, list[str]] = {}
        errors: dict[str, list[str]] = {}
        for pod in items:
            verdict = Verdict(True)
            for f in filters:
                verdict = f(pod)
                if not verdict.delete:
                    break
            meta = pod.get("metadata") or {}
            ident = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            if verdict.kind == "Warning":
                warnings.setdefault(verdict.message, []).append(ident)
            elif verdict.kind == "Error":
                errors.setdefault(verdict.message or "unexpected error", []).append(ident)
            if verdict.delete:
                keep.append(pod)
        return (keep, [f"{k}: {', '.join(v)}" for k, v in warnings.items()],
                [f"cannot delete {k}: {', '.join(v)}" for k, v in errors.items()])

    # ------------------------------------------------------------------ evictions
    def drain(self, node: str) -> list[str]:
        """Evict the node's pods; the errors (none when drained)."""
        pods, warnings, errors = self.pods_for_deletion(node)
        if errors:
            return errors
        if warnings:
            print("Warning: " + "; ".join(warnings), file=sys.stderr, flush=True)
        if not pods:
            return []
        deadline = time.monotonic() + self.timeout if self.timeout else None
        results: list[str | None] = [None] * len(pods)
        threads = [threading.Thread(target=self._evict_and_wait,
                                    args=(pod, deadline, results, i), daemon=True)
                   for i, pod in enumerate(pods)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failures = [r for r in results if r]
        if failures:
            pending, _, _ = self.pods_for_deletion(node)
            if pending:
                with self.out_lock:
                    print(f'There are pending pods in node "{node}" when an error occurred: '
                          f"{_aggregate(failures)}", file=sys.stderr)
                    for p in pending:
                        print(f"pod/{p['metadata']['name']}", file=sys.stderr)
            return failures
        return []

    def _say(self, text: str, err: bool = False) -> None:
        with self.out_lock:
            print(text, file=sys.stderr if err else sys.stdout, flush=True)

    def _evict_and_wait(self, pod: Obj, deadline: float | None, results: list[str | None],
                        index: int) -> None:
        meta = pod["metadata"]
        name, ns, uid = meta["name"], meta.get("namespace", ""), meta.get("uid", "")
        client = self.session.client
        options: Obj = {}
        if self.args.grace_period >= 0:
            options["gracePeriodSeconds"] = self.args.grace_period
        while True:
            if not self.args.disable_eviction:
                self._say(f"evicting pod {ns}/{name}")
            if deadline is not None and time.monotonic() > deadline:
                results[index] = (f'error when evicting pods/"{name}" -n "{ns}": global '
                                  f"timeout reached: {_go_duration(self.timeout)}")
                return
            try:
                if self.args.disable_eviction:
                    client.request("DELETE", PODS.path(ns, name),
                                   body={"kind": "DeleteOptions", "apiVersion": "v1", **options})
                else:
                    client.request("POST", PODS.path(ns, name, "eviction"), body={
                        "apiVersion": "policy/v1", "kind": "Eviction",
                        "metadata": {"name": name, "namespace": ns},
                        "deleteOptions": options})
                break
            except StatusError as exc:
                if exc.not_found:
                    return
                if exc.code == 429:
                    self._say(f'error when evicting pods/"{name}" -n "{ns}" (will retry after '
                              f"5s): {exc.message}", err=True)
                    time.sleep(RETRY_429)
                    continue
                results[index] = f'error when evicting pods/"{name}" -n "{ns}": {exc.message}'
                return
        verb = "deleted" if self.args.disable_eviction else "evicted"
        while True:
            try:
                now = client.request("GET", PODS.path(ns, name))
                gone = (now.get("metadata") or {}).get("uid") != uid
            except StatusError as exc:
                if not exc.not_found:
                    results[index] = (f'error when waiting for pod "{name}" in namespace '
                                      f'"{ns}" to terminate: {status_text(exc)}')
                    return
                gone = True
            if gone:
                self._say(f"pod/{name} {verb}")
                return
            if deadline is not None and time.monotonic() > deadline:
                results[index] = (f'error when waiting for pod "{name}" in namespace "{ns}" '
                                  f"to terminate: global timeout reached: "
                                  f"{_go_duration(self.timeout)}")
                return
            time.sleep(1.0)


def _go_duration(seconds: float) -> str:
    """A duration as Go prints it: 5s, 1m30s, 1h0m0s."""
    s = int(seconds)
    if seconds != s:
        return f"{seconds:g}s"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h}h{m}m{sec}s"
    if m:
        return f"{m}m{sec}s"
    return f"{sec}s"
