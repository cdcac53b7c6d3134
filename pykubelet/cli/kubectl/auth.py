"""``pykubectl auth``: ``can-i`` and ``whoami`` as kubectl's (pkg/cmd/auth): can-i asks the
server a SelfSubjectAccessReview for ``VERB TYPE[/NAME]`` or ``VERB /PATH`` (in the
namespace, or every one with ``-A``) and prints ``yes`` (exit 0) or ``no`` with the
server's reason (exit 1); whoami posts a SelfSubjectReview and prints who the server says
the caller is (a table, or the object with ``-o json|yaml``). With the global ``--as`` and
``--as-group`` the question is asked as that user, through impersonation."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.printers import go_string, to_json, to_yaml
from pykubelet.cli.kubectl.session import Session
from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.client.rest import Resource

Obj = dict[str, Any]
SSAR = Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", namespaced=False)
SSR = Resource("authentication.k8s.io", "v1", "selfsubjectreviews", namespaced=False)
SSRR = Resource("authorization.k8s.io", "v1", "selfsubjectrulesreviews", namespaced=False)


def register(name: str, p: argparse.ArgumentParser) -> None:
    p.description = "Inspect authorization: auth can-i VERB [TYPE[/NAME] | /PATH], auth whoami"
    p.add_argument("words", nargs="*", metavar="can-i VERB TYPE[/NAME] | whoami")
    p.add_argument("-A", "--all-namespaces", action="store_true",
                   help="(can-i) in every namespace")
    p.add_argument("-q", "--quiet", action="store_true", help="(can-i) the exit code only")
    p.add_argument("--list", action="store_true",
                   help="(can-i) every action allowed in the namespace")
    p.add_argument("--no-headers", action="store_true", help="(can-i --list) no header")
    p.add_argument("--subresource", default="", help="(can-i) the subresource")
    p.add_argument("-o", "--output", default="", help="(whoami) json|yaml")


def run(name: str, args: argparse.Namespace, session: Session) -> int:
    words: list[str] = args.words
    if not words:
        raise CommandError("error: a subcommand is needed: can-i or whoami "
                           "(see 'pykubectl auth --help')")
    if words[0] == "can-i":
        return can_i(args, words[1:], session)
    if words[0] == "whoami":
        return whoami(args, session)
    raise CommandError(f'error: unknown command "{words[0]}" for "pykubectl auth"')


def can_i(args: argparse.Namespace, words: list[str], session: Session) -> int:
    if args.list:
        return can_i_list(args, session)
    if len(words) < 2:
        raise CommandError("error: you must specify two arguments: verb resource or "
                           "verb resource/resourceName.")
    if len(words) > 2:
        raise CommandError(f"error: you must specify two arguments: verb resource or verb "
                           f"resource/resourceName.\nGot: {words}")
    verb, target = words
    spec: Obj
    if target.startswith("/"):
        spec = {"nonResourceAttributes": {"path": target, "verb": verb}}
    else:
        kind, _, obj_name = target.partition("/")
        attrs: Obj = {"verb": verb}
        group, resource = _resource_for(kind, session)
        if not args.all_namespaces:
            attrs["namespace"] = session.namespace
        for key, value in (("group", group), ("resource", resource),
                           ("subresource", args.subresource), ("name", obj_name)):
            if value:
                attrs[key] = value
        spec = {"resourceAttributes": attrs}
    review = session.client.create(SSAR, {"apiVersion": "authorization.k8s.io/v1",
                                          "kind": "SelfSubjectAccessReview",
                                          "metadata": {"creationTimestamp": None},
                                          "spec": spec, "status": {"allowed": False}})
    status = review.get("status") or {}
    allowed = bool(status.get("allowed"))
    if not args.quiet:
        line = "yes" if allowed else "no"
        if not allowed:
            for extra in (status.get("reason"), status.get("evaluationError")):
                if extra:
                    line += f" - {extra}"
        print(line)
    return 0 if allowed else 1


def can_i_list(args: argparse.Namespace, session: Session) -> int:
    """RunAccessList: the SelfSubjectRulesReview's rules broken down, compacted, sorted and
    printed as kubectl's table."""
    review = session.client.create(SSRR, {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
        "metadata": {"creationTimestamp": None}, "spec": {"namespace": session.namespace},
        "status": {"resourceRules": None, "nonResourceRules": None, "incomplete": False}})
    status = review.get("status") or {}
    if status.get("incomplete"):
        print(f"Warning: the list may be incomplete: {status.get('evaluationError', '')}",
              file=sys.stderr)
    rules = [{"verbs": r.get("verbs") or [], "apiGroups": r.get("apiGroups") or [],
              "resources": r.get("resources") or [],
              "resourceNames": r.get("resourceNames") or [], "nonResourceURLs": []}
             for r in status.get("resourceRules") or []]
    rules += [{"verbs": r.get("verbs") or [], "apiGroups": [], "resources": [],
               "resourceNames": [], "nonResourceURLs": r.get("nonResourceURLs") or []}
              for r in status.get("nonResourceRules") or []]
    rows = sorted(_compact([sub for r in rules for sub in _breakdown(r)]), key=_rule_string)
    w = TabWriter(sys.stdout)
    if not args.no_headers:
        w.write("Resources\tNon-Resource URLs\tResource Names\tVerbs\n")
    for r in rows:
        w.write(f"{_resource_group(r)}\t{go_string(r['nonResourceURLs'])}\t"
                f"{go_string(r['resourceNames'])}\t{go_string(r['verbs'])}\n")
    w.flush()
    return 0


def _rule(verbs: list[str], groups: Sequence[str] = (), resources: Sequence[str] = (),
          names: Sequence[str] = (), urls: Sequence[str] = ()) -> Obj:
    """rbacv1helpers.NewRule(...).RuleOrDie(): every list sorted."""
    return {"verbs": sorted(verbs), "apiGroups": sorted(groups),
            "resources": sorted(resources), "resourceNames": sorted(names),
            "nonResourceURLs": sorted(urls)}


def _breakdown(rule: Obj) -> list[Obj]:
    """rbacutil.BreakdownRule: one rule per group, resource and name; one per URL and
    verb."""
    out = []
    for g in rule["apiGroups"]:
        for res in rule["resources"]:
            if rule["resourceNames"]:
                out += [_rule(rule["verbs"], [g], [res], [n]) for n in rule["resourceNames"]]
            else:
                out.append(_rule(rule["verbs"], [g], [res]))
    out += [_rule([v], urls=[u]) for u in rule["nonResourceURLs"] for v in rule["verbs"]]
    return out


def _compact(rules: list[Obj]) -> list[Obj]:
    """rbacutil.CompactRules: rules of one group, one resource and at most one name
    merge their verbs (a sorted set)."""
    compacted: list[Obj] = []
    simple: dict[tuple[str, str, str | None], Obj] = {}
    for r in rules:
        if (len(r["resourceNames"]) > 1 or r["nonResourceURLs"] or len(r["apiGroups"]) != 1
                or len(r["resources"]) != 1):
            compacted.append(r)
            continue
        key = (r["apiGroups"][0], r["resources"][0],
               r["resourceNames"][0] if r["resourceNames"] else None)
        if key in simple:
            simple[key]["verbs"] = sorted({*simple[key]["verbs"], *r["verbs"]})
        else:
            simple[key] = {**r, "verbs": list(r["verbs"])}
    return compacted + list(simple.values())


def _rule_string(r: Obj) -> str:
    """PolicyRule.String(), which kubectl sorts the rows by."""
    return ("&PolicyRule{" + f"Verbs:{go_string(r['verbs'])},"
            f"APIGroups:{go_string(r['apiGroups'])},Resources:{go_string(r['resources'])},"
            f"ResourceNames:{go_string(r['resourceNames'])},"
            f"NonResourceURLs:{go_string(r['nonResourceURLs'])},}}")


def _resource_group(r: Obj) -> str:
    """describe.CombineResourceGroup."""
    if not r["resources"]:
        return ""
    head, sep, sub = str(r["resources"][0]).partition("/")
    if r["apiGroups"] and r["apiGroups"][0]:
        head += "." + str(r["apiGroups"][0])
    return head + (f"/{sub}" if sep else "")


def _resource_for(word: str, session: Session) -> tuple[str, str]:
    """(group, resource) of a type word, as kubectl's resourceFor: ``*`` as is; a word the
    server does not know is warned about and taken as ``resource[.group]``."""
    if word == "*":
        return "", "*"
    try:
        m = session.discovery.resolve_one(word)
    except CommandError:
        # kubectl's warning printer ends the line its message already ended
        print(f"Warning: the server doesn't have a resource type '{word}'\n", file=sys.stderr)
        resource, _, group = word.partition(".")
        return group, resource
    return m.group, m.resource


def _typed_review(review: Obj) -> Obj:
    """A SelfSubjectReview in authenticationv1's field order."""
    info = (review.get("status") or {}).get("userInfo") or {}
    typed_info = {k: info[k] for k in ("username", "uid", "groups", "extra") if k in info}
    return {"kind": review.get("kind", "SelfSubjectReview"),
            "apiVersion": review.get("apiVersion", SSR.group + "/" + SSR.version),
            "metadata": review.get("metadata") or {"creationTimestamp": None},
            "status": {"userInfo": typed_info}}


def whoami(args: argparse.Namespace, session: Session) -> int:
    review = session.client.create(SSR, {"apiVersion": "authentication.k8s.io/v1",
                                         "kind": "SelfSubjectReview",
                                         "metadata": {"creationTimestamp": None},
                                         "status": {"userInfo": {}}})
    if args.output == "json":  # kubectl prints its typed object: the struct's field order
        sys.stdout.write(to_json(_typed_review(review), sort_keys=False))
        return 0
    if args.output == "yaml":
        sys.stdout.write(to_yaml(review))
        return 0
    if args.output:
        raise CommandError(f"error: unable to match a printer suitable for the output format "
                           f'"{args.output}", allowed formats are: json,yaml')
    info = (review.get("status") or {}).get("userInfo") or {}
    w = TabWriter(sys.stdout)
    w.write("ATTRIBUTE\tVALUE\n")
    if info.get("username"):
        w.write(f"Username\t{info['username']}\n")
    if info.get("uid"):
        w.write(f"UID\t{info['uid']}\n")
    if info.get("groups"):
        w.write(f"Groups\t{go_string(info['groups'])}\n")
    for key, values in sorted((info.get("extra") or {}).items()):
        w.write(f"Extra: {key}\t{go_string(values)}\n")
    w.flush()
    return 0
