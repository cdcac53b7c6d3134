"""``pykubectl wait --for=condition=C[=V]|delete|create`` (kubectl's wait): read each
object, and unless it already satisfies the condition, watch it by name from that read's
resourceVersion until it does or the shared ``--timeout`` (30s) runs out. Also the deletion
wait behind ``delete --wait``."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError, status_text
from pykubelet.cli.kubectl.resources import Target, targets
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.timeouts import parse_duration
from pykubelet.client.rest import ClientError, StatusError

Obj = dict[str, Any]


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Wait for a specific condition on one or many resources."
    p.add_argument("words", nargs="*", metavar="TYPE[/NAME] [NAME...]")
    p.add_argument("--for", dest="for_", default="",
                   help="condition=NAME[=VALUE], delete or create")
    p.add_argument("--timeout", default="30s", help="how long to wait (0: check once)")
    p.add_argument("-l", "--selector", default="", help="label selector")
    p.add_argument("--field-selector", default="", help="field selector")
    p.add_argument("--all", action="store_true", help="every object of the type")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="across namespaces")


def condition_met(obj: Obj, name: str, value: str) -> bool:
    """kubectl's ConditionalWait: the condition's status equals the value (any case), and
    it was observed for the object's current generation."""
    status = obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    for c in status.get("conditions") or []:
        if str(c.get("type", "")).lower() != name.lower():
            continue
        observed = c.get("observedGeneration", status.get("observedGeneration"))
        if generation and observed is not None and observed < generation:
            return False
        return str(c.get("status", "")).lower() == value.lower()
    return False


def _parse_for(text: str) -> tuple[str, str, str]:
    low = text.lower()
    if low in ("delete", "create"):
        return low, "", ""
    if text.startswith("condition="):
        cond = text[len("condition="):]
        name, _, value = cond.partition("=")
        return "condition", name, value or "true"
    raise CommandError(f'error: unrecognized condition: "{text}"')


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    mode, cond, value = _parse_for(args.for_)
    timeout = parse_duration(args.timeout, "--timeout")
    deadline = time.monotonic() + timeout
    if mode == "create":
        _wait_created(session, args, deadline)
        if timeout == 0:
            deadline = time.monotonic()
    found = _objects(session, args, ignore_missing=mode == "delete")
    if not found and mode != "delete":
        raise CommandError("error: no matching resources found")
    errors: list[str] = []
    for t, obj in found:
        label = f"{t.mapping.resource_string}/{t.name}"
        try:
            if mode == "delete":
                ok = wait_deleted(session, t, (obj.get("metadata") or {}).get("uid", ""),
                                  deadline, timeout == 0)
            else:
                ok = wait_until(session, t, obj,
                                lambda o: condition_met(o, cond, value), deadline, timeout == 0)
        except StatusError as exc:
            errors.append(status_text(exc))
            continue
        if ok:
            print(f"{t.mapping.kind_string}/{t.name} condition met", flush=True)
        elif timeout == 0:
            errors.append(f"condition not met for {label}")
        else:
            errors.append(f"timed out waiting for the condition on {label}")
    if len(errors) == 1:
        raise CommandError(errors[0] if errors[0].startswith(("error: ", "Error from")) else
                           f"error: {errors[0]}")
    if errors:
        raise CommandError("\n".join(errors))
    return 0


def _objects(session: Session, args: argparse.Namespace,
             ignore_missing: bool) -> list[tuple[Target, Obj]]:
    words: list[str] = args.words
    has_names = any("/" in w for w in words) or len(words) > 1
    if not has_names and not (args.all or args.selector or args.field_selector):
        raise CommandError("error: resource(s) were provided, but no name was specified")
    out: list[tuple[Target, Obj]] = []
    for t in targets(session, words, all_namespaces=args.all_namespaces, verb="wait"):
        if t.name:
            try:
                out.append((t, session.client.request("GET", t.path)))
            except StatusError as exc:
                if not (exc.not_found and ignore_missing):
                    raise
            continue
        params = {"labelSelector": args.selector or None,
                  "fieldSelector": args.field_selector or None}
        items = (session.client.request("GET", t.path, params=params) or {}).get("items") or []
        for item in items:
            meta = item.get("metadata") or {}
            out.append((Target(t.mapping, meta.get("name", ""), meta.get("namespace", "")),
                        item))
    return out


def _wait_created(session: Session, args: argparse.Namespace, deadline: float) -> None:
    while True:
        try:
            if _objects(session, args, ignore_missing=False):
                return
        except StatusError as exc:
            if not exc.not_found:
                raise
        if time.monotonic() >= deadline:
            raise CommandError("error: timed out waiting for the condition")
        time.sleep(0.5)


def wait_until(session: Session, t: Target, obj: Obj, met: Callable[[Obj], bool],
               deadline: float, once: bool = False) -> bool:
    """Until ``met(obj)`` holds for the object named by ``t`` (watched by name), or the
    deadline passes; a deleted object is waited for (it may come back)."""
    if met(obj):
        return True
    if once:
        return False

    def check() -> tuple[bool, str]:
        now = _get_or_none(session, t)
        return (False, "") if now is None else (met(now), _resource_version(now))

    return _watch_by_name(session, t, _resource_version(obj), deadline,
                          lambda ev: ev.get("type") in ("ADDED", "MODIFIED")
                          and met(ev.get("object") or {}), check)


def wait_deleted(session: Session, t: Target, uid: str, deadline: float,
                 once: bool = False) -> bool:
    """Until the object is gone (or replaced by one with another UID)."""

    def check() -> tuple[bool, str]:
        obj = _get_or_none(session, t)
        if obj is None:
            return True, ""
        return bool(uid and (obj.get("metadata") or {}).get("uid") != uid), _resource_version(obj)

    gone, rv = check()
    if gone or once:
        return gone
    return _watch_by_name(session, t, rv, deadline, lambda ev: ev.get("type") == "DELETED",
                          check)


def _get_or_none(session: Session, t: Target) -> Obj | None:
    """The object ``t`` names as it is now, None once it is gone (404)."""
    try:
        obj: Obj = session.client.request("GET", t.path)
    except StatusError as exc:
        if exc.not_found:
            return None
        raise
    return obj


def _resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _watch_by_name(session: Session, t: Target, rv: str, deadline: float,
                   done: Callable[[Obj], bool], check: Callable[[], tuple[bool, str]]) -> bool:
    """Watch one object by name from ``rv`` until ``done(event)`` or the deadline; when the
    stream ends or its resourceVersion is too old, read the object again and go on."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            for ev in session.client.watch_events(
                    t.mapping.rest, t.namespace, resource_version=rv,
                    timeout_seconds=max(1, int(left + 0.999)),
                    params={"fieldSelector": f"metadata.name={t.name}"}):
                obj = ev.get("object") or {}
                rv = _resource_version(obj) or rv
                if done(ev):
                    return True
                if time.monotonic() >= deadline:
                    return False
        except StatusError as exc:
            if not exc.gone:
                raise
        except ClientError:
            time.sleep(0.2)
        if time.monotonic() >= deadline:
            return False
        finished, rv = check()
        if finished:
            return True
